"""Bin records (bincode): no field names, so parameters are found by their pattern, in record order.

Recent Burn writes bincode 2 ``standard()``: integers and lengths as varints (``< 251`` that
byte; 251, 252, 253 then a u16, u32, u64). Older files may use bincode 1's fixed encoding (u64
lengths, u32 enum indices); the first string's length tells which. After the five metadata
strings comes the item; each parameter is its id string (13 characters of base32hex, or an old
36-character UUID) then its TensorData: ``bytes`` (length + bytes), ``shape`` (length + sizes),
``dtype`` (variant index, whose order depends on the Burn version). Anything between parameters
(Option tags, enum variant indices) is stepped over.
"""

from __future__ import annotations

import math
import mmap
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ... import dtypes
from ...dtypes import DType
from ...errors import FormatError
from ...sources.local import MappedFile
from ..rust_model.shapes import fits
from .record import BOOL_STORES, DTYPE_TABLES, MAX_TENSORS, Metadata, Tensor, check_size, param_id

if TYPE_CHECKING:
    pass

MAX_TEXT = 1 << 20  # a metadata string (the recorder's type name is ~100 characters)
SNIFFED = 4096  # the first bytes a record's kind is told by (burn_record.open reads as many)
_FIXED = {251: 2, 252: 4, 253: 8}
_VARINT_IDS = re.compile(rb"\x0d[0-9a-v]{13}|\x24[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_FIXED_IDS = re.compile(rb"\x0d\x00{7}[0-9a-v]{13}|\x24\x00{7}[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TYPE_NAME = set(b"abcdefghijklmnopqrstuvwxyz0123456789_:")


def sniff(head: bytes) -> bool:
    """Five metadata strings; the first is a Rust float type name (``f32``, ``half::binary16::f16``)."""
    return _encoding(head) is not None


def _encoding(head: bytes) -> bool | None:
    """Whether ``head`` starts a Bin record in bincode 1's fixed encoding (True) or bincode 2's varints (False);
    None when it starts no Bin record. Reading decides as this does, so a record is read as it was sniffed."""
    for fixed in (False, True):
        try:
            codec = _Codec(head, fixed)
            text, pos = codec.text(0, "the float type")
            if not text or not set(text.encode()) <= _TYPE_NAME or "f" not in text:
                continue
            _, pos = codec.text(pos, "the int type")
            recorder, _ = codec.text(pos, "the recorder")
            if "Bin" in recorder and "Recorder" in recorder:
                return fixed
        except (_Truncated, FormatError, UnicodeDecodeError):
            continue
    return None


class _Truncated(Exception):
    def __init__(self, pos: int):
        self.pos = pos


class _Codec:
    """Reads bincode integers and strings from a buffer, standard (varint) or fixed (bincode 1)."""

    def __init__(self, buf: bytes | mmap.mmap, fixed: bool):
        self.buf, self.fixed, self.size = buf, fixed, len(buf)

    def _bytes(self, pos: int, n: int) -> bytes:
        if pos + n > self.size:
            raise _Truncated(pos)
        return self.buf[pos:pos + n]

    def uint(self, pos: int, width: int = 8) -> tuple[int, int]:
        """A usize/u64 (``width`` 8) or an enum index (``width`` 4 in bincode 1)."""
        if self.fixed:
            return int.from_bytes(self._bytes(pos, width), "little"), pos + width
        first = self._bytes(pos, 1)[0]
        if first < 251:
            return first, pos + 1
        n = _FIXED.get(first)
        if n is None:
            raise FormatError(None, f"byte {pos}: varint marker {first} is not one bincode writes")
        return int.from_bytes(self._bytes(pos + 1, n), "little"), pos + 1 + n

    def text(self, pos: int, what: str) -> tuple[str, int]:
        n, pos = self.uint(pos)
        if n > MAX_TEXT:
            raise FormatError(None, f"{what} at byte {pos} claims {n} characters")
        return self._bytes(pos, n).decode("utf-8"), pos + n


def read(mapped: MappedFile, shown: Path, names: list[str] | None) -> tuple[Metadata, list[Tensor], str]:
    """The metadata, each parameter (named ``param.N`` unless ``names`` are given) and the encoding used."""
    if mapped.size == 0:
        raise FormatError(shown, "file is empty")
    with mmap.mmap(mapped.fd, 0, access=mmap.ACCESS_READ) as buf:
        codec = _Codec(buf, _encoding(buf[:SNIFFED]) is True)
        try:
            fields, pos = [], 0
            for what in ("float", "int", "format", "version", "settings"):
                text, pos = codec.text(pos, f"metadata {what}")
                fields.append(text)
            meta = Metadata(*fields)
            tensors = _Scanner(codec, meta, shown).scan(pos)
        except _Truncated as exc:
            raise FormatError(shown, f"file is truncated: a value at byte {exc.pos} runs past the end "
                                     f"({mapped.size} bytes)") from None
        except UnicodeDecodeError:
            raise FormatError(shown, "the record's metadata is not text: not a Burn Bin record") from None
        except FormatError as exc:
            raise FormatError(shown, exc.problem) from None
    return meta, _named(shown, tensors, names), "bincode 1 (fixed)" if codec.fixed else "bincode 2 (varint)"


def _named(shown: Path, tensors: list[Tensor], names: list[str] | None) -> list[Tensor]:
    if names is None:
        for i, t in enumerate(tensors):
            t.name = f"param.{i}"
        return tensors
    if len(names) != len(tensors):
        raise FormatError(shown, f"the record has {len(tensors)} parameters but the template has {len(names)} "
                                 "tensors: it is not the same architecture")
    for i, (t, (name, shape)) in enumerate(zip(tensors, names)):
        if not fits(shape, t.shape):
            raise FormatError(shown, f"parameter {i} has shape {list(t.shape)} but the template's tensor {i} "
                                     f"({name!r}) has {list(shape)}: it is not the same architecture")
        t.name = name
    return tensors


class _Scanner:
    def __init__(self, codec: _Codec, meta: Metadata, shown: Path):
        self.codec, self.meta, self.shown = codec, meta, shown
        self.variants = meta.dtype_variants()

    def scan(self, pos: int) -> list[Tensor]:
        """Each id string from ``pos`` on (searched in C: whatever lies between parameters is skipped
        at memory speed), then the TensorData after it."""
        ids = _FIXED_IDS if self.codec.fixed else _VARINT_IDS
        tensors = []
        while (found := ids.search(self.codec.buf, pos)) is not None:
            tensor, pos = self._param(found.start(), len(tensors))
            tensors.append(tensor)
            if len(tensors) > MAX_TENSORS:  # refused while scanning, before millions are built
                raise FormatError(self.shown, f"more than {MAX_TENSORS} tensors, over the limit")
        return tensors

    def _param(self, pos: int, index: int) -> tuple[Tensor, int]:
        at = pos
        id_text, pos = self.codec.text(pos, "a parameter id")
        where = f"parameter {index} at byte {at} (id {id_text})"
        if not self.meta.tensor_data:
            return self._old_param(pos, where, id_text)
        n, pos = self.codec.uint(pos)
        start, pos = pos, pos + n
        if pos > self.codec.size:
            raise FormatError(None, f"file is truncated: {where} has {n} bytes, past the end of the file")
        shape, pos = self._shape(pos, where)
        dtype, pos = self._dtype(pos, where, shape, n)
        check_size(self.shown, where, dtype, shape, n)
        return Tensor("", dtype, shape, n, param_id(id_text), offset=start, id_text=id_text), pos

    def _shape(self, pos: int, where: str) -> tuple[tuple[int, ...], int]:
        ndim, pos = self.codec.uint(pos)
        if ndim > 64:
            raise FormatError(None, f"{where}: {ndim} dimensions")
        dims = []
        for _ in range(ndim):
            d, pos = self.codec.uint(pos)
            dims.append(d)
        return tuple(dims), pos

    def _dtype(self, pos: int, where: str, shape: tuple[int, ...], nbytes: int) -> tuple[DType, int]:
        """The DType at ``index`` in the table of the record's version; should its size not match the
        bytes, the other table's plain type at that index, if that one's does (a version boundary guessed
        wrong must not refuse a good file)."""
        index, pos = self.codec.uint(pos, 4)
        if index >= len(self.variants):
            raise FormatError(None, f"{where}: dtype index {index} is not a DType of Burn {self.meta.version}")
        name = self.variants[index]
        other = next((t[index] for t in DTYPE_TABLES if t is not self.variants and index < len(t)), None)
        if name not in ("Bool", "QFloat") and other not in (None, "Bool", "QFloat") and \
                dtypes.from_burnpack(name).nbytes(shape) != nbytes == dtypes.from_burnpack(other).nbytes(shape):
            name = other
        if name == "QFloat":
            raise FormatError(None, f"{where}: quantized tensors in Bin records are not supported (their scheme has "
                                    "no names); save the model with NamedMpkFileRecorder first")
        if name == "Bool" and self.meta.bool_has_store():
            store, pos = self.codec.uint(pos, 4)
            if store > 2:
                raise FormatError(None, f"{where}: bool storage index {store} is not Native, U8 or U32")
            name = {"Bool": BOOL_STORES[store]}
        dtype = dtypes.from_burnpack(name)
        settled = self.meta.settled_float()
        if settled is not None and dtype.kind == "float" and dtype.bits == settled.bits:
            # Burn converts every float tensor to the settings' type before saving: where two tables
            # would give floats of one width (F16 and BF16 swap places between versions), that type decides.
            dtype = settled
        return dtype, pos

    def _old_param(self, pos: int, where: str, id_text: str) -> tuple[Tensor, int]:
        """Before Burn 0.14: ``value: Vec<E>`` then ``shape``. Nothing says whether E is the float or
        the int type of the settings: the float reading is tried first, and the int one when the
        values do not end where a shape of as many elements begins."""
        try:
            return self._old_values(pos, where, id_text, "float")
        except (_Truncated, FormatError):
            return self._old_values(pos, where, id_text, "int")

    def _old_values(self, pos: int, where: str, id_text: str, kind: str) -> tuple[Tensor, int]:
        import numpy as np
        dtype = self.meta.element_type(self.shown, kind)
        count, pos = self.codec.uint(pos)
        if count > self.codec.size - pos:
            raise FormatError(None, f"{where}: {count} values, more than the bytes left in the file")
        varint = not self.codec.fixed and (dtype in (dtypes.F16, dtypes.BF16) or dtype.kind in ("int", "uint"))
        if varint:  # serde writes half floats as their u16 bits; bincode 2 writes integers as varints
            numbers = []
            for _ in range(count):
                v, pos = self.codec.uint(pos)
                numbers.append((v >> 1) ^ -(v & 1) if dtype.kind == "int" else v)
            bits = np.uint16 if dtype.kind == "float" else dtype.numpy
            try:
                array = np.array(numbers, bits).view(dtype.numpy)
            except OverflowError:
                raise FormatError(None, f"{where}: a value does not fit {dtype}") from None
        else:
            itemsize = dtype.itemsize or 1
            array = np.frombuffer(self.codec._bytes(pos, count * itemsize), dtype.numpy).copy()
            pos += count * itemsize
        shape, pos = self._shape(pos, where)
        if math.prod(shape) != count:
            raise FormatError(None, f"{where}: {count} values for shape {list(shape)}")
        return Tensor("", dtype, shape, array.nbytes, param_id(id_text), array=array.reshape(shape),
                      id_text=id_text), pos
