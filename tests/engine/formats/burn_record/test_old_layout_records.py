"""Records of Burn before 0.14 (``{value: [numbers], shape}``, engine/formats/burn_record/named.py and record.py):
nothing in them says float or int, so the numbers and the precision settings decide; each refusal in its words.

Half-precision records write half floats as their 16-bit patterns, so only a number no pattern can be (negative,
or 65,536 and over) marks an int tensor. A metadata int type this app does not know names which of the two
readings was taken.

Promises (README "Migrating from Burn's recorders": Burn 0.13 to 0.21, full and half precision; "Limits": in records
before Burn 0.14 with half precision, int parameters read as F16 unless their values say otherwise):
- full precision: floats are floats, whole numbers ints -> here::test_full_precision_numbers_say_float_or_int
- half precision: 16-bit patterns are F16, other whole numbers ints ->
  here::test_half_precision_patterns_are_f16_and_other_numbers_ints
- bad input is one line naming the file and the tensor -> here::test_values_that_do_not_fit_are_refused_in_words
"""

from __future__ import annotations

import json

import pytest

from engine import open_store
from tests.helpers.formats_burn_record_writers import Settings
from tests.refusals import refusal


def old_record(tmp_path, value, shape, *, half: bool = False, **metadata):
    meta = {**Settings(version="0.13.0", half=half, recorder="PrettyJson").metadata(), **metadata}
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"metadata": meta, "item": {"w": {"value": value, "shape": shape}}}))
    return path


def read_w(path) -> tuple[str, list]:
    with open_store(path) as store:
        return str(store.entry("w").dtype), store.read("w").tolist()


def test_full_precision_numbers_say_float_or_int(tmp_path):
    assert read_w(old_record(tmp_path, [1.0, 2], [2])) == ("F32", [1.0, 2.0])
    assert read_w(old_record(tmp_path, [1, 2], [2])) == ("I64", [1, 2])
    assert read_w(old_record(tmp_path, [], [0])) == ("F32", [])
    # an int type this app does not know: the words say the int reading was taken
    assert refusal(old_record(tmp_path, [1, 2], [2], int="i128")) == \
        "old.json: record metadata names the int type 'i128', which this app does not know"


@pytest.mark.parametrize(("values", "expected"), [
    ([0, 65535], ("F16", [0.0, float("nan")])),  # the lowest and highest patterns (0xFFFF is a NaN)
    ([1, 2], ("F16", [5.960464477539063e-08, 1.1920928955078125e-07])),
    ([-1, 2], ("I16", [-1, 2])),
])
def test_half_precision_patterns_are_f16_and_other_numbers_ints(tmp_path, values, expected):
    dtype, got = read_w(old_record(tmp_path, values, [2], half=True))
    assert dtype == expected[0]
    assert json.dumps(got) == json.dumps(expected[1])  # NaN compares equal as text


@pytest.mark.parametrize("first", [65536, 131071])
def test_half_precision_numbers_past_16_bits_are_read_as_ints(tmp_path, first):
    """65,536 is no 16-bit pattern: the int reading is taken, and an I16 cannot hold it."""
    assert refusal(old_record(tmp_path, [first, 1], [2], half=True)) == "old.json: tensor 'w': values are not I16 numbers"
    assert refusal(old_record(tmp_path, [first, 1], [2], half=True, int="i128")) == \
        "old.json: record metadata names the int type 'i128', which this app does not know"


@pytest.mark.parametrize(("value", "shape", "metadata", "words"), [
    ([1, 2], [3], {}, "tensor 'w': 2 values for shape [3]"),
    ([1.5], [2, 1], {}, "tensor 'w': 1 values for shape [2, 1]"),
    ("ab", [2], {}, "tensor 'w': no values for shape [2]"),
    ({"a": 1}, [2], {}, "tensor 'w': no values for shape [2]"),
    ({"a": 1}, [2], {"int": "i128"}, "tensor 'w': no values for shape [2]"),  # not numbers: the float reading
])
def test_values_that_do_not_fit_are_refused_in_words(tmp_path, value, shape, metadata, words):
    assert refusal(old_record(tmp_path, value, shape, **metadata)) == f"old.json: {words}"
