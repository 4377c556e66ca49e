"""Tensor statistics against numpy, for every kind of value a store holds."""

import ml_dtypes
import numpy as np
import pytest

from engine import ArrayStore, TensorEntry, open_store
from engine.dtypes import quantized
from tests.helpers.samples import SAMPLES
from engine.stats import (PERCENTILE_SAMPLE, StatsCancelled, StatsUnavailable, compute_stats,
                          stats_for)


def _check_against_numpy(values: np.ndarray, stats, *, rel: float = 1e-6) -> None:
    wide = values.astype(np.float64)
    finite = wide[np.isfinite(wide)]
    assert stats.count == values.size and stats.finite == finite.size
    assert stats.min == pytest.approx(finite.min()) and stats.max == pytest.approx(finite.max())
    assert stats.mean == pytest.approx(finite.mean(), rel=rel, abs=1e-9)
    assert stats.std == pytest.approx(finite.std(), rel=rel, abs=1e-9)
    assert stats.zeros == int(np.count_nonzero(wide == 0))
    assert sum(stats.histogram) == finite.size


def test_float32_stats_match_numpy_across_chunks():
    values = np.random.default_rng(0).normal(3.0, 2.0, size=(300, 77)).astype(np.float32)
    stats = compute_stats(values, chunk_elements=1000)
    _check_against_numpy(values, stats)
    expected, edges = np.histogram(values.astype(np.float64), bins=64, range=(values.min(), values.max()))
    assert np.abs(np.array(stats.histogram) - expected).sum() <= 2  # float32 vs float64 bin edges
    assert stats.edges[0] == pytest.approx(edges[0]) and stats.edges[-1] == pytest.approx(edges[-1])


def test_bfloat16_is_widened_chunk_by_chunk():
    values = np.random.default_rng(1).uniform(-4, 4, size=5000).astype(ml_dtypes.bfloat16)
    stats = compute_stats(values, chunk_elements=512)
    _check_against_numpy(values.astype(np.float32), stats)


def test_float16_and_float8_are_supported():
    values = np.linspace(-2, 2, 1001)
    for dtype in (np.float16, ml_dtypes.float8_e4m3fn):
        narrow = values.astype(dtype)
        _check_against_numpy(narrow.astype(np.float32), compute_stats(narrow, chunk_elements=100))


def test_nan_and_inf_are_counted_and_left_out_of_the_moments():
    values = np.array([1.0, np.nan, 2.0, np.inf, -np.inf, 0.0, 3.0, np.nan], np.float32)
    stats = compute_stats(values, chunk_elements=3)
    assert (stats.nan, stats.inf, stats.zeros, stats.finite) == (2, 2, 1, 4)
    assert (stats.min, stats.max) == (0.0, 3.0)
    assert stats.mean == pytest.approx(1.5) and stats.std == pytest.approx(np.std([1, 2, 0, 3]))


def test_all_nan_tensor_has_no_finite_summary():
    stats = compute_stats(np.full(10, np.nan, np.float32))
    assert stats.nan == 10 and stats.min is None and stats.mean is None and stats.histogram == ()


def test_integers_keep_exact_extremes_and_get_one_bin_per_value_when_few():
    values = np.array([2**62, -5, 7, 0], np.int64)
    stats = compute_stats(values, chunk_elements=2)
    assert stats.min == -5 and stats.max == 2**62 and isinstance(stats.max, int)
    small = np.random.default_rng(2).integers(0, 10, size=2000).astype(np.int32)
    stats = compute_stats(small, chunk_elements=300)
    _check_against_numpy(small, stats)
    assert list(stats.histogram) == list(np.bincount(small, minlength=10))


def test_bools_count_true_and_false():
    values = np.array([True, False, True, True, False])
    stats = compute_stats(values, chunk_elements=2)
    assert (stats.min, stats.max, stats.zeros) == (0, 1, 2)
    assert stats.mean == pytest.approx(0.6) and stats.histogram == (2, 3)
    assert stats.zero_share == pytest.approx(0.4)


def test_constant_and_empty_tensors():
    stats = compute_stats(np.full((3, 3), 5.0, np.float32))
    assert stats.min == stats.max == 5.0 and stats.std == 0.0 and stats.histogram == (9,)
    empty = compute_stats(np.zeros((0, 4), np.float32))
    assert empty.count == 0 and empty.mean is None and empty.zero_share == 0.0


def test_cancel_stops_between_chunks():
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(StatsCancelled):
        compute_stats(np.zeros(10_000, np.float32), chunk_elements=100, cancel=cancel)
    assert len(calls) == 3


def test_stats_for_reads_a_stored_tensor():
    with open_store(SAMPLES / "sample_cnn.safetensors") as store:
        entry = store.entry("fc1.weight")
        _check_against_numpy(entry.read(), stats_for(entry))


def test_quantized_and_complex_tensors_explain_why_there_are_no_stats():
    fp8 = {"value": "E4M3", "store": "Native", "mode": "Symmetric", "tensor": "F32", "block": None}
    entry = TensorEntry("q", quantized(fp8), (4,), 8)
    with pytest.raises(StatsUnavailable, match="E4M3 values are not decoded"):
        stats_for(entry)
    store = ArrayStore({"c": np.ones(3, np.complex64)})
    with pytest.raises(StatsUnavailable, match="complex"):
        stats_for(store.entry("c"))


def test_float_stats_add_abs_max_l2_signed_infinities_and_percentiles():
    values = np.linspace(-2.0, 1.0, 1001, dtype=np.float32)
    array = np.concatenate([values, np.array([np.inf, np.inf, -np.inf, np.nan], np.float32)])
    stats = compute_stats(array, chunk_elements=300)
    assert (stats.kind, stats.pos_inf, stats.neg_inf, stats.inf, stats.nan) == ("float", 2, 1, 3, 1)
    assert stats.abs_max == pytest.approx(2.0)
    assert stats.l2 == pytest.approx(float(np.sqrt(np.sum(values.astype(np.float64) ** 2))))
    expected = np.percentile(values.astype(np.float64), [1, 50, 99])
    assert [p for p, _ in stats.percentiles] == [1, 50, 99]
    assert [v for _, v in stats.percentiles] == pytest.approx(list(expected))
    assert stats.sampled == 0  # exact: small enough to take every value


def test_percentiles_of_a_large_tensor_come_from_a_strided_sample():
    stats = compute_stats(np.arange(PERCENTILE_SAMPLE * 3, dtype=np.float32))
    assert 0 < stats.sampled <= PERCENTILE_SAMPLE
    assert dict(stats.percentiles)[50] == pytest.approx(PERCENTILE_SAMPLE * 1.5, rel=1e-3)


def test_bool_stats_say_how_many_are_true_and_nothing_about_nan():
    stats = compute_stats(np.array([True, False, True, True, False]))
    assert (stats.kind, stats.count, stats.true_count, stats.zeros) == ("bool", 5, 3, 2)
    assert stats.percentiles == () and stats.inf == 0


def test_a_scalar_or_constant_tensor_has_its_value_as_its_whole_range():
    for array in (np.array(3.5, np.float32), np.full((4, 4), 3.5, ml_dtypes.bfloat16)):
        stats = compute_stats(array)
        assert stats.edges == (3.5, 3.5) and stats.histogram == (array.size,)


def test_histogram_leaves_nonfinite_values_out_only_in_the_chunks_that_have_them():
    values = np.random.default_rng(3).standard_normal(10_000).astype(np.float32)
    values[[5_001, 5_002, 7_000]] = [np.nan, np.inf, -np.inf]  # one chunk of ten has them
    stats = compute_stats(values, chunk_elements=1_000)
    finite = values[np.isfinite(values)]
    expected, edges = np.histogram(finite.astype(np.float64), bins=64, range=(finite.min(), finite.max()))
    assert (stats.nan, stats.inf, stats.finite) == (1, 2, 9_997) and sum(stats.histogram) == 9_997
    assert np.abs(np.array(stats.histogram) - expected).sum() <= 2  # a value on an inner edge may change sides
    assert stats.std == pytest.approx(float(finite.astype(np.float64).std()), rel=1e-9)


def test_a_tensor_in_a_real_file_matches_numpys_histogram_and_moments(tmp_path):
    """Counted two bins at a time (byte-sized bins) over chunks of odd length, a file written by the
    `safetensors` library gives numpy's own histogram, extremes and moments."""
    from safetensors.numpy import save_file
    values = np.random.default_rng(7).normal(0.5, 3.0, 100_003).astype(np.float32)
    values[[17, 50_000]] = [np.nan, -np.inf]
    save_file({"w": values}, tmp_path / "one.safetensors")
    with open_store(tmp_path / "one.safetensors") as store:
        stats = stats_for(store.entry("w"), chunk_elements=9_999)
    finite = values[np.isfinite(values)].astype(np.float64)
    _check_against_numpy(values, stats, rel=1e-9)
    expected, edges = np.histogram(finite, bins=64, range=(finite.min(), finite.max()))
    assert np.abs(np.array(stats.histogram) - expected).sum() <= 2  # a value on an inner edge may change sides
    assert stats.histogram[0] >= 1 and stats.histogram[-1] >= 1  # both extremes counted, the top one in the last bin
    assert stats.edges == pytest.approx(tuple(edges))


def test_many_bins_count_as_numpy_does_past_the_byte_sized_path():
    values = np.random.default_rng(8).integers(-1_000, 1_000, 20_001).astype(np.int32)
    stats = compute_stats(values, bins=2_500, chunk_elements=777)  # one bin per value: 2,000 of them
    assert list(stats.histogram) == list(np.bincount(values - values.min()))
    few = compute_stats(values, bins=253, chunk_elements=777)  # the largest count of bins counted in pairs
    expected, _ = np.histogram(values.astype(np.float64), bins=253, range=(values.min(), values.max()))
    assert np.abs(np.array(few.histogram) - expected).sum() <= 2


def test_a_stored_tensor_is_summarized_without_a_copy_of_it_whole(tmp_path):
    """A tensor whose bytes lie as-is in its file is read a chunk at a time into one buffer: the memory
    statistics take stays the percentiles' sample (1 Mi values, copied once to partition) and a few chunks,
    not the tensor (32 MiB here)."""
    import tracemalloc

    from safetensors.numpy import save_file
    values = np.random.default_rng(9).standard_normal(8 << 20).astype(np.float32)
    save_file({"w": values}, tmp_path / "big.safetensors")
    with open_store(tmp_path / "big.safetensors") as store:
        tracemalloc.start()
        try:
            stats = stats_for(store.entry("w"), chunk_elements=1 << 16)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 16 << 20, peak
    expected = compute_stats(values, chunk_elements=1 << 16)
    assert (stats.histogram, stats.min, stats.max, stats.mean, stats.std, stats.percentiles) == \
        (expected.histogram, expected.min, expected.max, expected.mean, expected.std, expected.percentiles)
    assert stats.sampled == expected.sampled > 0


def test_a_file_truncated_under_statistics_says_it_changed(tmp_path):
    import os

    from safetensors.numpy import save_file

    from engine import FormatError
    save_file({"w": np.arange(100_000, dtype=np.float32)}, tmp_path / "a.safetensors")
    with open_store(tmp_path / "a.safetensors") as store:
        os.truncate(tmp_path / "a.safetensors", 200_000)  # after opening: the header said 400,000 bytes of data
        with pytest.raises(FormatError, match="a.safetensors: changed on disk since it was opened"):
            stats_for(store.entry("w"), chunk_elements=10_000)


@pytest.mark.parametrize("name", ["sample_cnn.bpk", "sample_cnn.pt", "sample_cnn.safetensors"])
def test_every_reader_streams_the_same_statistics_as_its_values_read_whole(name):
    """Burnpack, PyTorch and SafeTensors tensors read from their files a chunk at a time summarize exactly as
    the arrays their readers return."""
    with open_store(SAMPLES / name) as store:
        for entry in store.entries:
            assert stats_for(entry, chunk_elements=97) == compute_stats(entry.read(), chunk_elements=97), entry.name
