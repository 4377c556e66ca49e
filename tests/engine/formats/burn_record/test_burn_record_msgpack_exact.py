"""NamedMpk records (engine/formats/burn_record/mpk.py) indexed without reading their byte strings, and every
refusal in its own words, with the field path and the byte it names.

Promises (README "Migrating from Burn's recorders", "Limits"; the audit of issue 25):
- bad input is one line naming the file and what is wrong (here: where in the record) ->
  here::test_a_record_cut_short_names_the_field_and_the_byte, here::test_what_is_not_msgpack_names_the_field_and_the_byte
- a record nested deeper than 128 levels is refused -> here::test_the_nesting_limit_is_exact
- non-tensor byte strings are kept as their size, never read -> here::test_byte_strings_stay_in_the_file_whatever_their_header
"""

from __future__ import annotations

import msgpack
import numpy as np

from engine import open_store
from tests.refusals import refusal

from burn_record_writers import Settings

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
