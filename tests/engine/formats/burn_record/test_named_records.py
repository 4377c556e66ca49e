"""Named records' trees (engine/formats/burn_record/named.py and record.py ``shape_of``, ``dtype_by_name``;
JSON records in engine/formats/burn_record/__init__.py): a tensor's shape, dtype and size refused in words naming
the file, JSON's in-memory tensors of every kind, the values and scalars kept, what is taken for an optimizer's
record, and the JSON size limit at the exact byte, each on a real NamedMpk or JSON record file. Without these a
migrated record could lose its values, carry scalars of the wrong kind, or be refused without naming the tensor.

Promises (README "Migrating from Burn's recorders": non-tensor fields kept as values, numbers as Burnpack scalars,
an optimizer's record in the layout current Burn loads, its counters ``UInt``; "Limits": a record nested deeper than
128 levels is refused; bad input is one line naming the file and what is wrong) ->
- a tensor's shape, dtype or size that is wrong is refused in words naming the file and the tensor ->
  ``test_a_wrong_shape_dtype_or_size_is_refused_in_words``; 64 dimensions are read ->
  ``test_sixty_four_dimensions_are_read``
- JSON tensors (bytes spelled as numbers) read as their dtype: empty ones, bools stored as U8/U32, quantized bytes
  kept as they are -> ``test_empty_json_tensors_keep_their_dtype_and_shape``,
  ``test_json_bools_stored_wide_read_as_bools``, ``test_json_quantized_bytes_are_kept_as_they_are``
- values: a tensors-only record has none, a list holding tensors names them in place ->
  ``test_a_record_of_tensors_only_has_no_values``, ``test_tensors_inside_a_list_of_values_are_named_in_place``
- numbers become scalars: Int from -2**63, UInt from 2**63 to 2**64 - 1, floats of any size; others are values
  only -> ``test_numbers_become_scalars_within_their_ranges``
- an optimizer's counters are UInt even at 0, and a parameter in its state keeps its own id ->
  ``test_an_optimizer_counter_at_zero_is_uint_and_a_parameter_keeps_its_id``
- a record that only looks like an optimizer's in part is read as a plain record ->
  ``test_what_is_no_optimizer_record_is_read_as_a_plain_one``
- a JSON record's last allowed level is read, one more refused -> ``test_the_json_nesting_limit_is_exact``
- JSON records up to the limit, refused past it with what to do -> here::test_the_size_limit_is_exact
- bad input is one line naming the file -> here::test_what_is_no_json_record_is_refused_in_words
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from engine import open_store
from engine.formats import burn_record
from tests.helpers.formats_burn_record_writers import Settings, id_text
from tests.refusals import refusal


def json_record(tmp_path: Path, item: Any) -> Path:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"metadata": Settings(recorder="PrettyJson").metadata(), "item": item}))
    return path


def mpk_record(tmp_path: Path, item: Any) -> Path:
    path = tmp_path / "r.mpk"
    path.write_bytes(msgpack.packb({"metadata": Settings().metadata(), "item": item}, use_bin_type=True))
    return path


def data(raw: bytes, shape: Any, dtype: Any = "F32", *, as_json: bool) -> dict[str, Any]:
    return {"bytes": list(raw) if as_json else raw, "shape": shape, "dtype": dtype}


def write(tmp_path: Path, item: Any, as_json: bool) -> Path:
    return json_record(tmp_path, item) if as_json else mpk_record(tmp_path, item)


TWO = np.array([1.5, -2.0], "<f4").tobytes()


SIXTY_FIVE_ONES = "[" + "1, " * 26 + "1"  # repr([1] * 65) cut at 80 characters


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "mpk"])
@pytest.mark.parametrize(("shape", "dtype", "words"), [
    ("x", "F32", "shape 'x' is not a list of at most 64 sizes"),
    (5, "F32", "shape 5 is not a list of at most 64 sizes"),
    ([-1], "F32", "shape [-1] is not a list of at most 64 sizes"),
    ([2.0], "F32", "shape [2.0] is not a list of at most 64 sizes"),
    ([2**63], "F32", "shape [9223372036854775808] is not a list of at most 64 sizes"),
    ([1] * 65, "F32", f"shape {SIXTY_FIVE_ONES} is not a list of at most 64 sizes"),
    ([2], "F128", "dtype 'F128' is not one of Burn's"),
    ([3], "F32", "8 bytes, but F32 x [3] needs 12"),
], ids=["text", "number", "negative", "float", "2**63", "65-dims", "dtype", "size"])
def test_a_wrong_shape_dtype_or_size_is_refused_in_words(tmp_path: Path, as_json: bool, shape: Any, dtype: str,
                                                          words: str) -> None:
    path = write(tmp_path, {"w": data(TWO, shape, dtype, as_json=as_json)}, as_json)
    assert refusal(path) == f"{path.name}: tensor 'w': {words}"


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "mpk"])
def test_sixty_four_dimensions_are_read(tmp_path: Path, as_json: bool) -> None:
    with open_store(write(tmp_path, {"w": data(TWO[:4], [1] * 64, as_json=as_json)}, as_json)) as store:
        assert store.entries[0].shape == (1,) * 64 and store.read("w").reshape(-1).tolist() == [1.5]


@pytest.mark.parametrize(("dtype", "numpy"), [("F32", "float32"), ("I64", "int64"), ("U8", "uint8")])
def test_empty_json_tensors_keep_their_dtype_and_shape(tmp_path: Path, dtype: str, numpy: str) -> None:
    with open_store(json_record(tmp_path, {"w": data(b"", [0, 3], dtype, as_json=True)})) as store:
        array = store.read("w")
        assert (array.dtype.name, array.shape, store.entries[0].shape) == (numpy, (0, 3), (0, 3))


@pytest.mark.parametrize(("storage", "width"), [("U8", "<u1"), ("U32", "<u4"), ("Native", "<u1")])
def test_json_bools_stored_wide_read_as_bools(tmp_path: Path, storage: str, width: str) -> None:
    raw = np.array([1, 0, 1, 1], width).tobytes()
    with open_store(json_record(tmp_path, {"m": data(raw, [4], {"Bool": storage}, as_json=True)})) as store:
        array = store.read("m")
        assert (array.dtype.name, array.tolist()) == ("bool", [True, False, True, True])


def test_json_quantized_bytes_are_kept_as_they_are(tmp_path: Path) -> None:
    """Five int8 values packed in two u32 words, then the f32 scale: 12 bytes, never decoded at open."""
    scheme = {"value": "Q8S", "param": "F32", "store": {"PackedU32": 0}, "level": "Tensor", "mode": "Symmetric"}
    raw = bytes(range(1, 9)) + np.array([0.5], "<f4").tobytes()
    with open_store(json_record(tmp_path, {"q": data(raw, [5], {"QFloat": scheme}, as_json=True)})) as store:
        assert store.entries[0].dtype.name == "QFLOAT"
        assert b"".join(bytes(piece) for piece in store.iter_bytes("q")) == raw


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "mpk"])
def test_a_record_of_tensors_only_has_no_values(tmp_path: Path, as_json: bool) -> None:
    item = {"a": {"w": data(TWO, [2], as_json=as_json)}, "b": [data(TWO, [2], as_json=as_json)]}
    with open_store(write(tmp_path, item, as_json)) as store:
        assert store.names == ["a.w", "b.0"] and store.values == {} and store.scalars == {}


def test_tensors_inside_a_list_of_values_are_named_in_place(tmp_path: Path) -> None:
    item = {"a": [data(TWO, [2], as_json=False), 5, "x"]}
    with open_store(mpk_record(tmp_path, item)) as store:
        assert store.names == ["a.0"]
        assert store.values == {"a": ["<tensor a.0>", 5, "x"]}


def test_numbers_become_scalars_within_their_ranges(tmp_path: Path) -> None:
    """JSON numbers have no range: only what a Burnpack scalar holds (i64, u64, f64) becomes one."""
    item = {"a": -(2**63), "b": -(2**63) - 1, "c": 2**63, "d": 2**64 - 1, "e": 2**64, "f": 1e30, "g": -5, "h": 0}
    with open_store(json_record(tmp_path, item)) as store:
        assert store.values == item
        assert store.scalars == {"a": {"Int": -(2**63)}, "c": {"UInt": 2**63}, "d": {"UInt": 2**64 - 1},
                                 "f": {"Float": 1e30}, "g": {"Int": -5}, "h": {"Int": 0}}


def test_an_optimizer_counter_at_zero_is_uint_and_a_parameter_keeps_its_id(tmp_path: Path) -> None:
    state = {"momentum": {"time": 0, "steps": 3, "velocity": data(TWO, [2], as_json=False)},
             "p": {"id": id_text(7), "param": data(TWO, [2], as_json=False)}}
    with open_store(mpk_record(tmp_path, {id_text(42): {"V1": {"Rank1": state}}})) as store:
        assert {e.name: e.param_id for e in store.entries} == {"42.momentum.velocity": 42, "42.p": 7}
        assert store.scalars == {"42.__rank": {"UInt": 1}, "42.momentum.time": {"UInt": 0},
                                 "42.momentum.steps": {"UInt": 3}}


@pytest.mark.parametrize(("item", "names", "values"), [
    ([{"bytes": TWO, "shape": [2], "dtype": "F32"}, 3], ["0"], ["<tensor 0>", 3]),
    ({5: {"bytes": TWO, "shape": [2], "dtype": "F32"}, 6: 1}, ["5"], {"6": 1}),
    ({id_text(42): {"a": 1, "b": 2}}, [], {id_text(42): {"a": 1, "b": 2}}),
    ({id_text(42): {"V1": {7: 1}}}, [], {id_text(42): {"V1": {"7": 1}}}),
    ({id_text(42): 3}, [], {id_text(42): 3}),
], ids=["a list", "number keys", "two fields", "a number variant", "a number state"])
def test_what_is_no_optimizer_record_is_read_as_a_plain_one(tmp_path: Path, item: Any, names: list[str],
                                                             values: Any) -> None:
    with open_store(mpk_record(tmp_path, item)) as store:
        assert (store.names, store.values) == (names, values)


def nested(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = [leaf]
    return leaf


def test_the_json_nesting_limit_is_exact(tmp_path: Path) -> None:
    """The item is level 0 of a JSON record: a value under 127 lists under ``a`` is level 128, the last allowed."""
    with open_store(json_record(tmp_path, {"a": nested(127, 1.5)})) as store:
        assert store.values == {"a": nested(127, 1.5)}
    assert refusal(json_record(tmp_path, {"a": nested(128, 1.5)})) == \
        "r.json: the record is nested deeper than 128 levels at a.0.0.0.0.0.0.0..."


META = json.dumps(Settings(recorder="PrettyJson").metadata())


def record(tmp_path, text: str | bytes):
    path = tmp_path / "r.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_the_size_limit_is_exact(tmp_path, monkeypatch):
    path = record(tmp_path, '{"metadata": %s, "item": {"n": 3}}' % META)
    size = path.stat().st_size
    monkeypatch.setattr(burn_record, "MAX_JSON_BYTES", size)
    with open_store(path) as store:
        assert store.values == {"n": 3} and store.kind == "JSON"
    monkeypatch.setattr(burn_record, "MAX_JSON_BYTES", size - 1)
    assert refusal(path) == (f"r.json: JSON record of {size} bytes is over the limit of {size - 1}; JSON spells each "
                             "byte as a number (convert it with Burn to NamedMpk first)")


@pytest.mark.parametrize(("text", "words"), [
    ('{"metadata": %s}' % META, "the record has metadata but no 'item'"),
    ('{"metadata": %s, "item": {"a": 1' % META, "file is truncated at byte 231"),
    ('{"metadata": %s, "item": {"a": 1}} x' % META, "not valid JSON (Extra data) at byte 234"),
    ('{"metadata": %s, "item": {"a": tru}}' % META, "not valid JSON (Expecting value) at byte 230"),
    ('{"metadata": %s, "item": ' % META + "[" * 100000 + "]" * 100000 + "}", "the JSON record is nested too deeply"),
    ('{"metadata": {"float": 1}, "item": {}}',
     "the record's metadata is not a map of float, int, format, version, settings (text each)"),
    (b'{"metadata": %s, "item": {"a": "\xff"}}' % META.encode(),
     "not valid JSON ('utf-8' codec can't decode byte 0xff in position 231: invalid start byte)"),
    ('{"metadata": %s, "item": {"a": 1]' % META, "file is truncated at byte 231"),  # the last byte: a cut-off end
    ('{"metadata": %s, "item": {"a": 1]x' % META, "not valid JSON (Expecting ',' delimiter) at byte 231"),
], ids=["no-item", "truncated", "extra-data", "bad-value", "deep", "metadata", "not-utf8", "last-byte", "before-last"])
def test_what_is_no_json_record_is_refused_in_words(tmp_path, text, words):
    assert refusal(record(tmp_path, text)) == f"r.json: {words}"


@pytest.mark.parametrize("raw", [[0, 256], [-1], [1.5], [True], {}, "ab"], ids=["256", "negative", "float", "bool",
                                                                                  "map", "text"])
def test_bytes_that_are_not_a_list_of_bytes_are_refused_in_words(tmp_path, raw):
    """JSON writes a tensor's bytes as a list of numbers 0 to 255; anything else is no byte string."""
    text = json.dumps({"metadata": json.loads(META), "item": {"w": {"bytes": raw, "shape": [0], "dtype": "U8"}}})
    assert refusal(record(tmp_path, text)) == "r.json: tensor 'w': 'bytes' is not a byte string"


def test_a_list_of_bytes_is_the_tensors_bytes(tmp_path):
    text = json.dumps({"metadata": json.loads(META), "item": {"w": {"bytes": [0, 255, 7], "shape": [3], "dtype": "U8"}}})
    with open_store(record(tmp_path, text)) as store:
        assert store.read("w").tolist() == [0, 255, 7]
