"""NamedMpk records (engine/formats/burn_record/mpk.py, its ``_Cursor``, ``_Reader`` and ``_where``) indexed without
reading their byte strings: each kind of header taken for what it is, the nesting limit counted for map keys too,
the decoder fed the file's bytes in order however long a stretch without byte strings, and every refusal in its own
words, with the field path and the byte it names. Without these a user would wait for a large record to be read
whole, or be told a record is broken without being told where.

Promises (README "Migrating from Burn's recorders", "Limits"):
- bad input is one line naming the file and what is wrong (here: where in the record) ->
  here::test_a_record_cut_short_names_the_field_and_the_byte, here::test_what_is_not_msgpack_names_the_field_and_the_byte
- a record nested deeper than 128 levels is refused -> here::test_the_nesting_limit_is_exact
- non-tensor byte strings are kept as their size, never read -> here::test_byte_strings_stay_in_the_file_whatever_their_header
- empty lists and empty texts are values like any other -> ``test_empty_lists_and_texts_are_kept_as_values``
- the tensors of a struct of 15 fields or a Vec of 15 items are left in the file, at their offsets ->
  ``test_tensors_in_fifteen_fields_or_items_stay_in_the_file``
- a map on the last level the limit allows is read; a map key past it is refused as too deep ->
  ``test_a_map_on_the_last_level_is_read``, ``test_a_map_key_past_the_limit_is_refused_as_too_deep``
- an old-layout record's long value lists are read exactly (more than two read-aheads without a byte string) ->
  ``test_values_longer_than_two_read_aheads_are_read_exactly``
- a record cut inside a byte string's length, or right after a tensor's bytes, is refused naming where; a byte
  string that ends the file is read -> ``test_a_record_cut_in_a_byte_strings_length_names_it``,
  ``test_a_record_cut_right_after_a_tensors_bytes_names_what_follows``, ``test_a_byte_string_may_end_the_file``
- a map key at the root that is not text is refused naming the root ->
  ``test_a_root_key_that_is_not_text_is_refused_naming_the_root``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from engine import open_store
from tests.helpers.formats_burn_record_writers import Data, Settings, write_record
from tests.refusals import refusal

META = Settings().metadata()


def record(tmp_path, item, *, cut: int = 0, name: str = "r.mpk"):
    raw = msgpack.packb({"metadata": META, "item": item}, use_bin_type=True)
    path = tmp_path / name
    path.write_bytes(raw[:len(raw) - cut])
    return path


def nested(levels: int, leaf):
    for _ in range(levels):
        leaf = [leaf]
    return leaf


def test_the_nesting_limit_is_exact(tmp_path):
    with open_store(record(tmp_path, {"a": nested(126, 1)})) as store:
        assert store.values == {"a": nested(126, 1)}
    assert refusal(record(tmp_path, {"a": nested(127, 1)})) == \
        "r.mpk: the record is nested deeper than 128 levels at item.a.0.0.0.0.0.0..."


def test_a_record_cut_short_names_the_field_and_the_byte(tmp_path):
    assert refusal(record(tmp_path, {"a": 1}, cut=1)) == "r.mpk: file is truncated: item.a starts at byte 189, the end of the file"
    assert refusal(record(tmp_path, {"a": [1, 2, 3]}, cut=2)) == \
        "r.mpk: file is truncated: item.a.1 starts at byte 191, the end of the file"
    assert refusal(record(tmp_path, {"a": b"\x00" * 10}, cut=3)) == \
        "r.mpk: file is truncated: item.a needs bytes 191..201 but the file has 198"
    assert refusal(record(tmp_path, {"a": "text"}, cut=2)) == "r.mpk: file is truncated at item.a (byte 189)"


def test_what_is_not_msgpack_names_the_field_and_the_byte(tmp_path):
    assert refusal(record(tmp_path, {1.5: 2})) == "r.mpk: item: a map key at byte 186 is not text or a number"
    path = tmp_path / "r.mpk"
    path.write_bytes(msgpack.packb({"metadata": META, "item": {"a": 1}}, use_bin_type=True)[:-2] + b"\xc1")
    assert refusal(path) == ("r.mpk: not valid msgpack ('utf-8' codec can't decode byte 0xc1 in position 0: invalid "
                             "start byte) at item.<key> (byte 187)")


def test_byte_strings_stay_in_the_file_whatever_their_header(tmp_path):
    """bin 8, bin 16 and bin 32 heads, each left in the file; what follows each is decoded where it starts."""
    item = {"a": b"\x00" * 10, "b": b"\x01" * 300, "c": b"\x02" * 70000, "d": [1, "x"], "e": {"f": 2.5}}
    with open_store(record(tmp_path, item)) as store:
        assert store.values == {"a": "<10 bytes>", "b": "<300 bytes>", "c": "<70000 bytes>", "d": [1, "x"],
                                "e": {"f": 2.5}}


def test_tensors_after_long_byte_strings_are_found_at_their_offsets(tmp_path):
    """A tensor's bytes are located from its header; decoding restarts after them, past the read-ahead."""
    weight = np.arange(3000, dtype="<f4")
    item = {"blob": b"\x07" * 5000,
            "w": {"bytes": weight.tobytes(), "shape": [3000], "dtype": "F32"},
            "after": {"bytes": np.ones(2, "<f4").tobytes(), "shape": [2], "dtype": "F32"}, "n": 7}
    with open_store(record(tmp_path, item)) as store:
        assert store.names == ["w", "after"]
        assert store.read("w").tobytes() == weight.tobytes() and store.read("after").tolist() == [1.0, 1.0]
        assert store.values == {"blob": "<5000 bytes>", "n": 7}


def packed(item: Any) -> bytes:
    return msgpack.packb({"metadata": META, "item": item}, use_bin_type=True)


def write(tmp_path: Path, raw: bytes, name: str = "r.mpk") -> Path:
    path = tmp_path / name
    path.write_bytes(raw)
    return path


def tensor_data(values: np.ndarray) -> dict[str, Any]:
    return {"bytes": values.tobytes(), "shape": list(values.shape), "dtype": "F32"}


def test_empty_lists_and_texts_are_kept_as_values(tmp_path: Path) -> None:
    """0x90 (an empty array) and 0xa0 (an empty text) sit next to the map and array headers they are not."""
    item = {"layers": [], "name": "", "w": tensor_data(np.ones(2, "<f4"))}
    with open_store(write(tmp_path, packed(item))) as store:
        assert store.values == {"layers": [], "name": ""}
        assert store.read("w").tolist() == [1.0, 1.0]


def test_tensors_in_fifteen_fields_or_items_stay_in_the_file(tmp_path: Path) -> None:
    """0x8f and 0x9f head a map of 15 entries and an array of 15 items: walked like any map or array, so each
    tensor's bytes are found in the file, not decoded into memory."""
    arrays = [np.full(2, i, "<f4") for i in range(15)]
    for item, names in (({f"p{i}": tensor_data(a) for i, a in enumerate(arrays)}, [f"p{i}" for i in range(15)]),
                        ({"layers": [tensor_data(a) for a in arrays]}, [f"layers.{i}" for i in range(15)])):
        raw = packed(item)
        with open_store(write(tmp_path, raw)) as store:
            assert store.names == names
            for name, a in zip(names, arrays):
                found = store.byte_range(name)
                assert found is not None and found[1:] == (raw.index(a.tobytes()), 8), name
                assert store.read(name).tolist() == a.tolist()


def test_a_map_on_the_last_level_is_read(tmp_path: Path) -> None:
    """item is level 1, so a map under 125 lists under ``a`` is level 127 and its key and value are level 128."""
    item = {"a": nested(125, {"b": 1})}
    with open_store(write(tmp_path, packed(item))) as store:
        assert store.values == item


def test_a_map_key_past_the_limit_is_refused_as_too_deep(tmp_path: Path) -> None:
    """A map on level 128 (allowed) whose key is an array: the key is level 129, refused as too deep before it
    could be refused as a key that is not text."""
    placeholder = "@" * 8
    raw = packed({"a": nested(126, placeholder)}).replace(msgpack.packb(placeholder), b"\x81\x90\x01")
    assert refusal(write(tmp_path, raw)) == \
        "r.mpk: the record is nested deeper than 128 levels at item.a.0.0.0.0.0.0..."


def test_values_longer_than_two_read_aheads_are_read_exactly(tmp_path: Path) -> None:
    """A Burn 0.13 record spells its values as msgpack floats (5 bytes each): 3000 of them are 15 KB decoded
    without any byte string, three and more read-aheads of 4096 bytes, each from where the last ended."""
    values = np.linspace(-1, 1, 3000, dtype="<f4")
    path = write_record(tmp_path, "old", {"w": Data(values)}, Settings(version="0.13.0", recorder="NamedMpk"))
    with open_store(path) as store:
        assert store.read("w").tobytes() == values.tobytes()


def test_a_record_cut_in_a_byte_strings_length_names_it(tmp_path: Path) -> None:
    """A bin 16 header (0xc5, then two length bytes) whose second length byte is past the end."""
    raw = packed({"a": b"\x00" * 300})
    at = len(raw) - 300 - 3
    assert refusal(write(tmp_path, raw[:at + 2])) == \
        f"r.mpk: file is truncated: the length of item.a needs bytes {at + 1}..{at + 3} but the file has {at + 2}"


def test_a_record_cut_right_after_a_tensors_bytes_names_what_follows(tmp_path: Path) -> None:
    values = np.arange(4, dtype="<f4")
    raw = packed({"w": tensor_data(values)})
    end = raw.index(values.tobytes()) + values.nbytes
    assert refusal(write(tmp_path, raw[:end])) == \
        f"r.mpk: file is truncated: item.w.<key> starts at byte {end}, the end of the file"


def test_a_byte_string_may_end_the_file(tmp_path: Path) -> None:
    with open_store(write(tmp_path, packed({"n": 1, "a": b"\x05" * 10}))) as store:
        assert store.values == {"n": 1, "a": "<10 bytes>"}


def test_a_root_key_that_is_not_text_is_refused_naming_the_root(tmp_path: Path) -> None:
    """A map of two entries whose first key is nil (its value is the text "metadata", so the file sniffs as
    NamedMpk)."""
    raw = b"\x82\xc0" + msgpack.packb("metadata") + msgpack.packb({"item": 1})[1:]
    assert refusal(write(tmp_path, raw)) == "r.mpk: the root: a map key at byte 0 is not text or a number"
