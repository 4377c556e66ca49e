"""``value_difference``: max/mean |a - b|, allclose and a histogram of a - b, chunked, for one pair of tensors.

Infinities, huge values and tolerance: the numbers the diff view shows for a selected pair (README "The diff
view": max and mean absolute difference, allclose and a histogram of differences; an infinity against the same
infinity is equal; a dtype whose values are not decoded is compared byte for byte), and no numpy warning ->
- an infinity against itself differs by 0, against the other infinity is non-finite, and neither warns ->
  ``test_infinities_compare_without_a_warning``
- allclose is numpy's (|a - b| <= atol + rtol * |b|, the bound included, relative to ``b``), over every chunk ->
  ``test_allclose_is_numpys_over_every_chunk``, ``test_allclose_is_relative_to_b_as_numpys``
- a constant difference gets one bin around it; an empty pair has mean 0 -> ``test_a_constant_difference_is_binned_around_itself``
- a transposed pair is compared value for value, also in many blocks to its last row ->
  ``test_a_transposed_pair_counts_each_value_once``, ``test_a_long_transposed_pair_is_walked_to_its_last_row``
- a difference too large for float64 counts as non-finite, without a warning ->
  ``test_an_overflowing_difference_is_nonfinite_without_a_warning``
- a quantized tensor Burn cannot decode is refused naming its dtype -> ``test_undecodable_values_are_refused_naming_the_dtype``
- cancelling stops with the words "value comparison cancelled" -> ``test_cancelling_says_so``
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import ArrayStore, export, open_store
from engine.surgery import Recipe, plan
from engine.surgery.diff import value_difference
from tests.helpers.formats_quantized_files import f32, gen2, i8, write


def _pair(a: np.ndarray, b: np.ndarray):
    store = ArrayStore({"a": a, "b": b})
    return store.entries[0], store.entries[1]


def test_statistics_and_histogram_match_numpy_whatever_the_chunk_size():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((37, 29)).astype(np.float32)
    b = (a + rng.normal(0, 0.01, a.shape)).astype(np.float32)
    d = a.astype(np.float64) - b.astype(np.float64)
    expected_counts, expected_edges = np.histogram(d, bins=16)
    for chunk in (7, 100, 1 << 20):
        result = value_difference(*_pair(a, b), bins=16, chunk_elements=chunk)
        assert result.count == a.size
        assert result.max_abs == pytest.approx(np.abs(d).max())
        assert result.mean_abs == pytest.approx(np.abs(d).mean())
        assert result.allclose is False
        assert result.histogram == tuple(expected_counts)
        assert np.allclose(result.edges, expected_edges)
        assert sum(result.histogram) == a.size


def test_identical_values_put_everything_in_one_bin_around_zero():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    result = value_difference(*_pair(a, a.copy()))
    assert (result.max_abs, result.mean_abs, result.allclose) == (0.0, 0.0, True)
    assert sum(result.histogram) == 12 and max(result.histogram) == 12
    assert result.edges[0] < 0 < result.edges[-1]


def test_a_transposed_pair_is_compared_transposed():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    result = value_difference(*_pair(a, np.ascontiguousarray(a.T)), chunk_elements=2)
    assert result.transposed and result.max_abs == 0.0 and result.allclose


def test_nan_against_nan_is_equal_but_nan_against_a_number_is_not():
    a = np.array([np.nan, 1.0, np.inf], np.float32)
    same = value_difference(*_pair(a, a.copy()))
    assert same.max_abs == 0.0 and same.nonfinite == 0 and same.allclose
    other = value_difference(*_pair(a, np.array([0.0, 1.0, np.inf], np.float32)))
    assert other.nonfinite == 1 and other.max_abs == np.inf and not other.allclose
    assert sum(other.histogram) == 2


def test_shapes_that_differ_are_refused_with_a_sentence():
    with pytest.raises(ValueError, match="cannot be compared"):
        value_difference(*_pair(np.zeros((2, 3)), np.zeros(6)))


def test_cancel_stops_between_chunks():
    a = np.zeros(1000, np.float32)
    with pytest.raises(InterruptedError):
        value_difference(*_pair(a, a.copy()), chunk_elements=10, cancel=lambda: True)


def test_a_plan_and_its_export_have_no_difference(tmp_path: Path):
    source = ArrayStore({"fc.weight": np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)})
    planned = plan([source], Recipe(adapters=("pytorch-to-burn",)))
    out = planned.export(tmp_path / "out.safetensors")
    with open_store(out) as exported:
        result = value_difference(planned.tensors[0], exported.entries[0])
    assert result.max_abs == 0.0 and not result.transposed  # the plan already transposed it


def test_an_exported_file_entry_compares_against_its_source(tmp_path: Path):
    values = np.linspace(-1, 1, 50, dtype=np.float32)
    out = export(ArrayStore({"w": values}).entries, tmp_path / "w.bpk")
    with open_store(out) as store:
        result = value_difference(store.entries[0], ArrayStore({"w": values * 2}).entries[0])
    assert result.max_abs == pytest.approx(1.0) and result.mean_abs == pytest.approx(np.abs(values).mean())


def test_infinities_compare_without_a_warning():
    a = np.array([np.inf, -np.inf, np.inf, 1.0])
    b = np.array([np.inf, -np.inf, -np.inf, 1.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value in subtract" would raise here
        result = value_difference(*_pair(a, b), bins=4)
    assert (result.count, result.nonfinite, result.allclose) == (4, 1, False)
    assert result.max_abs == np.inf and result.mean_abs == np.inf
    assert sum(result.histogram) == 3  # the three finite differences: 0, 0 and -0.5


def test_an_overflowing_difference_is_nonfinite_without_a_warning():
    a, b = np.array([1e308, 2.0]), np.array([-1e308, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered in subtract" would raise here
        result = value_difference(*_pair(a, b), bins=2)
    assert (result.nonfinite, sum(result.histogram), result.edges) == (1, 1, (0.5, 1.0, 1.5))


def test_allclose_is_numpys_over_every_chunk():
    a, b = np.array([1000.0, 1.0]), np.array([1001.0, 1.0])
    assert not value_difference(*_pair(a, b)).allclose and not np.allclose(a, b)  # the default rtol is 1e-5
    assert value_difference(*_pair(np.array([1.0]), np.array([1.5])), atol=0.5, rtol=0.0).allclose  # the bound is in
    assert not value_difference(*_pair(a, b), chunk_elements=1).allclose  # a close chunk after a far one stays far
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert value_difference(*_pair(np.array([np.inf]), np.array([np.inf])), rtol=0.0).allclose  # no 0 * inf warning
    chunked = value_difference(*_pair(np.array([np.inf, 1.0, np.inf, 1.0]), np.array([-np.inf, 1.0, -np.inf, 1.0])),
                               chunk_elements=2)
    assert chunked.nonfinite == 2  # one in each chunk


def test_a_constant_difference_is_binned_around_itself():
    result = value_difference(*_pair(np.array([3.0, 3.0]), np.array([1.0, 1.0])), bins=2)
    assert (result.edges, result.histogram, result.mean_abs) == ((1.5, 2.0, 2.5), (0, 2), 2.0)
    empty = value_difference(*_pair(np.zeros(0), np.zeros(0)), bins=2)
    assert (empty.count, empty.mean_abs, empty.edges) == (0, 0.0, (-0.5, 0.0, 0.5))


def test_a_transposed_pair_counts_each_value_once():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    result = value_difference(*_pair(a, a.T.copy() + 1.0), bins=1)
    assert (result.transposed, result.count, result.histogram, result.max_abs) == (True, 12, (12,), 1.0)


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
