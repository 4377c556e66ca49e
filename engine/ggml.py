"""GGML's tensor types (what a GGUF file stores): their block sizes, their values, and the two Burn can hold as is.

Every type's name, block size and bytes per block come from the ``gguf`` package llama.cpp publishes
(``gguf.constants.GGML_QUANT_SIZES``), and every value from its ``gguf.quants.dequantize``: a tensor read here
equals, bit for bit, what that function gives for the same bytes. Blocks run along a tensor's last dimension
(GGML's ``ne[0]``) and never cross a row, so any run of whole blocks decodes on its own: values are read and
decoded a few blocks at a time, never the whole tensor at once.

Two types are Burn's own block quantization under another name, so a Burnpack can keep them without losing a bit:

- ``Q8_0``: blocks of 32 values, an f16 scale ``d`` then 32 int8 ``q``, ``x = d * q``
  (gguf 0.19.0 ``quants.py:396-401``);
- ``Q4_0``: blocks of 32 values, an f16 scale ``d`` then 16 bytes holding values ``j`` (low nibble) and ``j + 16``
  (high nibble), ``x = d * (q - 8)`` (``quants.py:241-251``);

and Burn's symmetric block quantization reads ``x = f32(scale) * f32(q)`` with blocks along the last dimension,
Q8S one i8 a value and Q4S sign-extended nibbles packed 8 to a little-endian u32, lowest bits first
(burn-ndarray ``tensor.rs:716-737``, burn-std ``quantization.rs:514-542`` at main; see ``engine/quantized.py``).
``q - 8`` lies in Q4S's ``[-8, 7]``, and an f16 scale widens to f32 exactly where a Burn version stores only f32.
One difference: Burn reads a zero scale as 0.1 (``quantized.ZERO_SCALE``); llama.cpp's quantizers write zero
integers in such a block, and a block that has other integers is written with zeros, whose values are then
``+0.0`` where gguf gives ``0 * q`` (equal values; only a zero's sign can differ).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, Callable, Iterator

from . import dtypes, quantize
from .burn_versions import BurnVersion
from .quantized import QuantScheme, encode_scheme

if TYPE_CHECKING:
    import numpy as np

KIND = "gguf"  # the DType kind of a GGML block type (a dense type, F32 or I8, is a plain dtype)
DENSE = {"F64": dtypes.F64, "F32": dtypes.F32, "F16": dtypes.F16, "BF16": dtypes.BF16,
         "I64": dtypes.I64, "I32": dtypes.I32, "I16": dtypes.I16, "I8": dtypes.I8}
BURN_VALUES = {"Q8_0": "Q8S", "Q4_0": "Q4S"}  # the GGML types a Burnpack keeps quantized, as Burn's value types
BURN_BLOCK = 32
STEP_BLOCKS = 8192  # blocks decoded at a time (256 Ki values of a 32-value type): a few MiB of temporaries
DEQUANTIZE_TO = {"f16": dtypes.F16, "f32": dtypes.F32, "bf16": dtypes.BF16}


class GGMLType:
    """One GGML type: ``name`` (``Q4_K``), ``code`` (its number in the file), values per block and bytes per block."""

    __slots__ = ("name", "code", "block", "block_bytes")

    def __init__(self, name: str, code: int, block: int, block_bytes: int):
        self.name, self.code, self.block, self.block_bytes = name, code, block, block_bytes

    def nbytes(self, shape: tuple[int, ...]) -> int:
        """Bytes a tensor of this type and shape takes (its last dimension is a whole number of blocks)."""
        rows = math.prod(shape[:-1]) if shape else 1
        return rows * (shape[-1] if shape else 1) // self.block * self.block_bytes

    @property
    def dtype(self) -> dtypes.DType:
        """A dense type's own dtype, else the opaque block dtype that reads as F32 values."""
        return DENSE.get(self.name) or dtypes.DType(self.name, None, KIND)


@functools.cache
def types() -> dict[int, GGMLType]:
    """Every type the installed ``gguf`` package knows, by its code (imported on the first GGUF file)."""
    from gguf.constants import GGML_QUANT_SIZES
    return {t.value: GGMLType(t.name, t.value, block, size) for t, (block, size) in GGML_QUANT_SIZES.items()}


def by_name(name: str) -> GGMLType:
    return next(t for t in types().values() if t.name == name)


@functools.cache
def undecoded(name: str) -> str | None:
    """Why ``gguf.quants.dequantize`` gives no values for type ``name`` (None when it does)."""
    import numpy as np
    from gguf.quants import dequantize
    kind = by_name(name)
    try:
        dequantize(np.zeros((1, kind.block_bytes), np.uint8), _qtype(kind))
    except NotImplementedError:
        return f"the gguf library does not dequantize {name}"
    return None


def _qtype(kind: GGMLType) -> Any:
    from gguf.constants import GGMLQuantizationType
    return GGMLQuantizationType(kind.code)


ByteReader = Callable[[int, int], "bytes | bytearray | memoryview"]


class BlockValues:
    """A GGML block-type tensor's F32 values, ``gguf.quants.dequantize`` of the whole blocks a run touches.

    Has the chunked-values interface of ``engine.values.chunked`` (``dtype``, ``size``, ``reader``, ``array``).
    """

    def __init__(self, name: str, shape: tuple[int, ...], read: ByteReader):
        import numpy as np
        reason = undecoded(name)
        if reason:
            raise ValueError(reason)
        self.kind = by_name(name)
        self.dtype = np.dtype(np.float32)
        self.shape, self.size = shape, math.prod(shape)
        self._read = read

    def reader(self, chunk_elements: int) -> Callable[[int, int], np.ndarray]:
        return self.values  # keeps nothing between calls: threads may share it

    def values(self, start: int, stop: int) -> np.ndarray:
        """The F32 values ``start``..``stop`` of the flat tensor."""
        import numpy as np
        from gguf.quants import dequantize
        block, size = self.kind.block, self.kind.block_bytes
        first, last = start // block, -(-stop // block)
        raw = np.frombuffer(self._read(first * size, (last - first) * size), np.uint8).reshape(last - first, size)
        decoded = dequantize(raw, _qtype(self.kind)).reshape(-1)
        return decoded[start - first * block:stop - first * block]

    def array(self) -> np.ndarray:
        import numpy as np
        out = np.empty(self.size, np.float32)
        step = STEP_BLOCKS * self.kind.block
        for start in range(0, self.size, step):
            stop = min(self.size, start + step)
            out[start:stop] = self.values(start, stop)
        return out.reshape(self.shape)


# --- Q8_0 and Q4_0 as Burn's block quantization ----------------------------------------------------

def burn_scheme(name: str, version: BurnVersion) -> QuantScheme:
    """Burn's scheme for GGML type ``name`` (Q8_0 or Q4_0) at ``version``: symmetric, blocks of 32 along the last
    dimension, packed in u32 words, F16 scales where ``version`` reads them, else F32 (``quantize.burn_scheme``)."""
    return quantize.burn_scheme(BURN_VALUES[name], BURN_BLOCK, version)


def burn_dtype(name: str, version: BurnVersion) -> dtypes.DType:
    """The QFloat dtype a Burnpack for ``version`` stores a ``name`` tensor as."""
    return dtypes.quantized(encode_scheme(burn_scheme(name, version), version))


def burn_bytes(name: str, scheme: QuantScheme, raw_blocks: Iterator[bytes], numel: int) -> Iterator[bytes]:
    """A Q8_0 or Q4_0 tensor's blocks (in order, any number at a time) as Burn stores the same values: every
    block's integers, then every block's scale. The scales (1/16 of the integers' bytes, or less) are held
    until the integers are written; nothing else is."""
    import numpy as np
    kind = by_name(name)
    scales = []
    for raw in raw_blocks:
        blocks = np.frombuffer(raw, np.uint8).reshape(-1, kind.block_bytes)
        d = blocks[:, :2].copy().view("<f2")  # (n, 1)
        q = _integers(name, blocks[:, 2:])  # (n, 32) int8
        q[(d == 0).reshape(-1)] = 0  # Burn reads a zero scale as 0.1: keep such a block's values zero
        yield quantize.pack(q, scheme.bits)
        scales.append(d.reshape(-1) if scheme.scale_dtype == "F16" else d.reshape(-1).astype("<f4"))
    yield np.concatenate(scales).tobytes() if scales else b""


def _integers(name: str, payload: np.ndarray) -> np.ndarray:
    """Each block's 32 signed integers: Q8_0's bytes as they are, Q4_0's nibbles (low ones first) minus 8."""
    import numpy as np
    if name == "Q8_0":
        return payload.view(np.int8).copy()
    low, high = payload & np.uint8(0x0F), payload >> np.uint8(4)
    return np.concatenate([low, high], axis=1).astype(np.int8) - np.int8(8)
