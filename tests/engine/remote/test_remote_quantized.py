"""A quantized Burnpack tensor read from a URL: its stored bytes have no file to read a part of, so they are
streamed once and dequantized a chunk at a time, to the same values and statistics as the local file's."""

from __future__ import annotations


import numpy as np

from engine import export, open_store
from engine.stats import stats_for

from tests.helpers.formats_quantized_files import bpk, gen2

SHAPE = [6, 32]


def _quantized_file() -> bytes:
    """Q4S values 8 a u32 word, blocks of 16 with their F32 scales (one zero, read as 0.1)."""
    words = np.arange(SHAPE[0] * SHAPE[1] // 8, dtype="<u4") * np.uint32(0x01234567)
    scales = np.array([0.5, 0.0, 2.0, 0.25] * 3, "<f4")
    return bpk({"w": ({"QFloat": gen2("Q4S", blocks=(16,))}, SHAPE, words.tobytes() + scales.tobytes())})


def test_a_remote_quantized_tensor_reads_and_summarizes_as_the_local_one(site, tmp_path):
    raw = _quantized_file()
    local = tmp_path / "q.bpk"
    local.write_bytes(raw)
    site.site.files["/q.bpk"] = raw
    with open_store(local) as here, open_store(site.url("/q.bpk")) as there:
        assert there.remote and not here.remote
        expected = here.read("w")
        assert there.read("w").tobytes() == expected.tobytes() and np.count_nonzero(expected) > 100
        assert stats_for(there.entry("w"), chunk_elements=7) == stats_for(here.entry("w"), chunk_elements=7)
        out = export(there.entries, tmp_path / "plain.safetensors", dequantize=True)
    with open_store(out) as written:
        assert written.read("w").tobytes() == expected.tobytes()
