"""How a Burn record is recognised by its first bytes (engine/formats/burn_record/mpk.py, gz.py and bincode.py
``sniff``, bincode ``_Codec``; the whole run's survivors of session 8): each kind at the edges of what its sniff
takes, on real record files, and what merely looks like one left to the other readers.

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
"""

from __future__ import annotations

import gzip
from pathlib import Path

import msgpack
import numpy as np
import pytest

from engine import open_store
from tests.refusals import refusal

from burn_record_writers import DTYPES_0_16, Bincode, Settings, id_text, json_record_with_float_at

NOT_A_MODEL = "not a Burnpack, SafeTensors, PyTorch file or Burn record (its first bytes match none of them)"
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
