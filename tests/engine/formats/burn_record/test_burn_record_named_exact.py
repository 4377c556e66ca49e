"""Named records' trees (engine/formats/burn_record/named.py and record.py ``shape_of``, ``dtype_by_name``; the whole
run's survivors of session 8): a tensor's shape, dtype and size refused in words naming the file, JSON's in-memory
tensors of every kind, the values and scalars kept, and what is taken for an optimizer's record, each on a real
NamedMpk or JSON record file.

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
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from engine import open_store
from tests.refusals import refusal

from burn_record_writers import Settings, id_text



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
