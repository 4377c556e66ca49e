"""``diff``'s report row by row on real Burnpack files: what a row says for a tensor on one side only, for dtypes
whose values are not decoded, for empty tensors, for large equal ones and for the narrow-float arithmetic (issue
25: the whole run's survivors of ``diff``, ``_compare``, ``_values``, ``_same_bytes`` and ``_working_dtype``).

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
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from engine import open_store
from engine.surgery.diff import diff

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
