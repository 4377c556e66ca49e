"""The local byte source (engine/formats/mapped.py, ``MappedFile`` in engine/sources/local.py) in the test process:
the changed-file checks, truncation messages, streaming in chunks, closing, and the range checks of every header.
(tests/hardening checks the same promises in child processes.) Without these a user could read the wrong bytes
of a file that changed while open, or keep a file open after closing its store.

Promise -> test:
- "a file that changes while open is caught" -> test_every_read_after_an_in_place_change_says_changed_on_disk,
  test_a_file_grown_or_shrunk_while_open_says_changed_on_disk
- a file replaced by rename keeps reading its own bytes -> test_a_file_replaced_by_rename_keeps_its_own_bytes
- bad input is one line naming the file -> test_a_folder_or_a_missing_file_is_one_line_naming_it,
  test_ranges_past_the_end_overlapping_or_leaving_gaps_are_refused_by_name
- export streams a tensor in chunks -> test_streaming_a_tensor_yields_its_bytes_in_chunks_of_the_size_asked
- many tensors are checked in bulk, with the same verdicts -> test_two_thousand_tensors_get_the_verdicts_of_two
- a file shrunk while open is "changed on disk", naming the file, when streamed (an export) as when read
  -> test_streaming_a_file_shrunk_while_open_says_changed_on_disk_naming_it
- a positioned read past the end, given no description, says "data needs bytes a..b"
  -> test_a_read_past_the_end_without_a_description_says_data
- closing a source twice is harmless, also after a value was memory-mapped
  -> test_closing_a_source_twice_after_a_mapped_read_is_harmless
- closing a store releases its file even when the file got descriptor 0 (a process started with stdin closed)
  -> test_closing_a_store_whose_file_got_descriptor_0_releases_it
- a folder is one line naming it also where opening it fails with EISDIR (a system or a FUSE file system that
  refuses a folder at open, where Linux's own file systems open it and the fstat check refuses it)
  -> test_a_folder_the_system_refuses_to_open_is_one_line_naming_it
- the path a caller gives (a ``Path`` subclass included) is the one the store names as its file
  -> test_a_store_names_its_file_by_the_callers_own_path_object
"""

from __future__ import annotations

import errno
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from engine import FormatError, open_store
from engine.sources import local as mapped
from engine.sources.local import MappedFile
from tests.helpers.formats_descriptors import open_descriptors_naming, stdin_closed

VALUES = np.arange(12, dtype="<f4") * 1.5


def safetensors_file(path, header: dict, data: bytes):
    raw = json.dumps(header).encode()
    raw += b" " * (-(len(raw) + 8) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def two_tensors(tmp_path):
    header = {"a": {"dtype": "F32", "shape": [3, 2], "data_offsets": [0, 24]},
              "b": {"dtype": "F32", "shape": [6], "data_offsets": [24, 48]}}
    return safetensors_file(tmp_path / "m.safetensors", header, VALUES.tobytes())


def test_values_are_read_from_the_file_as_opened(tmp_path):
    with open_store(two_tensors(tmp_path)) as store:
        a, b = store.read("a"), store.read("b")
        assert a.shape == (3, 2) and a.tobytes() == VALUES[:6].tobytes()
        assert b.tobytes() == VALUES[6:].tobytes()
        assert not a.flags.writeable
        fd, offset, nbytes = store.byte_range("b")
        assert os.pread(fd, nbytes, offset) == VALUES[6:].tobytes()


def test_streaming_a_tensor_yields_its_bytes_in_chunks_of_the_size_asked(tmp_path):
    with open_store(two_tensors(tmp_path)) as store:
        chunks = [bytes(c) for c in store.iter_bytes("b", chunk_size=10)]
    assert [len(c) for c in chunks] == [10, 10, 4]
    assert b"".join(chunks) == VALUES[6:].tobytes()


def rewrite_in_place(path, content: bytes) -> None:
    """Write the same number of bytes over the file, with a later modification time (a training job saving)."""
    before = os.stat(path).st_mtime_ns
    with open(path, "r+b") as out:
        out.write(content)
    os.utime(path, ns=(before + 10**9, before + 10**9))


CHANGED = "m.safetensors: changed on disk since it was opened; reload it to read the new contents"


@pytest.mark.parametrize("read", ["read", "iter_bytes", "byte_range", "verify"])
def test_every_read_after_an_in_place_change_says_changed_on_disk(tmp_path, read):
    path = two_tensors(tmp_path)
    with open_store(path) as store:
        store.read("a")
        rewrite_in_place(path, path.read_bytes()[:-4] + b"\xff" * 4)
        with pytest.raises(FormatError) as info:
            result = getattr(store, read)("b")
            list(result) if read == "iter_bytes" else None
        assert str(info.value) == CHANGED


@pytest.mark.parametrize("change", ["grow", "shrink"])
def test_a_file_grown_or_shrunk_while_open_says_changed_on_disk(tmp_path, change):
    path = two_tensors(tmp_path)
    with open_store(path) as store:
        with open(path, "r+b") as out:
            if change == "grow":
                out.seek(0, os.SEEK_END)
                out.write(bytes(8))
            else:
                out.truncate(os.path.getsize(path) - 8)
        with pytest.raises(FormatError) as info:
            store.read("b")
        assert str(info.value) == CHANGED


def test_a_file_replaced_by_rename_keeps_its_own_bytes(tmp_path):
    path = two_tensors(tmp_path)
    with open_store(path) as store:
        replacement = tmp_path / "new.safetensors"
        header = {"a": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]},
                  "b": {"dtype": "F32", "shape": [6], "data_offsets": [24, 48]}}
        safetensors_file(replacement, header, (VALUES * -1).tobytes())
        os.replace(replacement, path)
        assert store.read("b").tobytes() == VALUES[6:].tobytes()
        store.verify("b")  # the open file is unchanged: no error


def test_a_folder_or_a_missing_file_is_one_line_naming_it(tmp_path):
    with pytest.raises(FormatError) as folder:
        open_store(tmp_path)
    assert str(folder.value) == f"{tmp_path.name}: is a folder, not a model file"
    with pytest.raises(FormatError) as missing:
        open_store(tmp_path / "gone.safetensors")
    assert str(missing.value) == f"gone.safetensors: cannot open it in {tmp_path}: No such file or directory"


def test_positioned_reads_past_the_end_say_which_bytes_were_wanted(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(10)))
    source = MappedFile(path)
    try:
        assert source.size == 10 and source.name == "f.bin" and source.fileno() >= 0
        assert source.pread(2, 3) == bytes([2, 3, 4]) and source.pread(0, 10) == bytes(range(10))
        assert source.pread(10, 0) == b""
        for offset, length in [(8, 3), (-1, 2), (0, 11), (3, -1)]:
            with pytest.raises(FormatError) as info:
                source.pread(offset, length, "the header")
            assert str(info.value) == (f"f.bin: file is truncated: the header needs bytes {offset}..{offset + length} "
                                       "but the file has 10")
        assert source.array(4, np.dtype("<u2"), (3,)).tolist() == [0x0504, 0x0706, 0x0908]
        assert source.array(4, np.dtype("<u2"), (2, 0)).shape == (2, 0)
        with pytest.raises(FormatError) as info:
            source.array(6, np.dtype("<u4"), (2,))
        assert str(info.value) == "f.bin: file is truncated: a tensor needs bytes 6..14 but the file has 10"
        assert [bytes(c) for c in source.chunks(1, 7, 3)] == [bytes([1, 2, 3]), bytes([4, 5, 6]), bytes([7])]
    finally:
        source.close()
    assert source.fileno() is None


T = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("header, size, words", [
    ({"a": T, "b": {**T, "data_offsets": [8, 4]}}, 8, "tensor 'b' has -4 bytes but F32 x [2] needs 8"),
    ({"a": {**T, "data_offsets": [0, 8]}}, 4, "file is truncated or its header is wrong: tensor 'a' ends at byte 8, past the end of the data (4 bytes)"),
    ({"a": T, "b": {**T, "data_offsets": [12, 20]}}, 20,
     "tensor 'b' leaves a gap before the previous tensor (starts at 12, expected 8)"),
    ({"a": T, "b": {**T, "data_offsets": [4, 12]}}, 12,
     "tensor 'b' overlaps the previous tensor (starts at 4, expected 8)"),
    ({"a": T}, 12, "the data buffer has 4 bytes that no tensor uses"),
    ({}, 4, "the data buffer has 4 bytes that no tensor uses"),
    ({"a": {**T, "shape": [-2]}}, 8, "tensor 'a' has an invalid shape [-2]"),
    ({"a": {**T, "shape": [2.0]}}, 8, "tensor 'a' has an invalid shape [2.0]"),
    ({"a": {**T, "data_offsets": [-8, 0]}}, 8, "tensor 'a' has invalid data_offsets [-8, 0]"),
    ({"a": {**T, "shape": [3]}}, 8, "tensor 'a' has 8 bytes but F32 x [3] needs 12"),
    ({"a": {**T, "shape": [1] * 65, "data_offsets": [0, 4]}}, 4,
     "tensor 'a' has a shape no array can hold (65 dimensions; the limits are 64 dimensions, each under 2**64, "
     "and 2**59 elements)"),
    ({"a": {**T, "shape": [2**64], "data_offsets": [0, 0]}}, 0,
     "tensor 'a' has a shape no array can hold (1 dimensions; the limits are 64 dimensions, each under 2**64, "
     "and 2**59 elements)"),
    ({"a": {**T, "shape": [2**60, 0], "data_offsets": [0, 0]}}, 0,
     "tensor 'a' has a shape no array can hold (2 dimensions; the limits are 64 dimensions, each under 2**64, "
     "and 2**59 elements)"),
])
def test_ranges_past_the_end_overlapping_or_leaving_gaps_are_refused_by_name(tmp_path, header, size, words):
    path = safetensors_file(tmp_path / "m.safetensors", header, bytes(size))
    with pytest.raises(FormatError) as info:
        open_store(path).close()
    assert str(info.value) == f"m.safetensors: {words}"


def test_shapes_at_the_limits_still_open(tmp_path):
    header = {"deep": {"dtype": "F32", "shape": [1] * 64, "data_offsets": [0, 4]},
              "wide": {"dtype": "F32", "shape": [2**59, 0], "data_offsets": [4, 4]}}
    path = safetensors_file(tmp_path / "m.safetensors", header, VALUES[:1].tobytes())
    with open_store(path) as store:
        assert store.read("deep").shape == (1,) * 64 and store.read("deep").item() == VALUES[0]
        assert store.entry("wide").shape == (2**59, 0) and store.entry("wide").nbytes == 0


def many(count: int, *, bad: str | None = None) -> tuple[dict, int]:
    """``count`` two-float tensors in order; ``bad`` spoils one range the way its name says."""
    header = {f"t{i:05d}": {"dtype": "F32", "shape": [2], "data_offsets": [8 * i, 8 * i + 8]} for i in range(count)}
    last = f"t{count - 1:05d}"
    if bad == "gap":
        header[last]["data_offsets"] = [8 * count, 8 * count + 8]
        return header, 8 * count + 8
    if bad == "overlap":
        header[last]["data_offsets"] = [8 * count - 12, 8 * count - 4]
        return header, 8 * count - 4
    if bad == "past":
        return header, 8 * count - 4
    if bad == "leftover":
        return header, 8 * count + 4
    return header, 8 * count


@pytest.mark.parametrize("bad, words", [
    (None, None),
    ("gap", "tensor 't{last}' leaves a gap before the previous tensor (starts at {gap}, expected {end})"),
    ("overlap", "tensor 't{last}' overlaps the previous tensor (starts at {overlap}, expected {end})"),
    ("past", "file is truncated or its header is wrong: tensor 't{last}' ends at byte {end}, past the end of the data ({short} bytes)"),
    ("leftover", "the data buffer has 4 bytes that no tensor uses"),
])
@pytest.mark.parametrize("count", [2, 2048])
def test_two_thousand_tensors_get_the_verdicts_of_two(tmp_path, bad, words, count):
    """From 2,048 tensors on the ranges are checked in bulk (numpy); the verdict and message are the same."""
    header, size = many(count, bad=bad)
    path = safetensors_file(tmp_path / "m.safetensors", header, bytes(size))
    if words is None:
        with open_store(path) as store:
            assert len(store) == count and store.names[-1] == f"t{count - 1:05d}"
        return
    with pytest.raises(FormatError) as info:
        open_store(path).close()
    end = 8 * count - 8 if bad in ("gap", "overlap") else 8 * count
    expected = words.format(last=f"{count - 1:05d}", gap=8 * count, overlap=8 * count - 12, end=end, short=8 * count - 4)
    assert str(info.value) == f"m.safetensors: {expected}"


def test_a_sharded_store_streams_and_checks_each_tensor_in_its_own_shard(tmp_path):
    """Each tensor of a sharded checkpoint is read, streamed and checked in the shard that holds it."""
    f32 = {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]}
    safetensors_file(tmp_path / "one.safetensors", {"a": f32}, VALUES[:6].tobytes())
    two = safetensors_file(tmp_path / "two.safetensors", {"b": f32}, VALUES[6:].tobytes())
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "one.safetensors", "b": "two.safetensors"}}))
    with open_store(index) as store:
        assert b"".join(bytes(c) for c in store.iter_bytes("b", chunk_size=8)) == VALUES[6:].tobytes()
        assert b"".join(bytes(c) for c in store.iter_bytes("a")) == VALUES[:6].tobytes()
        fd, offset, nbytes = store.byte_range("b")
        assert os.pread(fd, nbytes, offset) == VALUES[6:].tobytes()
        rewrite_in_place(two, two.read_bytes())
        store.verify("a")  # its shard did not change
        with pytest.raises(FormatError) as info:
            store.verify("b")
        assert str(info.value) == "two.safetensors: changed on disk since it was opened; reload it to read the new contents"


def test_values_past_the_mapping_size_are_mapped_with_the_same_bytes_and_checks(tmp_path, monkeypatch):
    """Tensors over MAP_ABOVE (1 GiB) are memory-mapped, not copied: lowered to 16 bytes here so a small file
    takes that path; the values, their alignment and the changed-file check are the same as a copy's."""
    from engine.sources import local as mapped
    monkeypatch.setattr(mapped, "MAP_ABOVE", 16)
    header = {"aligned": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]},
              "odd": {"dtype": "U8", "shape": [3], "data_offsets": [24, 27]},
              "small": {"dtype": "F32", "shape": [2], "data_offsets": [27, 35]},
              "big": {"dtype": "F32", "shape": [2, 5], "data_offsets": [35, 75]},
              "last": {"dtype": "F32", "shape": [1], "data_offsets": [75, 79]}}
    data = VALUES[:6].tobytes() + b"\x01\x02\x03" + VALUES[:2].tobytes() + VALUES[2:12].tobytes() + VALUES[:1].tobytes()
    path = safetensors_file(tmp_path / "m.safetensors", header, data)
    with open_store(path) as store:
        aligned = store.read("aligned")  # a view of the map: read-only, like every array a store gives
        assert aligned.tobytes() == VALUES[:6].tobytes() and not aligned.flags.writeable
        big = store.read("big")  # at an offset no float is aligned to: copied out of the map
        assert big.shape == (2, 5) and big.tobytes() == VALUES[2:12].tobytes()
        assert store.read("last").tobytes() == VALUES[:1].tobytes()
        assert store.read("small").tobytes() == VALUES[:2].tobytes() and store.read("odd").tolist() == [1, 2, 3]
        store.release("big")
        assert store.read("big").tobytes() == VALUES[2:12].tobytes()
        rewrite_in_place(path, path.read_bytes())
        with pytest.raises(FormatError) as info:
            store.read("big")
        assert str(info.value) == CHANGED


def test_a_tensor_at_the_files_first_byte_is_read(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(VALUES[:2].tobytes())
    source = MappedFile(path)
    try:
        assert source.array(0, np.dtype("<f4"), (2,)).tobytes() == VALUES[:2].tobytes()
    finally:
        source.close()


def test_streaming_a_file_shrunk_while_open_says_changed_on_disk_naming_it(tmp_path: Path) -> None:
    path = two_tensors(tmp_path)
    with open_store(path) as store:
        os.truncate(path, os.path.getsize(path) - 8)  # the last tensor's final bytes are gone
        with pytest.raises(FormatError) as info:
            list(store.iter_bytes("b"))
    assert str(info.value) == CHANGED


def test_a_read_past_the_end_without_a_description_says_data(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(10))
    source = MappedFile(path)
    try:
        with pytest.raises(FormatError) as info:
            source.pread(8, 3)
    finally:
        source.close()
    assert str(info.value) == "f.bin: file is truncated: data needs bytes 8..11 but the file has 10"


def test_closing_a_source_twice_after_a_mapped_read_is_harmless(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """MAP_ABOVE (1 GiB) lowered to 16 bytes so that a small value is memory-mapped, as a huge one is."""
    monkeypatch.setattr(mapped, "MAP_ABOVE", 16)
    path = tmp_path / "f.bin"
    path.write_bytes(VALUES.tobytes())
    source = MappedFile(path)
    assert source.array(0, np.dtype("<f4"), (12,)).tobytes() == VALUES.tobytes()
    source.close()
    source.close()
    assert source.fileno() is None


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to list open descriptors")
def test_closing_a_store_whose_file_got_descriptor_0_releases_it(tmp_path: Path) -> None:
    path = two_tensors(tmp_path)
    with stdin_closed():
        store = open_store(path)
        assert open_descriptors_naming(path) == [0]
        store.close()
        assert open_descriptors_naming(path) == []


def test_a_folder_the_system_refuses_to_open_is_one_line_naming_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "model.safetensors"
    folder.mkdir()
    real_open = os.open

    def refusing_folders(name, flags, *args, **kwargs):  # the answer of a system that refuses a folder at open
        if os.path.isdir(name):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(name))
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_folders)
    with pytest.raises(FormatError) as info:
        open_store(folder)
    assert str(info.value) == "model.safetensors: is a folder, not a model file"


class TaggedPath(type(Path())):  # a caller's own path class (a GUI's, carrying what it shows)
    """A path that carries a label."""

    label = ""


def test_a_store_names_its_file_by_the_callers_own_path_object(tmp_path: Path) -> None:
    given = TaggedPath(two_tensors(tmp_path))
    given.label = "my model"
    with open_store(given) as store:
        assert store.files == [given]
        assert [(type(f), f.label) for f in store.files] == [(TaggedPath, "my model")]
