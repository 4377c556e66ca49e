"""Burn's own quantization of float weights (``convert IN OUT.bpk --quantize q8s|q4s|q2s``): the arithmetic, the
packing and which tensors an export quantizes; ``values.chunked.Quantized`` is the export item that uses them.

A tensor is quantized the way Burn's ``quantize_dynamic`` does it on its reference backend (burn-ndarray), so
Burn's ``dequantize`` of the written file gives what ``tensor.quantize_dynamic(&scheme)`` would have. Every rule is
read from Burn's source; ``file:line`` at the tag named (0.20 = v0.20.0, 0.21 = v0.21.0, main = what this app calls
Burn 0.22, scheme generation 2):

- ``quantize_dynamic`` = ``compute_range`` (MinMax) then ``compute_q_params`` then the backend's ``quantize``
  (burn-backend ``backend/ops/qtensor.rs:138-143`` at 0.20, ``:147-152`` at 0.21, ``:144-149`` at main).
- ``compute_range``: per block, the min and the max of its values (burn-backend
  ``tensor/quantization/scheme.rs:14-36`` at 0.20 and 0.21: the tensor reshaped to ``[numel / block, block]``, runs
  of the flat values; ``quantization/scheme.rs:50-55, 14-41`` at main: rectangles, which for a block ``(N,)`` are
  runs of N along the last dimension, the same values).
- ``compute_q_params``: ``alpha = max(|min|, |max|)`` (``mask_where(|min|, |min| < |max|, |max|)``), then
  ``scale = (alpha * 2) / (b - a)``, each an f32 tensor op (scheme.rs ``:54-67`` at 0.20, ``:55-68`` at 0.21,
  ``:82-93`` at main; burn-ndarray ``ops/base.rs:903-908`` at main divides, not multiplies by an inverse).
  ``(a, b)`` is ``QuantValue::range``: Q8S ``(-127, 127)``, Q4S ``(-7, 7)``, Q2S ``(-1, 1)`` (cubecl-common
  ``quant/scheme.rs:166-178`` at 0.9.0 and 0.10.0, ``:399-411`` at 48348968, which Burn main pins).
- burn-ndarray ``quantize``: at main the scale is first rounded UP onto the scheme's scale dtype
  (``ops/qtensor.rs:89-95``, ``scale_to_dtype`` in burn-std ``tensor/quantization.rs:355-368``,
  ``ScaleDtype::round_up`` in cubecl-common 48348968 ``quant/scheme.rs:235-270, 289-296``), so values are divided
  by the scale that is stored; 0.20 and 0.21 use the f32 scale as computed (``ops/qtensor.rs:91, 139-152`` at
  0.20, ``:93, 141-154`` at 0.21), and those versions store F32 scales only (``quantized.inexpressible``).
- each value: ``x_q = clamp(round(x / scale), a, b)`` with ``valid_scale`` reading a zero scale as 0.1
  (burn-ndarray ``ops/quantization.rs:79-86, 129-134`` at 0.20 and 0.21, ``:78-85, 128-133`` at main; the
  strategy is ``SymmetricQuantization::init(s)`` at ``ops/qtensor.rs:144`` (0.20), ``:146`` (0.21), ``:531``
  (main)). ``round`` is Rust's ``f32::round``: half-way cases away from zero (not numpy's half to even).
- stored: the scale before ``valid_scale`` (``QParams { scales: s }`` and ``TensorData::quantized(.., scales)``,
  ``ops/qtensor.rs:145, 152`` at 0.20, ``:147, 154`` at 0.21; ``quantize_per_block`` returns ``s`` at main), which
  Burn's ``dequantize`` reads back as 0.1 when zero (``quantized.ZERO_SCALE``); an all-zero block quantizes to 0s.

The bytes are Burn's QFloat layout (``engine/quantized.py``): every value (Q8S one i8 each; Q4S and Q2S packed
32/bits to a little-endian u32, first value in the lowest bits, as ``quantized.unpack_values`` reads them), then
every block's scale in the scale dtype. Memory holds a few rows of values at a time (at least one row), and the
scales (1/block of the values) until the values are written.

Backends differ where this follows burn-ndarray: burn-flex at main (burn-flex ``ops/qtensor.rs:67-142``)
multiplies by ``1 / scale`` and replaces a zero scale by the smallest positive one, and the GPU kernels round
on the device; the reference backend is what this reproduces.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

from .burn_versions import BurnVersion
from .quantized import (
    ZERO_SCALE,
    QuantScheme,
    inexpressible,
)

if TYPE_CHECKING:
    import numpy as np

# QuantValue::range (cubecl-common 0.10.0 quant/scheme.rs:166-178; 48348968 :399-411), and bits a value.
RANGES = {"Q8S": (-127.0, 127.0), "Q4S": (-7.0, 7.0), "Q2S": (-1.0, 1.0)}
BITS = {"Q8S": 8, "Q4S": 4, "Q2S": 2}
MAX_BLOCK = 255  # BlockSize stores each extent as a u8 (cubecl-common 0.10.0 quant/scheme.rs:249-256)
STEP_VALUES = 1 << 18  # values quantized at a time (rounded to whole rows, at least one): a few MiB of temporaries
F16_MAX = 65504.0
F16_MIN_NORMAL = 2.0 ** -14
F16_SPACING = 2.0 ** -24  # f16's smallest subnormal, the spacing of its subnormals
F16_BIT_STEP = 1 << 13  # one f16 ulp on the f32 bit pattern: 24 - 11 mantissa digits


def burn_scheme(value: str, block: int, version: BurnVersion) -> QuantScheme:
    """Burn's symmetric block scheme for ``value`` (Q8S, Q4S or Q2S) at ``version``, blocks of ``block`` along the
    last dimension, packed in u32 words (Burn's default store): F16 block scales where ``version`` reads them
    (generation 2, Burn 0.22), else F32 (generation 1), as ``ggml.burn_scheme`` chooses."""
    _check_value(value)
    generation = 2 if version is BurnVersion.V0_22 else 1
    half = QuantScheme(generation, value, "PackedU32", 0, "Symmetric", (block,), "F16", None)
    if not inexpressible(half, version):
        return half
    return QuantScheme(generation, value, "PackedU32", 0, "Symmetric", (block,), "F32", None)


def quantizable(entry_dtype: Any, shape: tuple[int, ...], block: int, value: str) -> str | None:
    """Why a tensor of ``entry_dtype`` and ``shape`` cannot be quantized to ``value`` in blocks of ``block``
    (None when it can). A 1-D tensor can: Burn's ``Quantizer`` quantizes every float parameter
    (burn-core ``module/quantize.rs:40-53`` at main), biases included."""
    _check_value(value)
    if not 1 <= block <= MAX_BLOCK:
        return f"a block of {block} values is not one Burn can store (1 to {MAX_BLOCK}: BlockSize holds u8 extents)"
    if getattr(entry_dtype, "kind", None) != "float" or entry_dtype.numpy is None:
        return f"it is {entry_dtype}, not a float tensor with values to quantize"
    if len(shape) == 0:
        return "it is a scalar: there is no last dimension to cut into blocks"
    if math.prod(shape) == 0:
        return "it has no values"
    last = shape[-1]
    if last % block:
        return f"the last dimension ({last}) is not a multiple of the block ({block})"
    per_word = 32 // BITS[value]
    if BITS[value] < 8 and last % per_word:
        return (f"its rows of {last} {value} values do not fill whole u32 words of {per_word}: Burn pads each row "
                "but reads the flat words (see quantized.check_layout)")
    return None


def quantize_rows(values: np.ndarray, value: str, block: int, scale_dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Burn's ``quantize_dynamic`` of rows of values (float32, rows x last dimension) in blocks of ``block`` along
    each row: the int8 values (same shape) and the scales as stored (float32, rows x last/block; for F16, each
    exactly an f16). f32 arithmetic throughout, as Rust's f32. ValueError for a block that does not divide the
    rows or a value that is not finite (Burn's min/max then depend on the backend)."""
    import numpy as np
    _check_value(value)
    if scale_dtype not in ("F32", "F16"):
        raise ValueError(f"scale dtype {scale_dtype!r} is not F32 or F16")
    values = np.asarray(values)
    if values.ndim != 2:
        raise ValueError(f"quantize_rows takes rows of values (2-D), not an array of shape {values.shape}")
    rows, last = values.shape
    if block < 1 or last % block:
        raise ValueError(f"the last dimension ({last}) is not a multiple of the block ({block})")
    x = values.astype(np.float32, copy=False).reshape(rows, last // block, block)
    if not np.isfinite(x).all():
        raise ValueError("values that are not finite (NaN or infinity) have no quantization Burn's backends agree on")
    low, high = np.float32(RANGES[value][0]), np.float32(RANGES[value][1])
    # compute_range (MinMax): per block min and max; compute_q_params: alpha = |min| < |max| ? |max| : |min|.
    min_abs, max_abs = np.abs(x.min(axis=2)), np.abs(x.max(axis=2))
    alpha = np.where(min_abs < max_abs, max_abs, min_abs)
    with np.errstate(over="ignore"):  # 2 * alpha past f32's range is an infinite scale in Burn too
        scales = (alpha * np.float32(2.0)) / (high - low)
    if scale_dtype == "F16":
        scales = round_up_f16(scales)  # main: divided by the scale that is stored
    divisors = np.where(scales == 0, np.float32(ZERO_SCALE), scales)  # valid_scale
    q = round_half_away(x / divisors[:, :, None])
    q = np.clip(q, low, high)
    return q.astype(np.int8).reshape(rows, last), scales.astype(np.float32)


def round_half_away(y: np.ndarray) -> np.ndarray:
    """Rust's ``f32::round`` of every value, exactly: the nearest integer, half-way cases away from zero.
    ``y - trunc(y)`` is exact for any float, so the tie test is too (``trunc(y + 0.5)`` is not: 0.49999997 + 0.5
    rounds to 1)."""
    import numpy as np
    whole = np.trunc(y)
    return np.where(np.abs(y - whole) >= np.float32(0.5), whole + np.sign(y), whole).astype(y.dtype, copy=False)


def round_up_f16(scales: np.ndarray) -> np.ndarray:
    """``ScaleDtype::F16.round_up`` (cubecl-common 48348968 quant/scheme.rs:235-270): the smallest f16 not below
    each (non-negative) f32 scale, worked on the f32 bits: saturated at f16's maximum, a count of subnormal steps
    below its smallest normal, else the mantissa rounded up to f16's 11 digits."""
    import numpy as np
    s = np.asarray(scales, np.float32)
    bits = (s.view(np.uint32) + np.uint32(F16_BIT_STEP - 1)) & np.uint32(~(F16_BIT_STEP - 1) & 0xFFFFFFFF)
    normal = bits.view(np.float32)
    spacing = np.float32(F16_SPACING)
    subnormal = np.ceil(s / spacing) * spacing
    out = np.where(s < np.float32(F16_MIN_NORMAL), subnormal, normal)
    out = np.where(s >= np.float32(F16_MAX), np.float32(F16_MAX), out)
    return np.where(np.isnan(s), s, out).astype(np.float32)


def pack(q: np.ndarray, bits: int) -> bytes:
    """Integers as Burn's PackedU32 store holds them: 8-bit ones one i8 each, 4- and 2-bit ones 32/bits to a
    little-endian u32, the first value in the lowest bits (what ``quantized.unpack_values`` reads)."""
    import numpy as np
    flat = np.ascontiguousarray(q, np.int8).reshape(-1)
    if bits == 8:
        return flat.tobytes()
    per = 32 // bits
    fields = (flat.view(np.uint8) & np.uint8((1 << bits) - 1)).astype(np.uint32).reshape(-1, per)
    words = np.zeros(len(fields), np.uint32)
    for i in range(per):
        words |= fields[:, i] << np.uint32(bits * i)
    return words.astype("<u4").tobytes()


def _check_value(value: str) -> None:
    if value not in RANGES:
        raise ValueError(f"quantization {value!r} is not one of {', '.join(RANGES)}")


# --- which tensors an export quantizes --------------------------------------------------------------------------

LEFT_ALONE = ("Embedding", "BatchNorm", "LayerNorm", "GroupNorm", "RmsNorm")  # module kinds kept float by default


class QuantizeSpec(NamedTuple):
    """What ``convert --quantize`` asks: Burn's ``value`` (Q8S, Q4S, Q2S) in blocks of ``block``, on the float
    tensors of the module kinds ``modules`` names, or by default on every weight of two or more dimensions
    outside norms and embeddings (biases, norms, embeddings and integer tensors are left alone unless named)."""

    value: str
    block: int = 32
    modules: tuple[str, ...] = ()

    def selects(self, item: Any) -> bool:
        """Whether ``item`` (a planned tensor, whose ``module`` is its module kind) is one to quantize."""
        if item.dtype.kind != "float":
            return False
        kind = getattr(item, "module", "") or ""
        if self.modules:
            return kind in self.modules
        return item.name.rsplit(".", 1)[-1] == "weight" and len(item.shape) >= 2 and kind not in LEFT_ALONE

    def describe(self, version: BurnVersion) -> str:
        return burn_scheme(self.value, self.block, version).describe()


def quantized_choices(items: Any, spec: QuantizeSpec) -> tuple[list[str], dict[str, list[str]]]:
    """The names ``spec`` quantizes among ``items``, and the ones it selects but cannot, by reason (each reason
    with the tensor's own sizes; the command line groups them by it)."""
    chosen: list[str] = []
    refused: dict[str, list[str]] = {}
    for item in items:
        if spec.selects(item):
            reason = quantizable(item.dtype, tuple(item.shape), spec.block, spec.value)
            if reason:
                refused.setdefault(reason, []).append(item.name)
            else:
                chosen.append(item.name)
    return chosen, refused
