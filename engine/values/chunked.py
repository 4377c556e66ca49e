"""A tensor's values handed out a chunk at a time, from its file or from memory, to any number of threads.

A tensor whose bytes lie as-is in a file is read with positioned reads straight into a buffer that each
reading thread owns and reuses, a cache-sized chunk at a time, and each chunk is checked against a file
changed on disk after it is read: no copy of the whole tensor is made, and no memory map of the source
(a page past the end of a file truncated under a mapping kills the process with SIGBUS). Diff and
statistics both read through this, so the changed-file check is written once. A quantized tensor's values
are dequantized a chunk at a time from the stored words holding them (``quantized.DequantizedValues``).
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Iterator, Union

import numpy as np

from ..burn_versions import BurnVersion
from ..dtypes import F32, DType
from ..dtypes import quantized as quantized_dtype
from ..quantize import BITS, burn_scheme, pack, quantizable, quantize_rows
from ..quantize import STEP_VALUES as QUANTIZE_STEP
from .. import ggml
from ..quantized import DEQUANTIZE_STEP, ByteReader, DequantizedValues, encode_scheme, layouts

Reader = Callable[[int, int], np.ndarray]  # (start, stop) in elements -> those values, valid until the next call


class StoredValues:
    """The values of a tensor as its file holds them (``item`` has ``byte_range()`` and ``verify()``)."""

    def __init__(self, item: Any, dtype: np.dtype, span: tuple[int, int, int]):
        self.dtype, self._item = dtype, item
        self._fd, self._offset, length = span
        self.size = length // dtype.itemsize

    @classmethod
    def of(cls, item: Any) -> "StoredValues | None":
        """The item's values as a file holds them, or None (encoded bools, quantized, transformed, remote)."""
        dtype = item.dtype.numpy  # None for a quantized tensor: its bytes are not its values
        if dtype is None or item.dtype.kind == "bool":
            return None
        span = item.byte_range()
        return None if span is None else cls(item, dtype, span)

    def reader(self, chunk_elements: int) -> Reader:
        """A reader with its own buffer of up to ``chunk_elements`` values, for one thread."""
        buffer = np.empty(min(self.size, chunk_elements), self.dtype)
        raw = memoryview(buffer.view(np.uint8))
        itemsize, fd, offset, verify = self.dtype.itemsize, self._fd, self._offset, self._item.verify

        def read(start: int, stop: int) -> np.ndarray:
            _read_exactly(fd, raw[:(stop - start) * itemsize], offset + start * itemsize)
            verify()  # after reading: these bytes are the file's as opened, or this raises
            return buffer[:stop - start]
        return read


class ArrayValues:
    """Values already in memory (a flat array), handed out as slices: every thread shares them."""

    def __init__(self, flat: np.ndarray):
        self.dtype, self.size, self._flat = flat.dtype, flat.size, flat

    def reader(self, chunk_elements: int) -> Reader:
        flat = self._flat
        return lambda start, stop: flat[start:stop]


Values = Union[StoredValues, DequantizedValues, ArrayValues]


def chunked_values(item: Any) -> "StoredValues | DequantizedValues | None":
    """The item's values read a chunk at a time: as its file holds them, or dequantized from its stored
    bytes; None when neither can be (encoded bools, transformed tensors, a remote one not quantized)."""
    return StoredValues.of(item) or dequantized_values(item)


def values_of(item: Any) -> Values:
    """``chunked_values``, else ``item.read()`` flattened (read once, here)."""
    chunked = chunked_values(item)
    return chunked if chunked is not None else ArrayValues(np.ascontiguousarray(item.read()).reshape(-1))


def dequantized_values(item: Any) -> DequantizedValues | None:
    """A quantized item's F32 values from its stored bytes (None for any other item); SchemeError when they
    cannot be decoded. A quantized item's bytes are always as stored: no surgery op changes them."""
    if item.dtype.kind == ggml.KIND:  # a GGUF block type: gguf's own dequantization, a few blocks at a time
        return ggml.BlockValues(item.dtype.name, tuple(item.shape), stored_bytes(item))
    if item.dtype.kind != "quantized":
        return None
    return DequantizedValues(item.dtype.quant_scheme, tuple(item.shape), item.nbytes, stored_bytes(item))


def stored_bytes(item: Any) -> ByteReader:
    """Positioned reads of an item's stored bytes, each checked against a file changed on disk after it is
    read; an item with no file range (a remote one) is streamed into memory once, as reading it whole did."""
    span = item.byte_range()
    if span is None:
        whole = memoryview(bytearray(item.nbytes))
        at = 0
        for part in item.iter_bytes():
            whole[at:at + len(part)] = part
            at += len(part)
        return lambda offset, length: whole[offset:offset + length]
    fd, base, _ = span
    verify = item.verify

    def read(offset: int, length: int) -> bytearray:
        buffer = bytearray(length)
        _read_exactly(fd, memoryview(buffer), base + offset)
        verify()  # after reading: these bytes are the file's as opened, or this raises
        return buffer
    return read


def _read_exactly(fd: int, view: memoryview, offset: int) -> None:
    done = 0
    while done < len(view):
        n = os.preadv(fd, [view[done:]], offset + done)
        if n <= 0:
            break  # the file shrank: the caller's verify() says it changed on disk
        done += n


class Rewritten:
    """An export item whose bytes are computed from a source tensor's (its values, or another encoding of them):
    the source's name, shape and id, no byte range to copy, and the source's checks and release."""

    def __init__(self, source: Any):
        self.source = source
        self.name, self.shape, self.param_id = source.name, tuple(source.shape), source.param_id

    def byte_range(self) -> None:
        return None

    def verify(self) -> None:
        self.source.verify()

    def release(self) -> None:
        release = getattr(self.source, "release", None)
        if release:
            release()


class Dequantized(Rewritten):
    """A quantized tensor source written as its values (``convert --dequantize``): what Burn's ``dequantize`` or
    gguf's gives, computed a step at a time when the export reaches it, as F32 or (GGUF's block types, whose
    default is F16) the float ``dtype`` asked for."""

    def __init__(self, source: Any, dtype: DType = F32):
        super().__init__(source)
        self.dtype = dtype
        self.nbytes = dtype.nbytes(self.shape)

    def iter_bytes(self, chunk_size: int = 16 << 20) -> Iterator[memoryview]:
        values = dequantized_values(self.source)
        step = max(1, min(chunk_size // 4, DEQUANTIZE_STEP))
        target = self.dtype.numpy
        for start in range(0, values.size, step):
            chunk = values.values(start, min(values.size, start + step))
            yield memoryview(chunk.astype(target, copy=False).view(np.uint8))


class BurnBlocks(Rewritten):
    """A GGUF Q8_0 or Q4_0 tensor written as Burn's block quantization of the same values (``engine/ggml.py``
    says why they are equal): the stored blocks read a few MiB at a time, never dequantized."""

    def __init__(self, source: Any, burn_version: BurnVersion):
        super().__init__(source)
        self._type = source.dtype.name
        self.scheme = ggml.burn_scheme(self._type, burn_version)
        self.dtype = ggml.burn_dtype(self._type, burn_version)
        self.nbytes = layouts(self.scheme, self.shape)[0].total

    def iter_bytes(self, chunk_size: int = 16 << 20) -> Iterator[bytes]:
        read, total = stored_bytes(self.source), self.source.nbytes
        block_bytes = ggml.by_name(self._type).block_bytes
        step = max(1, chunk_size // block_bytes) * block_bytes  # whole blocks a read
        blocks = (read(at, min(step, total - at)) for at in range(0, total, step))
        yield from ggml.burn_bytes(self._type, self.scheme, blocks, math.prod(self.shape))


class Quantized(Rewritten):
    """A float tensor source written as Burn's block quantization of its values (``value`` Q8S, Q4S or Q2S, blocks
    of ``block`` along the last dimension) for Burn ``burn_version``: computed a few rows at a time when the export
    reaches it."""

    def __init__(self, source: Any, value: str, block: int, burn_version: BurnVersion):
        super().__init__(source)
        reason = quantizable(source.dtype, self.shape, block, value)
        if reason:
            raise ValueError(f"tensor {source.name!r} cannot be quantized to {value} in blocks of {block}: {reason}")
        self.value, self.block = value, block
        self.scheme = burn_scheme(value, block, burn_version)
        self.dtype = quantized_dtype(encode_scheme(self.scheme, burn_version))
        self.nbytes = layouts(self.scheme, self.shape)[0].total

    def iter_bytes(self, chunk_size: int = 16 << 20) -> Iterator[bytes]:
        """The values, a few rows at a time, then every scale; ExportError naming the tensor if one cannot be."""
        from ..errors import ExportError
        row = self.shape[-1]
        rows = math.prod(self.shape) // row
        step = max(1, min(chunk_size // 4, QUANTIZE_STEP) // row)  # whole rows a step, at least one
        read = values_of(self.source).reader(step * row)
        half = self.scheme.scale_dtype == "F16"
        scales = []
        for first in range(0, rows, step):
            count = min(step, rows - first)
            chunk = np.asarray(read(first * row, (first + count) * row)).astype(np.float32).reshape(count, row)
            try:
                q, s = quantize_rows(chunk, self.value, self.block, self.scheme.scale_dtype)
            except ValueError as exc:
                raise ExportError(f"tensor {self.name!r} cannot be quantized: {exc}") from None
            yield pack(q, BITS[self.value])
            scales.append(s.reshape(-1).astype("<f2" if half else "<f4"))  # f16 exact: s is on f16's grid
        yield np.concatenate(scales).tobytes() if scales else b""

