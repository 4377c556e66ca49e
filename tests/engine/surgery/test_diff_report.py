"""``diff``'s report row by row on real Burnpack files: what a row says for a tensor on one side only, for dtypes
whose values are not decoded, for empty tensors, for large equal ones and for the narrow-float arithmetic; how
it streams large files, and the numbers it shows for half-precision floats and infinities. A user would lose a
diff they can trust: rows saying identical where values differ, or numbers that are not float64's.

Promises (README "Diff": tensor by tensor, values included; identical / different / only in A / only in B / shape
or dtype mismatch; max and mean absolute difference and allclose; a dtype whose values are not decoded is compared
byte for byte) ->
- a tensor on one side only names its dtype and shape on that side ->
  ``test_a_tensor_on_one_side_only_names_its_dtype_and_shape``
- values that are not decoded compare byte for byte: identical, different, or a dtype mismatch with no statistics ->
  ``test_undecoded_values_compare_byte_for_byte``
- an empty tensor compares identical with zero differences -> ``test_empty_tensors_are_identical_with_zero_differences``
- equal bytes are identical whatever their size; one differing byte past the first kilobyte is found ->
  ``test_large_tensors_compare_by_their_bytes``
- a narrow float (float32, bfloat16) against another is compared in float32, anything else in float64 ->
  ``test_narrow_floats_subtract_in_float32_and_the_rest_in_float64``
- overflowing and non-finite values are compared without a warning (no flood) ->
  ``test_overflow_and_infinities_compare_without_warnings``

Streaming: ``diff`` reads raw tensors through a reused cache-sized buffer per side, in float32 where both sides
are narrow floats; the numbers must still be float64's, and a file changed mid-diff must still be caught.

Half-precision floats and infinities (README "diff": max and mean absolute difference and allclose per pair; an
infinity against the same infinity is equal) ->
- float16 and bfloat16 values differ by their exact difference (2048 - 1 is no float16), as numpy.allclose
  computes it in float32 -> ``test_half_floats_differ_by_their_exact_difference``
- an infinity against the same infinity differs by 0 -> ``test_an_infinity_against_itself_adds_nothing``

Values that are not decoded, on Burnpack files laid out as Burn writes them (README "Limits", "Command line"):
quantized schemes Burn cannot decode are listed and copied, never read as values; a diff still tells identical
from different by their bytes -> ``test_undecoded_quantized_tensors_compare_by_their_bytes``
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch
from safetensors.numpy import save_file
from safetensors.torch import save_file as save_torch_file

from engine import ArrayStore, FormatError, open_store
from engine.surgery import diff
from tests.helpers.formats_quantized_files import f32, gen2, i8, write

NAMES = {np.dtype("<f4"): "F32", np.dtype("<i2"): "I16", np.dtype("<f2"): "F16", np.dtype(np.uint8): "U8",
         np.dtype(ml_dtypes.bfloat16): "BF16"}


def bpk(tmp_path, name: str, arrays: dict[str, np.ndarray]) -> Path:
    return write(tmp_path, {k: (NAMES[a.dtype], list(a.shape), a.tobytes()) for k, a in arrays.items()}, name)


def rows(a: Path, b: Path, **options) -> list[dict]:
    with open_store(a) as sa, open_store(b) as sb:
        return [t.to_json() for t in diff(sa, sb, **options).tensors]


def test_a_tensor_on_one_side_only_names_its_dtype_and_shape(tmp_path):
    a = bpk(tmp_path, "a.bpk", {"only_a": np.zeros((2, 3), "<i2"), "both": np.ones(2, "<f4")})
    b = bpk(tmp_path, "b.bpk", {"both": np.ones(2, "<f4"), "only_b": np.zeros(4, "<f2")})
    with open_store(a) as sa, open_store(b) as sb:
        report = diff(sa, sb)
    assert report.to_json() == {
        "tensors": [
            {"name": "only_a", "status": "only_in_a", "dtype_a": "I16", "shape_a": [2, 3]},
            {"name": "both", "status": "identical", "dtype_a": "F32", "dtype_b": "F32", "max_abs": 0.0,
             "mean_abs": 0.0, "allclose": True, "shape_a": [2], "shape_b": [2]},
            {"name": "only_b", "status": "only_in_b", "dtype_b": "F16", "shape_b": [4]}],
        "summary": {"identical": 1, "different": 0, "only_in_a": 1, "only_in_b": 1, "shape_mismatch": 0,
                    "dtype_mismatch": 0, "total": 3}}
    assert not report.all_identical


def test_undecoded_values_compare_byte_for_byte(tmp_path):
    e4m3, e5m2 = {"QFloat": gen2("E4M3", store="Native")}, {"QFloat": gen2("E5M2", store="Native")}
    raw, other = i8(1, 2, 3, 4) + f32(1.0), i8(1, 2, 3, 5) + f32(1.0)
    a = write(tmp_path, {"same": (e4m3, [4], raw), "changed": (e4m3, [4], raw), "scheme": (e4m3, [4], raw),
                         "float": (e4m3, [4], raw), "shape": (e4m3, [4], raw)}, "a.bpk")
    b = write(tmp_path, {"same": (e4m3, [4], raw), "changed": (e4m3, [4], other), "scheme": (e5m2, [4], raw),
                         "float": ("F32", [4], f32(1, 2, 3, 4)), "shape": ("F32", [2], f32(1, 2))}, "b.bpk")
    base = {"dtype_a": "QFLOAT", "shape_a": [4]}
    assert rows(a, b) == [
        {"name": "same", "status": "identical", **base, "dtype_b": "QFLOAT", "shape_b": [4]},
        {"name": "changed", "status": "different", **base, "dtype_b": "QFLOAT", "shape_b": [4]},
        {"name": "scheme", "status": "dtype_mismatch", **base, "dtype_b": "QFLOAT", "shape_b": [4]},
        {"name": "float", "status": "dtype_mismatch", **base, "dtype_b": "F32", "shape_b": [4]},
        {"name": "shape", "status": "shape_mismatch", **base, "dtype_b": "F32", "shape_b": [2]}]


@pytest.mark.parametrize("values", [True, False])
def test_empty_tensors_are_identical_with_zero_differences(tmp_path, values):
    a = bpk(tmp_path, "a.bpk", {"e": np.zeros(0, "<f4")})
    b = bpk(tmp_path, "b.bpk", {"e": np.zeros(0, "<f4")})
    stats = {"max_abs": 0.0, "mean_abs": 0.0, "allclose": True} if values else {}
    assert rows(a, b, values=values) == [{"name": "e", "status": "identical", "dtype_a": "F32", "dtype_b": "F32",
                                          **stats, "shape_a": [0], "shape_b": [0]}]


@pytest.mark.parametrize("values", [True, False])
def test_large_tensors_compare_by_their_bytes(tmp_path, values):
    """72,009 bytes (9 x 8,001, one past a multiple of 8) and 80,000 (a multiple of 8): over the 64 KiB up to which
    bytes compare as one string, one size compared byte by byte and the other eight bytes at a time."""
    odd = np.arange(72_009, dtype=np.uint8)
    even = np.linspace(-1, 1, 20_000, dtype="<f4")
    late = even.copy()
    late[19_999] = 2.0  # far past the first kilobyte
    a = bpk(tmp_path, "a.bpk", {"odd": odd, "even": even, "late": even})
    b = bpk(tmp_path, "b.bpk", {"odd": odd, "even": even, "late": late})
    got = [(row["name"], row["status"], row.get("max_abs")) for row in rows(a, b, values=values)]
    assert got == [("odd", "identical", 0.0 if values else None), ("even", "identical", 0.0 if values else None),
                   ("late", "different", 1.0 if values else None)]


@pytest.mark.parametrize(("other", "rounded"), [
    (np.array([1000], ml_dtypes.bfloat16), True),  # bfloat16 is narrow: float32 rounds 1000 - 1e-8 to 1000
    (np.array([1000], "<f4"), True),
    (np.array([1000], "<i2"), False),  # int16 is not a float: float64 keeps the 1e-8
], ids=["bfloat16", "float32", "int16"])
def test_narrow_floats_subtract_in_float32_and_the_rest_in_float64(tmp_path, other, rounded):
    small = np.array([1e-8], "<f4")
    a = bpk(tmp_path, "a.bpk", {"w": small})
    b = bpk(tmp_path, "b.bpk", {"w": other})
    (row,) = rows(a, b)
    expected = 1000.0 if rounded else 1000.0 - float(small[0])
    assert (row["max_abs"], row["mean_abs"]) == (expected, expected)
    assert row["status"] == ("different" if other.dtype == small.dtype else "dtype_mismatch")


def test_overflow_and_infinities_compare_without_warnings(tmp_path):
    big = np.float32(3e38)
    a = bpk(tmp_path, "a.bpk", {"w": np.array([big, np.inf, np.nan, 1.0], "<f4")})
    b = bpk(tmp_path, "b.bpk", {"w": np.array([-big, np.inf, np.nan, 1.0], "<f4")})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (row,) = rows(a, b)
    assert (row["status"], row["max_abs"], row["allclose"]) == ("different", 2 * float(big), False)


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


def _row(tmp_path, a: torch.Tensor, b: torch.Tensor):
    save_torch_file({"w": a}, str(tmp_path / "a.safetensors"))
    save_torch_file({"w": b}, str(tmp_path / "b.safetensors"))
    with open_store(tmp_path / "a.safetensors") as sa, open_store(tmp_path / "b.safetensors") as sb:
        (row,) = diff(sa, sb, values=True).tensors
    return row


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_floats_differ_by_their_exact_difference(tmp_path, dtype):
    a = torch.tensor([2048.0, 0.0], dtype=dtype)  # 2048 - 1 = 2047 is not a float16 (nor a bfloat16)
    b = torch.tensor([1.0, 0.0], dtype=dtype)
    row = _row(tmp_path, a, b)
    assert (row.status, row.max_abs, row.mean_abs, row.allclose) == ("different", 2047.0, 1023.5, False)


def test_an_infinity_against_itself_adds_nothing(tmp_path):
    inf = float("inf")
    row = _row(tmp_path, torch.tensor([inf, -inf, 1.0, 1.0]), torch.tensor([inf, -inf, 1.5, 1.0]))
    assert (row.status, row.max_abs, row.mean_abs, row.allclose) == ("different", 0.5, 0.125, False)


E4M3 = {"QFloat": gen2("E4M3", store="Native")}  # float8 values: Burn's QuantizedBytes does not decode them


E5M2 = {"QFloat": gen2("E5M2", store="Native")}


def test_undecoded_quantized_tensors_compare_by_their_bytes(tmp_path: Path) -> None:
    one = i8(1, 2, 3, 4) + f32(1.0)
    a = write(tmp_path, {name: (E4M3, [4], one) for name in ("same", "changed", "scale", "kind")}, "a.bpk")
    b = write(tmp_path, {"same": (E4M3, [4], one), "changed": (E4M3, [4], i8(1, 2, 3, 5) + f32(1.0)),
                         "scale": (E4M3, [4], i8(1, 2, 3, 4) + f32(2.0)), "kind": (E5M2, [4], one)}, "b.bpk")
    with open_store(a) as sa, open_store(b) as sb:
        rows = {row.name: row for row in diff(sa, sb, values=True).tensors}
        assert {name: row.status for name, row in rows.items()} == {
            "same": "identical", "changed": "different", "scale": "different", "kind": "dtype_mismatch"}
        assert all(row.max_abs is None and row.allclose is None for row in rows.values())  # no values were read
        assert [row.status for row in diff(sa, sa, values=False).tensors] == ["identical"] * 4


def test_a_changed_tensor_carries_its_relative_change_as_the_l2_norms_give_it(tmp_path):
    """||a - b|| / ||a|| over every value, the unchanged chunks of a counted too (chunks of 1,000 values here, so
    most of ``w`` is skipped as byte-equal); identical tensors carry none. A merged LoRA adapter is read so."""
    rng = np.random.default_rng(3)
    a = {"w": rng.standard_normal((100, 100)).astype(np.float32), "same": np.ones(8, np.float32)}
    b = {"w": a["w"].copy(), "same": a["same"]}
    b["w"][:5] += np.float32(0.25)  # the first 500 values change; the other 9,500 are byte-equal chunks
    save_file(a, tmp_path / "a.safetensors")
    save_file(b, tmp_path / "b.safetensors")
    want = np.linalg.norm((a["w"] - b["w"]).astype(np.float64)) / np.linalg.norm(a["w"].astype(np.float64))
    with open_store(tmp_path / "a.safetensors") as x, open_store(tmp_path / "b.safetensors") as y:
        report = diff(x, y, chunk_elements=1000)
    by_name = {t.name: t for t in report.tensors}
    assert by_name["w"].relative_change == pytest.approx(want, rel=1e-6)
    assert by_name["same"].relative_change is None
    assert by_name["w"].to_json()["relative_change"] == by_name["w"].relative_change
    assert "relative_change" not in by_name["same"].to_json()
