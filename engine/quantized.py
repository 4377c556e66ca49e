"""Burn's quantized tensors (``DType::QFloat``): the scheme, the byte layout, and dequantization.

Every rule here is read from Burn's source; the citations are ``file:line`` at the tag named.
Two generations of the scheme exist (see docs/formats.md, "Burn versions, bools and quantized tensors"):

- generation 1, Burn 0.20 to 0.22.0-pre.2: a map ``value, param, store, level, mode``
  (cubecl-common 0.10.0 ``crates/cubecl-common/src/quant/scheme.rs:8-21``);
- generation 2, Burn main from a8f9b960f (#5262, two-level scales): ``value, store, mode, tensor, block``
  (cubecl-common 48348968 ``crates/cubecl-common/src/quant/scheme.rs:32-46``).

A tensor's bytes are its quantized values, then its scales, then (two-level schemes only) one
global scale, packed densely: burn-std ``quantization.rs:242-265`` at Burn main, and the test there
at ``:661-684`` pinning ``8 + 2 + 4`` bytes. (``extend_from_byte_slice_aligned`` aligns the
allocation, not the offset: cubecl-environment ``bytes/base.rs:588-617``.)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

import msgspec

from .burn_versions import BurnVersion

if TYPE_CHECKING:
    import numpy as np

GEN1_FIELDS = frozenset({"value", "param", "store", "level", "mode"})
GEN2_FIELDS = frozenset({"value", "store", "mode", "tensor", "block"})
# QuantValue (cubecl-common 0.10.0 quant/scheme.rs:124-144); Q* are integers, the rest floats.
INTEGER_VALUES = {"Q8F": 8, "Q8S": 8, "Q4F": 4, "Q4S": 4, "Q2F": 2, "Q2S": 2}
FLOAT_VALUES = {"E4M3": 8, "E5M2": 8, "E2M1": 4}
# QuantParam (0.10.0 scheme.rs:236-247) / ScaleDtype (main scheme.rs:472-483), with their byte widths
# (burn-std quantization.rs:409-415 at main).
SCALE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "UE8M0": 1, "UE4M3": 1}
DECODED_SCALES = frozenset({"F32", "F16", "BF16", "UE4M3"})  # the scale dtypes decode_scales reads
STORES = ("Native", "PackedU32", "PackedNative")
MODES = ("Symmetric", "Lookup")
MAX_BLOCK_DIMS = 5  # BlockSize holds at most 5 dimensions (0.10.0 scheme.rs:249-256)
ZERO_SCALE = 0.1  # as an f32; burn-ndarray ops/quantization.rs:78-85 (main): a zero scale reads as 0.1
DEQUANTIZE_STEP = 1 << 18  # values dequantized at a time for a whole tensor or an export: a few MiB of temporaries


class SchemeError(ValueError):
    """A QFloat scheme that is malformed, or a layout its bytes do not fit; the message says which."""


# The records here are frozen msgspec Structs, as the store's entries are: a frozen dataclass generates and
# compiles its methods at import, 1-2 ms of every command's start-up a class.
class QuantScheme(msgspec.Struct, frozen=True):
    """One quantization scheme, the same for both generations.

    ``block`` is the block shape as stored (``None``: one scale for the whole tensor);
    ``block_scale`` the dtype of the per-block scales; ``tensor_scale`` the dtype of the per-tensor
    scale (the only scale without blocks, the global one with them: a two-level scheme).
    """

    generation: int
    value: str
    store: str
    packed_dim: int | None
    mode: str
    block: tuple[int, ...] | None
    block_scale: str | None
    tensor_scale: str | None
    implicit: bool = False  # generation 2 with no level stored (both null), which means one F32 tensor scale

    @property
    def two_level(self) -> bool:
        return self.block is not None and self.tensor_scale is not None

    @property
    def bits(self) -> int:
        return INTEGER_VALUES.get(self.value) or FLOAT_VALUES[self.value]

    @property
    def scale_dtype(self) -> str:
        """The dtype of the innermost scales (the ones stored per block, or the single per-tensor one)."""
        return self.block_scale or self.tensor_scale or "F32"

    def describe(self) -> str:
        """The scheme in words, e.g. ``Q4S, blocks of 32, F16 block scales, F32 global scale``."""
        parts = [self.value]
        if self.block is None:
            parts.append(f"{self.tensor_scale} tensor scale")
        else:
            parts += [f"blocks of {' x '.join(map(str, self.block))}", f"{self.block_scale} block scales"]
            if self.tensor_scale:
                parts.append(f"{self.tensor_scale} global scale")
        if self.store == "PackedU32" and self.bits < 32:
            parts.append(f"packed {32 // self.bits} per u32")
        elif self.store == "PackedNative":
            parts.append("packed natively")
        if self.mode != "Symmetric":
            parts.append(f"{self.mode.lower()} mode")
        return ", ".join(parts)


# --- the scheme as Burn's serde writes it ---------------------------------------------------------

def meaning(scheme: QuantScheme) -> dict[str, Any]:
    """What a scheme says, without the generation that spells it (two spellings of one scheme compare equal)."""
    return {"value": scheme.value, "store": scheme.store, "packed_dim": scheme.packed_dim, "mode": scheme.mode,
            "block": list(scheme.block) if scheme.block else None, "block_scale": scheme.block_scale,
            "tensor_scale": scheme.tensor_scale}


def parse_scheme(payload: Any) -> QuantScheme:
    """A QFloat payload of either generation; SchemeError naming the field that is wrong."""
    if not isinstance(payload, dict) or not all(isinstance(k, str) for k in payload):
        raise SchemeError(f"QFloat scheme is not a plain map of field names: {_short(payload)}")
    keys = set(payload)
    if keys == GEN1_FIELDS:
        return _parse_gen1(payload)
    if keys == GEN2_FIELDS:
        return _parse_gen2(payload)
    raise SchemeError(f"QFloat scheme has fields {sorted(map(str, keys))}; Burn writes either "
                      f"{sorted(GEN1_FIELDS)} (up to 0.22.0-pre.2) or {sorted(GEN2_FIELDS)} (from #5262)")


def _parse_gen1(payload: dict) -> QuantScheme:
    """``{value, param, store, level, mode}``: cubecl-common 0.10.0 quant/scheme.rs:8-21, level at :109-114."""
    value, mode = _value(payload["value"]), _unit(payload["mode"], MODES[:1], "mode")
    store, packed = _store(payload["store"])
    param = _unit(payload["param"], tuple(SCALE_BYTES), "param")
    level = payload["level"]
    if level == "Tensor":
        return QuantScheme(1, value, store, packed, mode, None, None, param)
    if isinstance(level, dict) and len(level) == 1 and "Block" in level:
        return QuantScheme(1, value, store, packed, mode, _block_size(level["Block"]), param, None)
    if isinstance(level, dict) and len(level) == 1 and "BlockTensor" in level:
        # cubecl-common 0.11.0-pre.2 scheme.rs:125-131; Burn 0.22.0-pre.2 names it but cannot store it
        # (burn-std quantization.rs:111-113 there: unimplemented), so its bytes have no layout to read.
        inner = level["BlockTensor"]
        if not isinstance(inner, dict) or set(inner) != {"block", "global"}:
            raise SchemeError(f"QFloat level BlockTensor is not {{block, global}}: {_short(inner)}")
        return QuantScheme(1, value, store, packed, mode, _block_size(inner["block"]), param,
                           _unit(inner["global"], tuple(SCALE_BYTES), "global"))
    raise SchemeError(f"QFloat level {_short(level)} is not Tensor, Block or BlockTensor")


def _parse_gen2(payload: dict) -> QuantScheme:
    """``{value, store, mode, tensor, block}``: cubecl-common 48348968 quant/scheme.rs:32-46, 188-197."""
    value, mode = _value(payload["value"]), _unit(payload["mode"], MODES, "mode")
    store, packed = _store(payload["store"])
    tensor = None if payload["tensor"] is None else _unit(payload["tensor"], tuple(SCALE_BYTES), "tensor")
    block = payload["block"]
    if block is None:
        # A scheme with no level at all means one F32 tensor scale (scheme.rs:99-104, tensor_scale()).
        return QuantScheme(2, value, store, packed, mode, None, None, tensor or "F32", implicit=tensor is None)
    if not isinstance(block, dict) or set(block) != {"size", "dtype"}:
        raise SchemeError(f"QFloat block is not {{size, dtype}}: {_short(block)}")
    return QuantScheme(2, value, store, packed, mode, _block_size(block["size"]),
                       _unit(block["dtype"], tuple(SCALE_BYTES), "block dtype"), tensor)


def _value(value: Any) -> str:
    if isinstance(value, str) and (value in INTEGER_VALUES or value in FLOAT_VALUES):
        return value
    raise SchemeError(f"QFloat value type {_short(value)} is not one Burn knows "
                      f"({', '.join([*INTEGER_VALUES, *FLOAT_VALUES])})")


def _unit(value: Any, choices: tuple[str, ...], field: str) -> str:
    if isinstance(value, str) and value in choices:
        return value
    raise SchemeError(f"QFloat {field} {_short(value)} is not one of {', '.join(choices)}")


def _store(value: Any) -> tuple[str, int | None]:
    """``"Native"`` or ``{"PackedU32": dim}`` / ``{"PackedNative": dim}`` (0.10.0 scheme.rs:210-222)."""
    if value == "Native":
        return "Native", None
    if isinstance(value, dict) and len(value) == 1:
        (kind, dim), = value.items()
        if kind in STORES[1:] and type(dim) is int and 0 <= dim < 1 << 64:
            return kind, dim
    raise SchemeError(f"QFloat store {_short(value)} is not Native, PackedU32(dim) or PackedNative(dim)")


def _block_size(value: Any) -> tuple[int, ...]:
    """``BlockSize {storage: [u8; 5], len: u8}`` as serde derives it (0.10.0 scheme.rs:251-256)."""
    if isinstance(value, dict) and set(value) == {"storage", "len"}:
        storage, length = value["storage"], value["len"]
        if (isinstance(storage, list) and len(storage) == MAX_BLOCK_DIMS and type(length) is int
                and all(type(d) is int and 1 <= d < 256 for d in storage) and 1 <= length <= MAX_BLOCK_DIMS):
            return tuple(storage[:length])
    raise SchemeError(f"QFloat block size {_short(value)} is not {{storage: 5 sizes from 1 to 255, len: 1 to 5}}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def encode_scheme(scheme: QuantScheme, version: BurnVersion) -> dict[str, Any]:
    """The payload ``version``'s serde reads, in Burn's field order; SchemeError saying why it cannot."""
    reason = inexpressible(scheme, version)
    if reason:
        raise SchemeError(reason)
    store: Any = "Native" if scheme.store == "Native" else {scheme.store: scheme.packed_dim}
    if version is BurnVersion.V0_22:
        block = None if scheme.block is None else {"size": _block_json(scheme.block), "dtype": scheme.block_scale}
        tensor = None if scheme.implicit else scheme.tensor_scale
        return {"value": scheme.value, "store": store, "mode": scheme.mode, "tensor": tensor, "block": block}
    level: Any = "Tensor" if scheme.block is None else {"Block": _block_json(scheme.block)}
    return {"value": scheme.value, "param": scheme.scale_dtype, "store": store, "level": level, "mode": scheme.mode}


def _block_json(block: tuple[int, ...]) -> dict[str, Any]:
    return {"storage": [*block, *(1,) * (MAX_BLOCK_DIMS - len(block))], "len": len(block)}


def inexpressible(scheme: QuantScheme, version: BurnVersion, shape: tuple[int, ...] | None = None) -> str | None:
    """Why Burn ``version`` cannot read this scheme with the same meaning (None when it can)."""
    if scheme.generation == 1 and scheme.two_level:
        return ("its two-level scheme comes from Burn 0.22.0-pre.2, which cannot store one "
                "(burn-std quantization.rs:111-113 there), so its bytes have no layout to carry over")
    if version is BurnVersion.V0_22:
        if scheme.generation == 1 and scheme.block is not None and shape is not None and \
                not blocks_are_runs(shape, scheme.block):
            return (f"its blocks of {'x'.join(map(str, scheme.block))} are runs of the flat values up to "
                    "0.22.0-pre.2 (burn-ndarray ops/quantization.rs:45-60) but rectangles from #5262 "
                    f"(burn-std quantization.rs:148-193), which differ for shape {list(shape)}")
        return None
    label = f"Burn {version.value}"
    if scheme.two_level:
        return f"{label} has no two-level scales (its QuantLevel is Tensor or Block: cubecl-common 0.10.0 scheme.rs:109-114)"
    if scheme.mode != "Symmetric":
        return f"{label} has no {scheme.mode} mode (its QuantMode is Symmetric only: cubecl-common 0.10.0 scheme.rs:226-229)"
    if scheme.scale_dtype != "F32":
        return (f"{label} reads every scale as F32 (burn-std quantization.rs:150-156 at v0.21.0), and these are "
                f"{scheme.scale_dtype}")
    if scheme.generation == 2 and scheme.block is not None and shape is not None and \
            not blocks_are_runs(shape, scheme.block):
        return (f"its blocks of {'x'.join(map(str, scheme.block))} are rectangles here but runs of the flat values "
                f"in {label} (burn-ndarray ops/quantization.rs:45-60 at v0.21.0), which differ for shape {list(shape)}")
    return None


def blocks_are_runs(shape: tuple[int, ...], block: tuple[int, ...]) -> bool:
    """Whether rectangular blocks (Burn main) and flat runs of prod(block) values (Burn up to
    0.22.0-pre.2) group the same elements: the block spans whole trailing dimensions and divides one."""
    dims = block_dims(block, len(shape))
    size = math.prod(block)  # a run holds every stored size's values (BlockSize::num_elements)
    if not shape or math.prod(dims) != size or math.prod(shape) % size:
        return False
    k = next((i for i, d in enumerate(dims) if d != 1), len(dims) - 1)
    return shape[k] % dims[k] == 0 and all(dims[i] == shape[i] for i in range(k + 1, len(shape)))


def block_dims(block: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    """The block right-aligned to ``ndim`` dimensions, ones in front (``BlockSize::to_dim_vec``,
    cubecl-common 0.10.0 scheme.rs:311-318)."""
    kept = block[:min(ndim, len(block))]  # a block of more dimensions keeps its first ones, as Burn's does
    return (1,) * (ndim - len(kept)) + kept


# --- the byte layout ------------------------------------------------------------------------------

class QuantLayout(msgspec.Struct, frozen=True):
    """Where a tensor's parts lie in its bytes: values, then scales, then the global scale."""

    value_bytes: int
    scale_count: int
    scale_bytes: int
    global_bytes: int

    @property
    def total(self) -> int:
        return self.value_bytes + self.scale_bytes + self.global_bytes


def undecodable(scheme: QuantScheme) -> str | None:
    """Why Store Studio cannot decode this scheme's values (None when it can), as Burn's own reader cannot."""
    if scheme.value in FLOAT_VALUES:
        return f"{scheme.value} values are not decoded by Burn's QuantizedBytes (burn-std quantization.rs:344-346 at main)"
    if scheme.store == "PackedNative":
        return "PackedNative storage is not decoded by Burn's QuantizedBytes (burn-std quantization.rs:348 at main)"
    if scheme.store == "PackedU32" and scheme.packed_dim != 0:
        return (f"values packed along dimension {scheme.packed_dim} from the innermost; Burn unpacks only the "
                "innermost (burn-std quantization.rs:322-327 at main)")
    if scheme.mode != "Symmetric":
        return f"{scheme.mode} mode keeps its table outside the tensor (cubecl-common scheme.rs:459-468 at 48348968)"
    for dtype in {scheme.block_scale, scheme.tensor_scale} - {None}:
        if dtype not in DECODED_SCALES:
            return f"{dtype} scales are not decoded by Burn (burn-std quantization.rs:440 at main)"
    if scheme.generation == 1 and scheme.two_level:
        return "two-level scales in Burn 0.22.0-pre.2's scheme, which Burn cannot store (burn-std quantization.rs:111-113 there)"
    return None


def layouts(scheme: QuantScheme, shape: tuple[int, ...]) -> list[QuantLayout]:
    """Every layout Burn writes for this scheme and shape (more than one only where writers differ)."""
    numel = math.prod(shape)
    count = scale_count(scheme, shape)
    scales = count * SCALE_BYTES[scheme.scale_dtype]
    glob = SCALE_BYTES[scheme.tensor_scale] if scheme.two_level else 0
    return [QuantLayout(v, count, scales, glob) for v in value_byte_counts(scheme, numel)]


def scale_count(scheme: QuantScheme, shape: tuple[int, ...]) -> int:
    """How many scales precede the global one: one per tensor, or one per block.

    Generation 1 counts ``numel / block size`` (burn-std quantization.rs:196-199 at v0.21.0); generation 2
    counts rectangles, each dimension rounded up (``params_shape``, quantization.rs:141-146 at main).
    """
    if scheme.block is None:
        return 1
    if scheme.generation == 1:
        return math.prod(shape) // math.prod(scheme.block)
    dims = block_dims(scheme.block, len(shape))
    return math.prod(-(-n // b) for n, b in zip(shape, dims))


def value_byte_counts(scheme: QuantScheme, numel: int) -> list[int]:
    """Bytes the quantized values take.

    Native: one i8 per value (``split_i8_values``, burn-std quantization.rs:301-311 at main). PackedU32: whole
    u32 words of 32/bits values (``storage_elements``, :382-396); 8-bit values may also come unpadded, as
    ``QuantizedBytes::new`` writes them (:239-240).
    """
    if scheme.store == "Native":
        return [numel]
    words = -(-numel // (32 // scheme.bits)) * 4
    return [numel, words] if scheme.bits == 8 and words != numel else [words]


def check_layout(scheme: QuantScheme, shape: tuple[int, ...], nbytes: int) -> QuantLayout:
    """The layout ``nbytes`` bytes fit; SchemeError saying what the scheme needs when none does."""
    reason = undecodable(scheme)
    if reason:
        raise SchemeError(reason)
    if scheme.block is not None:
        run = math.prod(scheme.block)
        if scheme.generation == 1 and math.prod(shape) % run:
            raise SchemeError(f"{math.prod(shape)} values are not a whole number of blocks of {run} "
                              "(Burn up to 0.22.0-pre.2 asserts this: burn-ndarray ops/quantization.rs:45-53)")
    if scheme.store == "PackedU32" and scheme.bits < 8 and len(shape) > 1 and shape[-1] % (32 // scheme.bits):
        raise SchemeError(f"rows of {shape[-1]} {scheme.value} values do not fill whole u32 words; Burn's writers "
                          "pad each row (burn-std quantization.rs:376-396 at main) but its reader unpacks the flat "
                          "words (:331-343), so the values' places are not known")
    options = layouts(scheme, shape)
    for layout in options:
        if layout.total == nbytes:
            return layout
    need = " or ".join(str(o.total) for o in options)
    first = options[0]
    glob = f" + {first.global_bytes} global scale" if first.global_bytes else ""
    scales = f"{first.scale_count} {scheme.scale_dtype} scale{'' if first.scale_count == 1 else 's'}"
    raise SchemeError(f"has {nbytes} bytes, but {scheme.describe()} over shape {list(shape)} needs {need} "
                      f"({first.value_bytes} of values + {scales}{glob})")


# --- decoding -------------------------------------------------------------------------------------

class QuantizedValues(msgspec.Struct, frozen=True):
    """A tensor's parts as stored: the integers, the scales (as f32) and the global scale."""

    values: np.ndarray  # int8, the tensor's shape
    scales: np.ndarray  # float32, one per block (or one)
    global_scale: float | None


def split(raw: bytes | memoryview, scheme: QuantScheme, shape: tuple[int, ...]) -> QuantizedValues:
    """The integers and scales of a tensor's bytes (checked against the scheme first)."""
    layout = check_layout(scheme, shape, len(raw))
    buffer = memoryview(raw)
    values = unpack_values(buffer[:layout.value_bytes], scheme, math.prod(shape)).reshape(shape)
    start = layout.value_bytes
    scales = decode_scales(buffer[start:start + layout.scale_bytes], scheme.scale_dtype)
    glob = None
    if layout.global_bytes:
        glob = float(decode_scales(buffer[start + layout.scale_bytes:], scheme.tensor_scale or "F32")[0])
    return QuantizedValues(values, scales, glob)


def unpack_values(raw: memoryview, scheme: QuantScheme, numel: int) -> np.ndarray:
    """The signed integers: native i8, or little-endian u32 words of 32/bits values, lowest bits first,
    each sign-extended (``unpack_q_to_i8s``, burn-std quantization.rs:514-542 at main)."""
    import numpy as np  # here, as in every function that touches values: copying bytes never loads numpy
    if scheme.store == "Native" or scheme.bits == 8:
        return np.frombuffer(raw, np.int8, numel).copy()
    bits = scheme.bits
    words = np.frombuffer(raw, "<u4")
    shifts = np.arange(0, 32, bits, dtype=np.uint32)
    fields = ((words[:, None] >> shifts) & np.uint32((1 << bits) - 1)).astype(np.int8).reshape(-1)[:numel]
    return ((fields << (8 - bits)).astype(np.int8) >> (8 - bits)).astype(np.int8)


def decode_scales(raw: memoryview, dtype: str) -> np.ndarray:
    """Scales as f32 from their stored dtype (``decode_scales``, burn-std quantization.rs:418-441 at main;
    written with ``to_ne_bytes``, :445-462, little-endian on every platform Burn ships for)."""
    import numpy as np
    return np.frombuffer(raw, _scale_numpy(dtype)).astype(np.float32)


def _scale_numpy(dtype: str) -> np.dtype:
    import ml_dtypes  # here, not at start-up: most commands never decode a scale (issue 23)
    import numpy as np
    return {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype(ml_dtypes.bfloat16),
            "UE4M3": np.dtype(ml_dtypes.float8_e4m3fn)}[dtype]


ByteReader = Callable[[int, int], "bytes | bytearray | memoryview"]  # (offset, length) in a tensor's stored bytes


class DequantizedValues:
    """A quantized tensor's F32 values as Burn's reference backend computes them, any run at a time.

    ``scale * q`` with scale = global x block scale, a zero scale read as 0.1 (burn-ndarray tensor.rs:716-737
    and ops/quantization.rs:78-85, 135-138 at main). Blocks are runs of the flat values in generation 1
    (burn-ndarray ops/quantization.rs:45-60 at v0.22.0-pre.2) and rectangles in generation 2
    (``BlockLayout``, burn-std quantization.rs:148-193 at main).

    Only the stored words holding the values asked for are read (``read``) and unpacked, and only their scales
    worked out: statistics and ``convert --dequantize`` of 64 Mi Q2S values (16 MiB stored) hold a chunk's
    values, where dequantizing them whole held 256 MiB of them and a gigabyte of unpacking temporaries. The
    stored scales (no more than the stored tensor) are read once. Has the chunked-values interface of
    ``engine.values.chunked`` (``dtype``, ``size``, ``reader``).
    """

    def __init__(self, scheme: QuantScheme, shape: tuple[int, ...], nbytes: int, read: ByteReader):
        import numpy as np
        layout = check_layout(scheme, shape, nbytes)
        self.dtype = np.dtype(np.float32)
        self.shape, self.size = shape, math.prod(shape)
        self._scheme, self._read = scheme, read
        # Values a stored unit holds, and its bytes: 32/bits a u32 word when packed, else one an i8.
        packed = scheme.store == "PackedU32" and scheme.bits < 8
        self._per_unit, self._unit = (32 // scheme.bits, 4) if packed else (1, 1)
        self._scales = np.frombuffer(read(layout.value_bytes, layout.scale_bytes), _scale_numpy(scheme.scale_dtype))
        self._global = None
        if layout.global_bytes:
            stored = read(layout.value_bytes + layout.scale_bytes, layout.global_bytes)
            self._global = decode_scales(memoryview(stored), scheme.tensor_scale or "F32")[0]
        self._blocks = _ScaleBlocks(*_block_shape(scheme, shape))

    def reader(self, chunk_elements: int) -> Callable[[int, int], np.ndarray]:
        """``values``: it keeps nothing between calls, so every thread may share it."""
        return self.values

    def values(self, start: int, stop: int) -> np.ndarray:
        """The F32 values ``start``..``stop`` of the flat tensor."""
        import numpy as np
        return self._element_scales(start, stop) * self._integers(start, stop).astype(np.float32)

    def array(self) -> np.ndarray:
        """Every value, in the tensor's shape, filled DEQUANTIZE_STEP values at a time."""
        import numpy as np
        out = np.empty(self.size, np.float32)
        for start in range(0, self.size, DEQUANTIZE_STEP):
            stop = min(self.size, start + DEQUANTIZE_STEP)
            out[start:stop] = self.values(start, stop)
        return out.reshape(self.shape)

    def _integers(self, start: int, stop: int) -> np.ndarray:
        """The stored integers ``start``..``stop``, from the whole units (bytes or u32 words) holding them."""
        per, unit = self._per_unit, self._unit
        first, last = start // per, -(-stop // per)
        raw = self._read(first * unit, (last - first) * unit)
        skip = start - first * per
        return unpack_values(memoryview(raw), self._scheme, (last - first) * per)[skip:skip + stop - start]

    def _element_scales(self, start: int, stop: int) -> np.ndarray:
        """Each value's scale for values ``start``..``stop`` (one, broadcast, when they share a block)."""
        import numpy as np
        index, counts = self._blocks.runs(start, stop)
        scales = self._effective(self._scales[index])
        return scales if scales.size == 1 else np.repeat(scales, counts)

    def _effective(self, stored: np.ndarray) -> np.ndarray:
        """Stored scales as the F32 a value is multiplied by: times the global scale, a zero read as 0.1."""
        import numpy as np
        scales = stored.astype(np.float32)
        if self._global is not None:
            scales = self._global * scales
        return np.where(scales == 0, np.float32(ZERO_SCALE), scales).astype(np.float32)


def _block_shape(scheme: QuantScheme, shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The tensor's shape and block shape as ``_ScaleBlocks`` reads them: one flat run for one scale a tensor
    and for generation 1's runs of ``prod(block)`` values; generation 2's rectangles with the leading
    dimensions the block does not reach (size 1 there) taken as one, so index arithmetic costs the block's
    dimensions, not the tensor's."""
    numel = max(1, math.prod(shape))
    if scheme.block is None:
        return (numel,), (numel,)
    if scheme.generation == 1:
        return (numel,), (math.prod(scheme.block),)
    dims = block_dims(scheme.block, len(shape))
    lead = len(shape) - min(len(shape), len(scheme.block))
    return (math.prod(shape[:lead]), *shape[lead:]), (1, *dims[lead:])


class _ScaleBlocks:
    """Which scale each flat value has: the tensor is rows of its last dimension, and each row a run of
    block-wide pieces, each sharing one scale. A chunk costs a step per piece, not per value."""

    def __init__(self, shape: tuple[int, ...], dims: tuple[int, ...]):
        self.row, self.width = shape[-1], dims[-1]  # values a row, values a piece
        self.per_row = -(-self.row // self.width)  # pieces a row (the last one short when the block does not divide)
        self.outer = (shape[:-1], dims[:-1], tuple(-(-n // b) for n, b in zip(shape[:-1], dims[:-1])))

    def runs(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """The scale index of each piece values ``start``..``stop`` cross, and how many of them each holds."""
        import numpy as np
        row, width, per_row = self.row, self.width, self.per_row
        first = start // row * per_row + start % row // width
        last = (stop - 1) // row * per_row + (stop - 1) % row // width
        rows, column = np.divmod(np.arange(first, last + 1, dtype=np.int64), per_row)
        begin = rows * row + column * width
        counts = np.minimum(np.minimum(begin + width, rows * row + row), stop) - np.maximum(begin, start)
        return self._row_index(rows) * per_row + column, counts

    def _row_index(self, rows: np.ndarray) -> np.ndarray | int:
        """Each row's place among the rows of blocks (0 for a tensor of one row)."""
        import numpy as np
        shape, dims, grid = self.outer
        if not shape:
            return 0
        first = int(rows[0])
        distinct = np.arange(first, int(rows[-1]) + 1)  # a chunk's rows are consecutive: each one worked out once
        coords = np.unravel_index(distinct, shape)
        return np.ravel_multi_index(tuple(c // b for c, b in zip(coords, dims)), grid)[rows - first]


def scheme_description(dtype: Any) -> str | None:
    """A quantized dtype's scheme in words (None for any other dtype)."""
    return dtype.quant_scheme.describe() if dtype.kind == "quantized" else None


def why_undecoded(dtype: Any) -> str | None:
    """Why a quantized dtype's values are not decoded (None when they are, or the dtype is not quantized)."""
    return undecodable(dtype.quant_scheme) if dtype.kind == "quantized" else None


def stored_values(entry: Any) -> QuantizedValues:
    """A quantized tensor's integers and scales as its file stores them (the raw side of its values)."""
    reader = getattr(entry.store, "read_quantized", None)
    if entry.dtype.kind != "quantized" or reader is None:
        raise ValueError(f"tensor {entry.name!r} ({entry.dtype}) has no quantized integers to show")
    return reader(entry.name)
