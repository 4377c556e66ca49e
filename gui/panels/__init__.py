"""One panel per file: what the window shows about the selection, its values, and the file."""
