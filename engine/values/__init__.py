"""A tensor's values read a chunk at a time, on several threads: what statistics, diffs and exports share.

``chunked`` hands out values from a file (positioned reads, checked against a file changed on disk), from
memory, or dequantized from a quantized tensor's stored words; ``parallel`` splits the work over threads.
"""
