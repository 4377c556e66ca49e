"""Gzipped Burn records (engine/formats/burn_record/gz.py): inflated once, a chunk at a time, to a temporary file
that goes with the store; a gzip bomb stopped at the exact limit; each refusal in its own words, leaving nothing.

The limits are lowered (monkeypatch) so small real files sit exactly on them; the chunk size too, so a small
file takes the streaming loop's every turn.

Promises (README "Limits": "`.gz` records are decompressed once to a temporary file, refused past 1000x their
size or 64 GiB"):
- refused past the ratio or the absolute size, and not a byte before ->
  here::test_the_allowance_for_small_files_is_exact, here::test_the_ratio_to_the_compressed_size_is_exact,
  here::test_the_absolute_size_is_exact
- a gzip bomb is stopped while it inflates (README "Limits") -> here::test_a_gzip_bomb_is_stopped_holding_a_chunk_not_the_whole
- the temporary copy goes with the store, and with every refusal -> here::test_the_copy_goes_when_the_store_closes,
  here::test_a_stream_cut_short_or_corrupt_is_refused_in_words_leaving_nothing
- a copy that cannot be written (a full disk, a file-size limit) is refused in the system's words, leaving nothing ->
  here::test_a_copy_that_cannot_be_written_is_refused_in_words_leaving_nothing
"""

from __future__ import annotations

import gzip
import resource
import tempfile
import tracemalloc
import zlib

import numpy as np
import pytest

from engine import open_store
from engine.formats.burn_record import gz
from tests.helpers.formats_burn_record_writers import Data, Settings, record_bytes
from tests.refusals import refusal

ZEROS = record_bytes({"w": Data(np.zeros(5000, "<f4"))}, Settings(recorder="NamedMpk"))  # 20,223 bytes


NOISE = record_bytes({"w": Data(np.random.default_rng(0).standard_normal(20000).astype("<f4"))},
                     Settings(recorder="NamedMpk"))


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The temporary folder the copies go to, to see that none is left."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def gzipped(tmp_path, inner: bytes) -> tuple[object, int]:
    path = tmp_path / "z.mpk.gz"
    path.write_bytes(gzip.compress(inner, 9))
    return path, path.stat().st_size


def opens(path) -> list[float]:
    with open_store(path) as store:
        return store.read("w")[:3].tolist()


def test_the_allowance_for_small_files_is_exact(tmp_path, scratch, monkeypatch):
    path, _ = gzipped(tmp_path, ZEROS)
    monkeypatch.setattr(gz, "MAX_RATIO", 1)
    monkeypatch.setattr(gz, "MIN_ALLOWANCE", len(ZEROS))
    assert opens(path) == [0.0, 0.0, 0.0]
    monkeypatch.setattr(gz, "MIN_ALLOWANCE", len(ZEROS) - 1)
    assert refusal(path) == ("z.mpk.gz: decompresses to more than 19.7 KiB (over 1x its size or 64 GiB): refused as "
                             "a possible gzip bomb")
    assert list(scratch.iterdir()) == []


def test_the_ratio_to_the_compressed_size_is_exact(tmp_path, scratch, monkeypatch):
    path, size = gzipped(tmp_path, ZEROS)
    monkeypatch.setattr(gz, "MIN_ALLOWANCE", 1)
    monkeypatch.setattr(gz, "MAX_RATIO", -(-len(ZEROS) // size))  # the ratio rounded up: the limit just covers it
    assert opens(path) == [0.0, 0.0, 0.0]
    monkeypatch.setattr(gz, "MAX_RATIO", len(ZEROS) // size)
    assert refusal(path) == (f"z.mpk.gz: decompresses to more than {gz.humanize.size(size * (len(ZEROS) // size))} "
                             f"(over {len(ZEROS) // size}x its size or 64 GiB): refused as a possible gzip bomb")
    assert list(scratch.iterdir()) == []


def test_the_absolute_size_is_exact(tmp_path, scratch, monkeypatch):
    path, _ = gzipped(tmp_path, ZEROS)
    monkeypatch.setattr(gz, "MIN_ALLOWANCE", 1 << 30)
    monkeypatch.setattr(gz, "MAX_SIZE", len(ZEROS))
    assert opens(path) == [0.0, 0.0, 0.0]
    monkeypatch.setattr(gz, "MAX_SIZE", len(ZEROS) - 1)
    assert refusal(path) == ("z.mpk.gz: decompresses to more than 19.7 KiB (over 1000x its size or 19.7 KiB): "
                             "refused as a possible gzip bomb")
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("chunk", [64, 1000, 1 << 20])
def test_small_chunks_inflate_the_same_bytes_and_trailing_bytes_are_left(tmp_path, scratch, monkeypatch, chunk):
    """Each compressed chunk may inflate past the chunk size (the unconsumed tail is fed again); bytes after the
    gzip stream's end are not the record's."""
    monkeypatch.setattr(gz, "CHUNK", chunk)
    path = tmp_path / "n.mpk.gz"
    path.write_bytes(gzip.compress(NOISE, 9) + b"trailing bytes")
    expected = np.random.default_rng(0).standard_normal(20000).astype("<f4")
    with open_store(path) as store:
        assert store.read("w").tobytes() == expected.tobytes()
        (copy,) = scratch.iterdir()
        assert copy.name.startswith("store-studio-record-") and copy.suffix == ".record"
        assert copy.read_bytes() == NOISE


def test_the_copy_goes_when_the_store_closes(tmp_path, scratch):
    path, _ = gzipped(tmp_path, ZEROS)
    store = open_store(path)
    assert [p.stat().st_size for p in scratch.iterdir()] == [len(ZEROS)]
    assert (store.kind, [f.name for f in store.files]) == ("NamedMpk (gzip)", ["z.mpk.gz"])
    store.close()
    assert list(scratch.iterdir()) == []


def test_a_stream_cut_short_or_corrupt_is_refused_in_words_leaving_nothing(tmp_path, scratch):
    whole = gzip.compress(ZEROS, 9)
    path = tmp_path / "z.mpk.gz"
    path.write_bytes(whole[:-10])  # the last deflate bytes and the trailer gone
    inflated = len(zlib.decompressobj(wbits=31).decompress(whole[:-10]))  # what zlib gives of a cut stream
    assert 0 < inflated < len(ZEROS)
    assert refusal(path) == f"z.mpk.gz: the gzip stream is truncated (ends after {inflated} decompressed bytes)"
    assert list(scratch.iterdir()) == []
    corrupt = bytearray(gzip.compress(NOISE, 9))
    corrupt[40000:40010] = bytes(10)  # past what the sniff inflates
    path.write_bytes(bytes(corrupt))
    assert refusal(path) == "z.mpk.gz: the gzip stream is corrupt: Error -3 while decompressing data: incorrect data check"
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize(("content", "words"), [
    (gzip.compress(b"hello, not a record " * 20, mtime=0), "a gzip file whose content is not a Burn record"),
    (b"\x1f\x8b" + bytes(50), "a gzip file whose content cannot be decompressed (corrupt)"),
], ids=["not a record", "corrupt"])  # mtime=0: xdist's workers must collect the same bytes in any second
def test_a_gzip_file_that_is_no_record_says_which(tmp_path, scratch, content, words):
    path = tmp_path / "z.mpk.gz"
    path.write_bytes(content)
    assert refusal(path) == f"z.mpk.gz: {words}"
    assert list(scratch.iterdir()) == []


def test_a_gzip_bomb_is_stopped_holding_a_chunk_not_the_whole(tmp_path, scratch):
    """64 MiB of zeros in 64 KB of gzip: refused while inflating, never holding more than a chunk of it
    (Python's own allocations, which hold every inflated byte string, traced)."""
    head = record_bytes({"w": Data(np.ones(1, "<f4"))}, Settings(recorder="NamedMpk"))
    path = tmp_path / "bomb.mpk.gz"
    path.write_bytes(gzip.compress(head + bytes(64 << 20), 9))
    tracemalloc.start()
    try:
        words = refusal(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert words.endswith("refused as a possible gzip bomb") and words.startswith("bomb.mpk.gz: decompresses to more than")
    assert peak < 8 << 20
    assert list(scratch.iterdir()) == []


def test_a_copy_that_cannot_be_written_is_refused_in_words_leaving_nothing(tmp_path, scratch):
    """RLIMIT_FSIZE makes this process's writes past 64 KiB fail with EFBIG (Python ignores SIGXFSZ), as a full
    disk would: the 80 KB copy cannot be written. The limit holds only while the record opens."""
    path, _ = gzipped(tmp_path, NOISE)
    assert len(NOISE) > 1 << 16
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, hard))
    try:
        words = refusal(path)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert words == "z.mpk.gz: cannot decompress: File too large"
    assert list(scratch.iterdir()) == []
