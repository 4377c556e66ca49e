"""Quantized tensors dequantized a chunk at a time give the whole dequantization's values, bit for bit.

Statistics, the histogram, ``read()`` and ``convert --dequantize`` read a quantized tensor's values through
``engine.values.chunked`` a run of values at a time (dequantizing 64 Mi Q2S values whole would peak at 1.2 GiB, more
than a user's machine may have). Each scheme below is checked with chunks of 7 values, which divide neither its blocks nor its u32
words, against ``whole``: the dequantization of the entire tensor at once, as the engine computed it before.
"""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from engine import FormatError, export, open_store
from engine import quantized as q
from engine.stats import compute_stats, stats_for
from engine.values.chunked import Dequantized, dequantized_values

from tests.helpers.formats_quantized_files import block, gen1, gen2, write

CHUNK = 7  # values: divides no block size, no row and no u32 word of packed values below
SCALE_TYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype(ml_dtypes.bfloat16),
               "UE4M3": np.dtype(ml_dtypes.float8_e4m3fn)}

SCHEMES = {  # id: (scheme, shape)
    "q8s-tensor-scale-gen1": (gen1("Q8S"), [37]),
    "q8s-native-tensor-scale": (gen2(store="Native"), [5, 7]),
    "q8s-blocks-of-2x3-as-runs-gen1": (gen1("Q8S", level={"Block": block(2, 3)}), [4, 6]),
    "q4s-packed-blocks-gen1": (gen1("Q4S", level={"Block": block(8)}), [4, 16]),
    "q2s-packed-blocks-of-32": (gen2("Q2S", blocks=(32,)), [3, 64]),
    "q2s-packed-rectangles-4x3": (gen2("Q2S", blocks=(4, 3)), [6, 32]),
    "q4s-two-level-f16": (gen2("Q4S", tensor="F32", blocks=(8,), block_dtype="F16"), [40]),
    "q8s-two-level-ue4m3-rectangles-3d": (gen2(store="Native", tensor="F32", blocks=(2, 4), block_dtype="UE4M3"),
                                          [3, 5, 6]),
    "q4s-native-bf16-blocks-not-dividing": (gen2("Q4S", store="Native", tensor=None, blocks=(5,),
                                                 block_dtype="BF16"), [23]),
    "q2s-rectangles-in-4d": (gen2("Q2S", blocks=(3, 2, 16)), [2, 5, 3, 16]),
}


def _stored_bytes(scheme_json: dict, shape: list[int], seed: int) -> bytes:
    """Random integers and scales (a few of them zero, read as 0.1) laid out as Burn stores them."""
    scheme = q.parse_scheme(scheme_json)
    rng = np.random.default_rng(seed)
    numel, bits = math.prod(shape), scheme.bits
    ints = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), size=numel)
    if scheme.store == "PackedU32" and bits < 8:
        per = 32 // bits
        fields = np.zeros(-(-numel // per) * per, np.uint64)
        fields[:numel] = ints & ((1 << bits) - 1)
        words = (fields.reshape(-1, per) << (np.arange(per, dtype=np.uint64) * bits)).sum(axis=1)
        values = words.astype("<u4").tobytes()
    else:
        values = ints.astype(np.int8).tobytes()
        values += bytes(-len(values) % 4 if scheme.store == "PackedU32" else 0)  # whole u32 words, as Burn pads
    count = q.scale_count(scheme, tuple(shape))
    scales = rng.uniform(0.01, 2.0, size=count)
    scales[::5] = 0.0
    raw = values + scales.astype(SCALE_TYPES[scheme.scale_dtype]).tobytes()
    return raw + (np.array([1.75], "<f4").tobytes() if scheme.two_level else b"")


def whole(parts: q.QuantizedValues, scheme: q.QuantScheme) -> np.ndarray:
    """Every value dequantized at once from the split integers and scales: each element's scale worked out
    for the whole tensor (runs of the flat values in generation 1, rectangles in generation 2)."""
    scales = parts.scales.astype(np.float32)
    if parts.global_scale is not None:
        scales = np.float32(parts.global_scale) * scales
    scales = np.where(scales == 0, np.float32(q.ZERO_SCALE), scales).astype(np.float32)
    values = parts.values.astype(np.float32)
    if scheme.block is None:
        return scales[0] * values
    if scheme.generation == 1:
        return np.repeat(scales, math.prod(scheme.block)).reshape(values.shape) * values
    dims = q.block_dims(scheme.block, values.ndim)
    grid = scales.reshape(tuple(-(-n // b) for n, b in zip(values.shape, dims)))
    for axis, (n, b) in enumerate(zip(values.shape, dims)):
        grid = np.repeat(grid, b, axis=axis).take(np.arange(n), axis=axis)
    return grid * values


def _bits(array: np.ndarray) -> list[int]:
    return np.ascontiguousarray(array, np.float32).reshape(-1).view(np.uint32).tolist()


@pytest.fixture(params=list(SCHEMES), ids=list(SCHEMES))
def quantized_file(request, tmp_path) -> tuple[Path, q.QuantScheme]:
    scheme_json, shape = SCHEMES[request.param]
    raw = _stored_bytes(scheme_json, shape, seed=len(request.param))
    return write(tmp_path, {"w": ({"QFloat": scheme_json}, shape, raw)}), q.parse_scheme(scheme_json)


def test_chunks_of_seven_values_are_the_whole_dequantization_bit_for_bit(quantized_file):
    path, scheme = quantized_file
    with open_store(path) as store:
        entry = store.entry("w")
        expected = whole(store.read_quantized("w"), scheme)
        values = dequantized_values(entry)
        read = values.reader(CHUNK)
        chunks = [read(start, min(values.size, start + CHUNK)).copy() for start in range(0, values.size, CHUNK)]
        assert _bits(np.concatenate(chunks)) == _bits(expected)
        assert np.count_nonzero(expected) > values.size // 2  # real values, not a tensor of zeros
        assert store.read("w").shape == expected.shape and _bits(store.read("w")) == _bits(expected)


def test_statistics_read_in_chunks_are_those_of_the_whole_dequantized_tensor(quantized_file):
    path, scheme = quantized_file
    with open_store(path) as store:
        expected = whole(store.read_quantized("w"), scheme)
        assert stats_for(store.entry("w"), chunk_elements=CHUNK) == compute_stats(expected, chunk_elements=CHUNK)


def test_a_dequantizing_export_writes_the_whole_dequantization_step_by_step(quantized_file, tmp_path):
    path, scheme = quantized_file
    with open_store(path) as store:
        expected = whole(store.read_quantized("w"), scheme)
        steps = list(Dequantized(store.entry("w")).iter_bytes(chunk_size=4 * CHUNK))
        assert {len(step) for step in steps[:-1]} == {4 * CHUNK}
        assert b"".join(steps) == expected.astype("<f4").tobytes()
        out = export(store.entries, tmp_path / "out.safetensors", dequantize=True)
    with open_store(out) as written:
        assert _bits(written.read("w")) == _bits(expected)


def test_a_chunk_spans_blocks_of_every_size_including_a_short_last_one():
    """Values 0..23 of 23 under blocks of 5: a chunk from the middle of one block to the middle of the fourth."""
    scheme_json, shape = SCHEMES["q4s-native-bf16-blocks-not-dividing"]
    raw = bytes(range(1, 24)) + np.array([1, 2, 4, 8, 0.5], ml_dtypes.bfloat16).tobytes()
    values = q.DequantizedValues(q.parse_scheme(scheme_json), tuple(shape), len(raw), lambda at, n: raw[at:at + n])
    # Native Q4S keeps one i8 a value: 1..23 as stored, each times its block's scale
    assert values.values(3, 17).tolist() == [4, 5, 12, 14, 16, 18, 20, 44, 48, 52, 56, 60, 128, 136]
    assert values.values(20, 23).tolist() == [10.5, 11, 11.5]


def test_reading_values_burn_cannot_decode_is_refused_naming_the_tensor_and_why(tmp_path):
    path = write(tmp_path, {"w": ({"QFloat": gen2("E4M3", store="Native")}, [4], bytes(4) + bytes(4))})
    with open_store(path) as store, pytest.raises(FormatError) as refused:
        store.read("w")
    assert str(refused.value) == (f"{path.name}: tensor 'w': E4M3 values are not decoded by Burn's QuantizedBytes "
                                  "(burn-std quantization.rs:344-346 at main)")
