"""How a Burn record is recognised by its first bytes, and what the record reader itself is handed
(engine/formats/burn_record/__init__.py ``open``, mpk.py, gz.py and bincode.py ``sniff``, bincode ``_Codec``): each
kind at the edges of what its sniff takes, on real record files; what merely looks like one left to the other
readers; a local record read in place, even on descriptor 0. Without these a record would be taken for the wrong
kind (or another format for a record), or be copied whole when it could be mapped.

Promises (README "Migrating from Burn's recorders": records are recognised by content, not by name; "Limits";
bad input is one line naming the file) ->
- a msgpack record's root map may have 1 to 15 fields (fixmap) or more (map 16); what starts with no map is no
  record -> ``test_a_msgpack_roots_map_header_of_any_size_is_a_record``,
  ``test_a_msgpack_root_that_is_no_map_is_no_record``; ten bytes are enough to be taken for one ->
  ``test_a_one_field_msgpack_root_of_ten_bytes_is_a_record_cut_short``; "metadata" must be among the first 12 bytes
  (its key first, as Burn writes it) -> ``test_a_msgpack_root_whose_metadata_key_is_not_first_is_no_record``
- a gzip record's kind is told by the first 4096 bytes it inflates to ->
  ``test_a_gzip_records_kind_is_told_by_the_first_4096_bytes_it_inflates_to``
- a Bin record's first text is a Rust float type name and its third names a Bin recorder; anything else is no Bin
  record -> ``test_a_bin_records_float_type_name_may_use_every_type_name_character``,
  ``test_what_only_looks_like_a_bin_record_is_none``
- metadata texts up to 1 MiB are read, one character more is refused -> ``test_the_metadata_text_limit_is_exact``
- bincode 2's three-byte lengths (marker 251) are read -> ``test_a_parameter_of_more_than_250_bytes_is_read``
- a file that is no Burn record, handed to the reader itself, is refused naming it ->
  ``test_what_is_no_record_is_refused_in_words_naming_the_file``
- the kind is told by the first 4096 bytes, no more, of the file or of what they decompress to ->
  ``test_the_kind_is_told_by_the_first_4096_bytes``, ``test_a_gzip_files_kind_is_told_by_its_first_4096_bytes``
- a local Bin record is mapped where it is, never copied (only a remote one is downloaded whole) ->
  ``test_a_local_bin_record_is_read_in_place``
- a local Bin record is read in place even when its file got descriptor 0 (a process started with its standard
  input closed, as a service or `store-studio <&-` is): only a source with no descriptor at all (a remote one) is
  copied whole first, under the download limit (README, "Remote files")
  -> test_a_bin_record_on_descriptor_0_is_read_in_place_not_downloaded
"""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

import msgpack
import numpy as np
import pytest

from engine import FormatError, open_store
from engine.formats import burn_record
from tests.helpers.formats_burn_record_writers import (
    DTYPES_0_16,
    Bincode,
    Param,
    Settings,
    id_text,
    json_record_with_float_at,
    model_item,
    write_record,
)
from tests.helpers.formats_descriptors import stdin_closed
from tests.refusals import refusal

NOT_A_MODEL = "not a Burnpack, SafeTensors, GGUF, ONNX, PyTorch file or Burn record (its first bytes match none of them)"


TWO = np.array([1.5, -2.0], "<f4").tobytes()


def write(tmp_path: Path, raw: bytes, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(raw)
    return path


# --- msgpack ------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra", [0, 13, 14], ids=["fixmap 2", "fixmap 15", "map 16"])
def test_a_msgpack_roots_map_header_of_any_size_is_a_record(tmp_path: Path, extra: int) -> None:
    root = {"metadata": Settings().metadata(), "item": {"w": {"bytes": TWO, "shape": [2], "dtype": "F32"}},
            **{f"extra{i}": i for i in range(extra)}}
    raw = msgpack.packb(root, use_bin_type=True)
    assert raw[0] == (0xDE if len(root) >= 16 else 0x80 + len(root))
    with open_store(write(tmp_path, raw, "r.mpk")) as store:
        assert store.read("w").tolist() == [1.5, -2.0]


def test_a_one_field_msgpack_root_of_ten_bytes_is_a_record_cut_short(tmp_path: Path) -> None:
    """0x81, then the key "metadata" (0xa8 and 8 letters): the shortest head taken for a record."""
    assert refusal(write(tmp_path, b"\x81\xa8metadata", "r.mpk")) == \
        "r.mpk: file is truncated: metadata starts at byte 10, the end of the file"


@pytest.mark.parametrize("first", [b"\x90", b"\x80", b"\x92"], ids=["empty array", "empty map", "array"])
def test_a_msgpack_root_that_is_no_map_is_no_record(tmp_path: Path, first: bytes) -> None:
    """"metadata" among the first 12 bytes, but after no map of fields: left to the other readers."""
    raw = first + msgpack.packb("metadata") + msgpack.packb({"item": 1})
    assert refusal(write(tmp_path, raw, "r.mpk")) == f"r.mpk: {NOT_A_MODEL}"


def test_a_msgpack_root_whose_metadata_key_is_not_first_is_no_record(tmp_path: Path) -> None:
    """A field "x" before it puts the key "metadata" at bytes 4-12, one past the 12 the sniff looks at."""
    root = {"x": 1, "metadata": Settings().metadata(), "item": {"n": 1}}
    raw = msgpack.packb(root, use_bin_type=True)
    assert raw.index(b"\xa8metadata") == 4
    assert refusal(write(tmp_path, raw, "r.mpk")) == f"r.mpk: {NOT_A_MODEL}"


# --- gzip ---------------------------------------------------------------------------------------

def test_a_gzip_records_kind_is_told_by_the_first_4096_bytes_it_inflates_to(tmp_path: Path) -> None:
    """Compressed well, the first 4096 bytes of the file inflate to the whole record: only its first 4096 count."""
    path = write(tmp_path, gzip.compress(json_record_with_float_at(4096), 9, mtime=0), "r.json.gz")
    assert path.stat().st_size < 4096
    with open_store(path) as store:
        assert store.values == {"n": 1} and store.kind == "JSON (gzip)"
    path.write_bytes(gzip.compress(json_record_with_float_at(4097), 9, mtime=0))
    assert refusal(path) == "r.json.gz: a gzip file whose content is not a Burn record"


# --- bincode ------------------------------------------------------------------------------------

def bin_record(float_type: str = "f32", recorder: str = "burn::BinFileRecorder", settings: str = "Full",
               values: bytes = TWO) -> bytes:
    b = Bincode(Settings(recorder="Bin"))
    head = b.text(float_type) + b.text("i32") + b.text(recorder) + b.text("0.21.0") + b.text(settings)
    shape = [len(values) // 4]
    return (head + b.text(id_text(3)) + b.uint(len(values)) + values + b.uint(1) + b.uint(shape[0])
            + b.uint(DTYPES_0_16.index("F32"), 4))


def test_a_bin_records_float_type_name_may_use_every_type_name_character(tmp_path: Path) -> None:
    name = "abcdefghijklmnopqrstuvwxyz0123456789_:"
    with open_store(write(tmp_path, bin_record(name), "m.bin")) as store:
        assert store.metadata["burn.float"] == name and store.read("param.0").tolist() == [1.5, -2.0]


@pytest.mark.parametrize(("float_type", "recorder"), [
    ("i32", "burn::BinFileRecorder"),
    ("f32-le", "burn::BinFileRecorder"),
    ("f32", "burn::NamedMpkFileRecorder"),
    ("f32", "burn::BinFile"),
], ids=["no f", "not a type name", "another recorder", "no Recorder"])
def test_what_only_looks_like_a_bin_record_is_none(tmp_path: Path, float_type: str, recorder: str) -> None:
    assert refusal(write(tmp_path, bin_record(float_type, recorder), "m.bin")) == f"m.bin: {NOT_A_MODEL}"


def test_the_metadata_text_limit_is_exact(tmp_path: Path) -> None:
    limit = 1 << 20
    with open_store(write(tmp_path, bin_record(settings="s" * limit), "m.bin")) as store:
        assert store.metadata["burn.settings"] == "s" * limit
    raw = bin_record(settings="s" * (limit + 1))
    at = raw.index(b"0.21.0") + len("0.21.0") + 5  # the settings' length: marker 252 and a u32
    assert refusal(write(tmp_path, raw, "m.bin")) == \
        f"m.bin: metadata settings at byte {at} claims {limit + 1} characters"


def test_a_parameter_of_more_than_250_bytes_is_read(tmp_path: Path) -> None:
    values = np.arange(100, dtype="<f4")
    raw = bin_record(values=values.tobytes())
    assert bytes([251]) + (400).to_bytes(2, "little") + values.tobytes()[:4] in raw
    with open_store(write(tmp_path, raw, "m.bin")) as store:
        assert store.read("param.0").tobytes() == values.tobytes()


def test_what_is_no_record_is_refused_in_words_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.mpk"
    path.write_text("plain text, no record " * 10)
    with pytest.raises(FormatError) as caught:
        burn_record.open(path)
    assert str(caught.value) == \
        "notes.mpk: not a Burn record (neither msgpack, JSON nor bincode after decompression)"


def test_the_kind_is_told_by_the_first_4096_bytes(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(json_record_with_float_at(4096))
    with burn_record.open(path) as store:
        assert store.values == {"n": 1} and store.metadata["burn.float"] == "f32"
    path.write_bytes(json_record_with_float_at(4097))
    assert burn_record.sniff(path.read_bytes()[:4096]) is False
    with pytest.raises(FormatError) as caught:
        burn_record.open(path)
    assert str(caught.value) == "r.json: not a Burn record (neither msgpack, JSON nor bincode after decompression)"


def test_a_gzip_files_kind_is_told_by_its_first_4096_bytes(tmp_path: Path) -> None:
    """Stored (level 0) deflate: after gzip's 10-byte header and the block's 5, the first 4096 bytes of the file
    hold the first 4081 bytes of the record."""
    path = tmp_path / "r.json.gz"
    path.write_bytes(gzip.compress(json_record_with_float_at(4081), compresslevel=0, mtime=0))
    with open_store(path) as store:
        assert store.values == {"n": 1} and store.kind == "JSON (gzip)"
    path.write_bytes(gzip.compress(json_record_with_float_at(4082), compresslevel=0, mtime=0))
    with pytest.raises(FormatError) as caught:
        open_store(path)
    assert str(caught.value) == "r.json.gz: a gzip file whose content is not a Burn record"


def test_a_local_bin_record_is_read_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path = write_record(tmp_path, "m", {"w": Param(id_text(3), np.ones(2, "<f4"))},
                        Settings(recorder="Bin"))
    with open_store(path) as store:
        assert store.read("param.0").tolist() == [1.0, 1.0]
        assert list(scratch.iterdir()) == []


def test_a_bin_record_on_descriptor_0_is_read_in_place_not_downloaded(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    item, arrays = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="Bin"))
    monkeypatch.setenv("STORE_STUDIO_MAX_DOWNLOAD", "1")  # a whole-file copy of this record would be refused
    with stdin_closed(), open_store(path) as store:
        assert os.readlink("/proc/self/fd/0") == str(path)
        # a Bin record names no tensor: they come in the record's order, param.0, param.1...
        assert [store.read(name).tolist() for name in store.names] == [a.tolist() for a, _ in arrays.values()]
