"""A Burnpack shape of the wrong type, exactly (mutation run, issue 25): Burnpack's reader hands each shape on as
its CBOR states it (SafeTensors' parsers judge theirs first), so ``mapped._checked_types`` is what refuses a shape
(or offsets) that is not an array of whole numbers, and names the tensor that has it, not the first one listed.

Promises (README, "Formats": a header that breaks the format's rules is refused with one line naming the file,
the tensor and what is wrong) -> tests:
- a shape that is no array, or holds anything but a whole number from 0 up, is refused naming that tensor
  -> test_a_shape_of_the_wrong_type_is_refused_naming_its_tensor
- offsets that are not whole numbers from 0 up are refused naming that tensor, not an earlier one at offset 0
  -> test_bad_data_offsets_are_refused_naming_their_tensor
- a shape past 64 dimensions is refused naming that tensor, not an earlier scalar or 64-dimension one
  -> test_too_many_dimensions_are_refused_naming_their_tensor
- a dimension of 0 is a shape (an empty tensor), and so are no dimensions (a scalar); a 0 is not what is refused
  -> test_empty_and_scalar_shapes_open, test_a_zero_dimension_is_not_the_shape_refused
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import open_store
from test_burnpack import burn_file, write
from tests.refusals import refusal

GOOD = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize(("shape", "shown"), [
    (5, "5"), ("ab", "'ab'"), ({"a": 1}, "{'a': 1}"), (None, "None"), ([1, "2"], "[1, '2']"), ([True], "[True]"),
    ([1.0], "[1.0]"), ([-1], "[-1]"), ([[2]], "[[2]]"),
], ids=["number", "text", "map", "null", "text dim", "bool dim", "float dim", "negative", "nested"])
def test_a_shape_of_the_wrong_type_is_refused_naming_its_tensor(tmp_path, shape, shown) -> None:
    """The good tensor comes first: the refusal must name the bad one, found by its shape alone."""
    bad = {"dtype": "F32", "shape": shape, "data_offsets": [8, 8]}
    path = write(tmp_path, burn_file({"good": GOOD, "bad": bad}, bytes(8)))
    assert refusal(path) == f"m.bpk: tensor 'bad' has an invalid shape {shown}"


def test_empty_and_scalar_shapes_open(tmp_path) -> None:
    tensors = {"empty": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]},
               "scalar": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}
    with open_store(write(tmp_path, burn_file(tensors, np.float32(1.5).tobytes()))) as store:
        assert store.entry("empty").shape == (0, 3) and store.read("empty").shape == (0, 3)
        assert store.entry("scalar").shape == () and store.read("scalar").tolist() == 1.5


def test_a_zero_dimension_is_not_the_shape_refused(tmp_path) -> None:
    """An empty tensor listed before a bad one: a dimension of 0 is whole and not negative."""
    tensors = {"empty": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},
               "bad": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 0]}}
    assert refusal(write(tmp_path, burn_file(tensors, b""))) == "m.bpk: tensor 'bad' has an invalid shape [2, -1]"


@pytest.mark.parametrize(("offsets", "shown"), [
    ([8, 16.0], "[8, 16.0]"), ([8.0, 16], "[8.0, 16]"), ([16, -8], "[16, -8]"), ([-8, 16], "[-8, 16]"),
    (["8", 16], "['8', 16]"), ([8, None], "[8, None]"),
], ids=["float end", "float start", "negative end", "negative start", "text", "null"])
def test_bad_data_offsets_are_refused_naming_their_tensor(tmp_path, offsets, shown) -> None:
    """The good tensor starts at 0 and comes first (its param_id unset): only the bad one's offsets are wrong."""
    bad = {"dtype": "F32", "shape": [2], "data_offsets": offsets}
    path = write(tmp_path, burn_file({"good": GOOD, "bad": bad}, bytes(16)))
    assert refusal(path) == f"m.bpk: tensor 'bad' has invalid data_offsets {shown}"


@pytest.mark.parametrize("first", [[], [1] * 64], ids=["scalar", "64 dimensions"])
def test_too_many_dimensions_are_refused_naming_their_tensor(tmp_path, first) -> None:
    tensors = {"first": {"dtype": "F32", "shape": first, "data_offsets": [0, 4]},
               "wide": {"dtype": "F32", "shape": [1] * 65, "data_offsets": [4, 8]}}
    assert refusal(write(tmp_path, burn_file(tensors, bytes(8)))) == (
        "m.bpk: tensor 'wide' has a shape no array can hold (65 dimensions; the limits are 64 dimensions, each under "
        "2**64, and 2**59 elements)")
