"""diff streams raw tensors through a reused cache-sized buffer per side, in float32 where both sides are
narrow floats: the numbers must still be float64's, and a file changed mid-diff must still be caught (issue 23)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import ArrayStore, FormatError, open_store
from engine.surgery import diff

N = 10_000  # 7 chunks of 1,500 elements: every buffer is reused


def reference(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(d.max()), float(d.mean())


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32])
def test_chunked_diff_of_files_matches_float64_arithmetic(tmp_path, dtype):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(N) * 100).astype(dtype)
    b = a.copy()
    b[rng.choice(N, 500, replace=False)] += dtype(3)  # some chunks equal (skipped), others differ
    b[9_999] += dtype(50)  # the largest difference in the last chunk: a reused buffer must not hide it
    save_file({"w": a, "same": a}, tmp_path / "a.safetensors")
    save_file({"w": b, "same": a}, tmp_path / "b.safetensors")
    with open_store(tmp_path / "a.safetensors") as x, open_store(tmp_path / "b.safetensors") as y:
        report = diff(x, y, chunk_elements=1_500)
    by = {t.name: t for t in report.tensors}
    largest, mean = reference(a, b)
    assert by["same"].status == "identical" and by["w"].status == "different"
    assert by["w"].max_abs == pytest.approx(largest, rel=1e-6) and by["w"].mean_abs == pytest.approx(mean, rel=1e-6)
    assert by["w"].allclose is False


def test_overflow_nan_and_infinity_in_float32_are_judged_in_float64(tmp_path):
    a = np.zeros(N, np.float32)
    b = np.zeros(N, np.float32)
    a[10], b[10] = 3e38, -3e38  # the difference overflows float32, not float64
    a[20] = b[20] = np.nan  # NaN against NaN: equal
    a[30] = b[30] = np.inf  # an infinity against itself: equal
    save_file({"w": a}, tmp_path / "a.safetensors")
    save_file({"w": b}, tmp_path / "b.safetensors")
    with open_store(tmp_path / "a.safetensors") as x, open_store(tmp_path / "b.safetensors") as y:
        (t,) = diff(x, y, chunk_elements=1_500).tensors
    assert t.status == "different" and t.max_abs == pytest.approx(6e38) and t.mean_abs == pytest.approx(6e38 / N)


def test_a_file_truncated_during_a_chunked_diff_says_it_changed(tmp_path):
    save_file({"w": np.arange(N, dtype=np.float32)}, tmp_path / "a.safetensors")
    save_file({"w": np.arange(N, dtype=np.float32) + 1}, tmp_path / "b.safetensors")
    progress = []
    with open_store(tmp_path / "a.safetensors") as x, open_store(tmp_path / "b.safetensors") as y:
        os.truncate(tmp_path / "b.safetensors", 20_000)  # after opening: the header said 40,000 bytes of data
        with pytest.raises(FormatError, match="b.safetensors: changed on disk since it was opened"):
            diff(x, y, chunk_elements=1_500, progress=lambda done, total: progress.append(done))
    assert progress == []


def test_a_plan_tensor_that_changes_bytes_is_read_whole_and_compares_by_value(tmp_path):
    from engine.surgery import Recipe, plan
    values = np.arange(N, dtype=np.float32).reshape(100, 100)
    save_file({"fc.weight": values, "fc.bias": values[0]}, tmp_path / "a.safetensors")
    with open_store(tmp_path / "a.safetensors") as x:
        planned = plan([x], Recipe(adapters=("pytorch-to-burn",)))
        assert {t.name: t.changes_bytes for t in planned.tensors} == {"fc.weight": True, "fc.bias": False}
        report = diff(planned, ArrayStore({"fc.weight": values.T, "fc.bias": values[0]}), chunk_elements=1_500)
    assert report.all_identical, report.tensors


@pytest.mark.parametrize("dtype, count", [(np.float32, 200_000), (np.float16, 100_001), (np.uint8, 100_003)])
def test_chunks_past_the_small_compare_tell_equal_bytes_from_one_changed_value(tmp_path, dtype, count):
    """Chunks over 64 KiB are compared as 8-byte words where their size allows, else byte by byte: a
    single value changed past the first kilobytes, in the last word or the odd bytes after it, is found."""
    values = (np.arange(count) % 200).astype(dtype)
    changed = values.copy()
    changed[-1] += dtype(1)
    save_file({"w": values}, tmp_path / "a.safetensors")
    save_file({"w": values.copy()}, tmp_path / "same.safetensors")
    save_file({"w": changed}, tmp_path / "changed.safetensors")
    with open_store(tmp_path / "a.safetensors") as a, open_store(tmp_path / "same.safetensors") as same, \
            open_store(tmp_path / "changed.safetensors") as other:
        assert diff(a, same).tensors[0].status == "identical"
        (t,) = diff(a, other).tensors
        assert t.status == "different" and t.max_abs == 1.0 and t.mean_abs == pytest.approx(1 / count)
        assert diff(a, other, values=False).tensors[0].status == "different"
