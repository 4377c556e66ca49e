"""``value_difference`` on infinities and huge values: the numbers the diff view shows, and no numpy warning
(issue 25).

Promises (README "The diff view": selecting a pair shows max and mean absolute difference, allclose and a
histogram of differences; an infinity against the same infinity is equal) -> tests:
- an infinity against itself differs by 0, against the other infinity is non-finite, and neither warns ->
  ``test_infinities_compare_without_a_warning``
- allclose is numpy's (|a - b| <= atol + rtol * |b|, the bound included), over every chunk ->
  ``test_allclose_is_numpys_over_every_chunk``
- a constant difference gets one bin around it; an empty pair has mean 0 -> ``test_a_constant_difference_is_binned_around_itself``
- a transposed pair is compared value for value -> ``test_a_transposed_pair_counts_each_value_once``
- a difference too large for float64 counts as non-finite, without a warning ->
  ``test_an_overflowing_difference_is_nonfinite_without_a_warning``
"""

from __future__ import annotations

import warnings

import numpy as np

from engine import ArrayStore
from engine.surgery.diff import value_difference


def _pair(a: np.ndarray, b: np.ndarray):
    store = ArrayStore({"a": a, "b": b})
    return store.entries[0], store.entries[1]


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
