"""``value_difference``: max/mean |a - b|, allclose and a histogram of a - b, chunked, for one pair of tensors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine import ArrayStore, export, open_store
from engine.surgery import Recipe, plan
from engine.surgery.diff import value_difference


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
