"""Burn's own quantization as an export item (engine/quantize.py, issue 43 item 4): float weights quantized with
Burn's min-max calibration, so Burn's ``dequantize`` of the written Burnpack gives what ``quantize_dynamic`` would.

Checked against a reference written here independently of the engine, one block at a time in f32 scalars:
alpha = max(|min|, |max|), scale = 2 * alpha / (b - a), rounded up onto f16 for F16 scales (Burn main), a zero
scale divided as 0.1, q = clamp(round(x / scale), a, b) with ties away from zero (Rust's f32::round), decided in
exact rational arithmetic. Then a real round trip: SafeTensors in, Burnpack out through ``export``, read back by
the app, bit for bit, for Burn 0.20, 0.21 and 0.22. A wrong rule here is a model whose quantized weights differ from
the ones Burn itself would have produced.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import safetensors.numpy

from engine import export, open_store
from engine.burn_versions import BurnVersion
from engine.dtypes import F16, F32, I32
from engine.errors import ExportError
from engine.quantize import quantizable, quantize_rows
from engine.values.chunked import Quantized

RANGES = {"Q8S": 127, "Q4S": 7, "Q2S": 1}


# --- the reference ----------------------------------------------------------------------------------------------

def rust_round(y: np.float32) -> int:
    """f32::round: nearest integer, half-way away from zero, decided exactly."""
    exact = Fraction(float(y))
    magnitude = math.floor(abs(exact) + Fraction(1, 2))
    return -magnitude if exact < 0 else magnitude


def f16_round_up(s: np.float32) -> np.float32:
    """The smallest f16 not below s (s >= 0), saturating at f16's maximum: through numpy's f16 cast, stepping up a
    value when the nearest one fell below."""
    if s >= np.float32(65504.0):
        return np.float32(65504.0)
    h = np.float16(s)
    if np.float32(h) < s:
        h = np.nextafter(h, np.float16(np.inf), dtype=np.float16)
    return np.float32(h)


def reference(values: np.ndarray, value: str, block: int, scale_dtype: str) -> tuple[np.ndarray, np.ndarray]:
    bound = RANGES[value]
    rows, last = values.shape
    q = np.zeros((rows, last), np.int8)
    scales = np.zeros((rows, last // block), np.float32)
    for r in range(rows):
        for k in range(last // block):
            xs = [np.float32(v) for v in values[r, k * block:(k + 1) * block]]
            alpha = max(abs(min(xs)), abs(max(xs)))
            scale = np.float32(np.float32(2.0) * alpha) / np.float32(2 * bound)
            if scale_dtype == "F16":
                scale = f16_round_up(scale)
            scales[r, k] = scale
            divisor = np.float32(0.1) if scale == 0 else scale
            for j, x in enumerate(xs):
                q[r, k * block + j] = max(-bound, min(bound, rust_round(np.float32(x / divisor))))
    return q, scales


def dequantized(q: np.ndarray, scales: np.ndarray, block: int) -> np.ndarray:
    """Burn's dequantize: f32(scale) * f32(q), a zero scale read as 0.1."""
    s = np.where(scales == 0, np.float32(0.1), scales).astype(np.float32)
    return (np.repeat(s, block, axis=1) * q.astype(np.float32)).astype(np.float32)


def cases(seed: int, rows: int, last: int, block: int) -> np.ndarray:
    """Random rows, with an all-zero block, a negative-only block, a positive-only block and tiny values."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, last)) * rng.uniform(0.01, 10, (rows, 1))).astype(np.float32)
    x[0, :block] = 0
    x[1, block:2 * block] = -np.abs(x[1, block:2 * block])
    x[2, :block] = np.abs(x[2, :block])
    x[3, :block] *= np.float32(1e-6)
    return x


# --- quantize_rows ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scale_dtype", ["F32", "F16"])
@pytest.mark.parametrize("block", [32, 64])
@pytest.mark.parametrize("value", ["Q8S", "Q4S", "Q2S"])
def test_quantize_rows_equals_the_reference_bit_for_bit(value, block, scale_dtype):
    x = cases(block + len(value) + len(scale_dtype), 5, 128, block)
    q, s = quantize_rows(x, value, block, scale_dtype)
    want_q, want_s = reference(x, value, block, scale_dtype)
    assert q.dtype == np.int8 and q.shape == x.shape
    assert s.dtype == np.float32 and s.shape == (5, 128 // block)
    assert q.tobytes() == want_q.tobytes()
    assert s.tobytes() == want_s.tobytes()
    assert not q[0, :block].any() and s[0, 0] == 0  # an all-zero block: zero scale stored, zero values
    assert (q[1, block:2 * block] <= 0).all() and q[1, block:2 * block].min() == -RANGES[value]


@pytest.mark.parametrize("scale_dtype", ["F32", "F16"])
def test_ties_round_away_from_zero_as_rust_does(scale_dtype):
    # alpha = 127 (Q8S), 7 (Q4S), 1 (Q2S): the scale is exactly 1.0, so x / scale is x itself
    q8 = np.array([[127, 2.5, -3.5, 0.5, -0.5, 126.5, -1.5, 0.49999997]], np.float32)
    q, s = quantize_rows(q8, "Q8S", 8, scale_dtype)
    assert s.tolist() == [[1.0]]
    assert q.tolist() == [[127, 3, -4, 1, -1, 127, -2, 0]]  # numpy's rint would give 2, -4, 0, -0, 126, -2
    q, _ = quantize_rows(np.array([[7, 1.5, -2.5, 0.5, -0.5, 6.5, -6.5, 3.5]], np.float32), "Q4S", 8, scale_dtype)
    assert q.tolist() == [[7, 2, -3, 1, -1, 7, -7, 4]]
    q, _ = quantize_rows(np.array([[1, -0.5, 0.5, 0.49999997]], np.float32), "Q2S", 4, scale_dtype)
    assert q.tolist() == [[1, -1, 1, 0]]
    # scale 0.5 (alpha 63.5): x = 0.25 is exactly half a step
    q, s = quantize_rows(np.array([[63.5, 0.25, -0.75, 0.0]], np.float32), "Q8S", 4, scale_dtype)
    assert s.tolist() == [[0.5]] and q.tolist() == [[127, 1, -2, 0]]
    assert q.tobytes() == reference(np.array([[63.5, 0.25, -0.75, 0.0]], np.float32), "Q8S", 4, scale_dtype)[0].tobytes()


def test_burns_own_int8_example():
    """burn-ndarray ops/quantization.rs:163-177 (main): [-1.8, -1.0, 0.0, 0.5] -> [-127, -71, 0, 35], which
    dequantize to [-1.8, -1.0062993, 0.0, 0.496063]."""
    q, s = quantize_rows(np.array([[-1.8, -1.0, 0.0, 0.5]], np.float32), "Q8S", 4, "F32")
    assert q.tolist() == [[-127, -71, 0, 35]]
    assert dequantized(q, s, 4).tolist() == np.array([[-1.8, -1.0062993, 0.0, 0.496063]], np.float32).tolist()


def test_f16_scales_are_rounded_up_before_dividing():
    # alpha 1.0 -> scale 2/254 = 0.007874016, not an f16: stored as the next f16 up, and values divided by that
    x = np.array([[1.0, -0.5, 0.25, 0.1]], np.float32)
    q, s = quantize_rows(x, "Q8S", 4, "F16")
    raw = np.float32(2.0) / np.float32(254.0)
    assert s[0, 0] > raw and np.float32(np.float16(s[0, 0])) == s[0, 0]
    assert np.float32(np.nextafter(np.float16(s[0, 0]), np.float16(0))) < raw
    assert q.tolist() == [[rust_round(np.float32(v / s[0, 0])) for v in x[0]]]
    assert q[0, 0] == 127  # rounding up never clips the block's largest value
    # saturation: a scale beyond f16's range is stored as its maximum
    _, big = quantize_rows(np.array([[1e7, 0, 0, 0]], np.float32), "Q8S", 4, "F16")
    assert big.tolist() == [[65504.0]]


def test_refusals():
    with pytest.raises(ValueError, match="not a multiple of the block"):
        quantize_rows(np.zeros((2, 48), np.float32), "Q8S", 32, "F32")
    with pytest.raises(ValueError, match="not finite"):
        quantize_rows(np.array([[np.nan, 1, 2, 3]], np.float32), "Q8S", 4, "F32")
    assert quantizable(F32, (4, 64), 32, "Q4S") is None
    assert quantizable(F16, (64,), 32, "Q8S") is None
    assert "multiple of the block" in quantizable(F32, (4, 48), 32, "Q8S")
    assert "not a float" in quantizable(I32, (4, 64), 32, "Q8S")
    assert "scalar" in quantizable(F32, (), 32, "Q8S")
    assert "u32 words" in quantizable(F32, (4, 12), 4, "Q4S")
    assert quantizable(F32, (4, 12), 4, "Q8S") is None
    assert "1 to 255" in quantizable(F32, (4, 512), 256, "Q8S")


# --- export round trip -----------------------------------------------------------------------------------------

SHAPES = {"enc.weight": (6, 128), "dec.weight": (3, 2, 64), "enc.bias": (64,)}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    rng = np.random.default_rng(43)
    tensors = {name: (rng.standard_normal(shape) * 3).astype(np.float32) for name, shape in SHAPES.items()}
    tensors["enc.weight"][1, :32] = 0  # an all-zero block
    tensors["enc.weight"][2, 32:64] = -np.abs(tensors["enc.weight"][2, 32:64])
    path = tmp_path_factory.mktemp("src") / "model.safetensors"
    safetensors.numpy.save_file(tensors, str(path))
    return path, tensors


@pytest.mark.parametrize("version", [BurnVersion.V0_20, BurnVersion.V0_21, BurnVersion.V0_22])
@pytest.mark.parametrize("value", ["Q8S", "Q4S", "Q2S"])
def test_a_quantized_burnpack_reads_back_as_burns_dequantize(source, tmp_path, version, value):
    path, tensors = source
    block = 32
    scale_dtype = "F16" if version is BurnVersion.V0_22 else "F32"
    out = tmp_path / "q.bpk"
    with open_store(path) as store:
        # a small chunk size: the tensor is quantized a row or two at a time
        items = [Quantized(store.entry(name), value, block, version) for name in SHAPES]
        chunks = [len(c) for c in items[0].iter_bytes(chunk_size=128 * 4 * 2)]
        assert len(chunks) == 4  # three steps of two rows, then the scales
        export(items, out, burn_version=version)
    with open_store(out) as back:
        for name, shape in SHAPES.items():
            x = tensors[name].reshape(-1, shape[-1])
            want_q, want_s = reference(x, value, block, scale_dtype)
            entry = back.entry(name)
            assert tuple(entry.shape) == shape
            scheme = entry.dtype.quant_scheme
            assert (scheme.generation, scheme.value, scheme.block, scheme.scale_dtype, scheme.store) == \
                (2 if version is BurnVersion.V0_22 else 1, value, (block,), scale_dtype, "PackedU32")
            got = back.read(name)
            assert got.dtype == np.float32 and got.shape == shape
            assert got.tobytes() == dequantized(want_q, want_s, block).reshape(shape).tobytes(), name
            stored = back.read_quantized(name)  # the integers and scales as stored
            assert stored.values.reshape(-1, shape[-1]).tobytes() == want_q.tobytes()
            assert stored.scales.tobytes() == want_s.reshape(-1).tobytes()
            assert entry.nbytes == x.size * {"Q8S": 8, "Q4S": 4, "Q2S": 2}[value] // 8 + \
                x.size // block * (2 if scale_dtype == "F16" else 4)


def test_a_tensor_that_cannot_be_quantized_is_refused_by_name(source):
    path, _ = source
    with open_store(path) as store, pytest.raises(ValueError, match="'enc.bias'.*multiple of the block"):
        Quantized(store.entry("enc.bias"), "Q8S", 48, BurnVersion.V0_22)


def test_non_finite_values_stop_the_export_naming_the_tensor(tmp_path):
    src = tmp_path / "bad.safetensors"
    bad = np.ones((2, 32), np.float32)
    bad[1, 3] = np.inf
    safetensors.numpy.save_file({"w": bad}, str(src))
    out = tmp_path / "out.bpk"
    with open_store(src) as store, pytest.raises(ExportError, match="'w'.*not finite"):
        export([Quantized(store.entry("w"), "Q8S", 32, BurnVersion.V0_22)], out)
    assert not out.exists()
