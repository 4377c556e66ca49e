"""``value_difference`` on infinities and huge values: the numbers the diff view shows, and no numpy warning
(issue 25).

Promises (README "The diff view": selecting a pair shows max and mean absolute difference, allclose and a
histogram of differences; an infinity against the same infinity is equal) -> tests:
- an infinity against itself differs by 0, against the other infinity is non-finite, and neither warns ->
  ``test_infinities_compare_without_a_warning``
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
