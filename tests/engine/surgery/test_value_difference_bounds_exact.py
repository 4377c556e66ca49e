"""``value_difference``'s tolerance, a transposed pair walked in many blocks, and its words (README "The diff
view": max and mean absolute difference, allclose and a histogram of a selected pair; a dtype whose values are
not decoded is compared byte for byte) (issue 25: the survivors of ``value_difference`` and ``_chunk_pairs``) ->
- allclose is numpy's ``|a - b| <= atol + rtol * |b|``, relative to ``b`` -> ``test_allclose_is_relative_to_b_as_numpys``
- a transposed pair of many rows is compared value for value in blocks -> ``test_a_long_transposed_pair_is_walked_to_its_last_row``
- a quantized tensor Burn cannot decode is refused naming its dtype -> ``test_undecodable_values_are_refused_naming_the_dtype``
- cancelling stops with the words "value comparison cancelled" -> ``test_cancelling_says_so``
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import open_store
from engine.surgery.diff import value_difference

from tests.helpers.formats_quantized_files import f32, gen2, i8, write


def _compare(tmp_path, a: np.ndarray, b: np.ndarray, **options):
    path = tmp_path / "pair.safetensors"
    save_file({"a": a, "b": b}, str(path))
    with open_store(path) as store:
        return value_difference(store.entry("a"), store.entry("b"), **options)


@pytest.mark.parametrize("b", [1.0, 100.0, 0.01, 3e4])
def test_allclose_is_relative_to_b_as_numpys(tmp_path, b):
    base = np.full(3, b, np.float32)
    outcomes = []
    for ulps in (1, 8, 64, 512):  # float32 steps above b: 64 are inside rtol * |b| (1e-5 of b), 512 are not
        a = base.copy()
        for _ in range(ulps):
            a = np.nextafter(a, np.float32(np.inf))
        outcomes.append(_compare(tmp_path, a, base).allclose)
        assert outcomes[-1] == bool(np.allclose(a, base)), (b, ulps)
    assert outcomes == [True, True, True, False]


def test_a_long_transposed_pair_is_walked_to_its_last_row(tmp_path):
    a = np.zeros((3, 200), np.float32)
    b = np.zeros((200, 3), np.float32)
    b[199, 2] = 5.0  # the last row of the transposed walk
    result = _compare(tmp_path, a, b, chunk_elements=30, bins=1)
    assert (result.transposed, result.count, result.max_abs, result.histogram) == (True, 600, 5.0, (600,))


def test_undecodable_values_are_refused_naming_the_dtype(tmp_path):
    path = write(tmp_path, {"w": ({"QFloat": gen2("E4M3", store="Native")}, [4], i8(1, 2, 3, 4) + f32(1.0))})
    with open_store(path) as store:
        entry = store.entry("w")
        with pytest.raises(ValueError) as refused:
            value_difference(entry, entry)
    assert str(refused.value) == "QFLOAT values cannot be decoded, only compared byte for byte"


def test_cancelling_says_so(tmp_path):
    with pytest.raises(InterruptedError) as cancelled:
        _compare(tmp_path, np.zeros(4, np.float32), np.ones(4, np.float32), cancel=lambda: True)
    assert str(cancelled.value) == "value comparison cancelled"
