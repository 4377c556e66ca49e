"""Burnpack (``.bpk``), Burn's native format: read and write, byte-exact to Burn's own files.

Layout: magic ``NRUB``, u16 version, u32 CBOR length, the CBOR metadata map, zero padding
to 256 bytes, then each tensor's bytes at a 256-aligned offset in module order.
"""

from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING, Any, BinaryIO, Sequence

from .. import dtypes, quantized
from ..burn_versions import NEWEST, BurnVersion
from ..errors import FormatError, shown
from ..sources.byte_source import ByteSource, read_with
from ..store import TensorEntry, TensorSource
from . import cbor
from .burn_compat import Compatibility, compatibility
from .mapped import RangeStore, build_entries

if TYPE_CHECKING:
    import numpy as np

NAME = "burnpack"
EXTENSIONS = (".bpk",)
LABEL = "Burnpack"
MAGIC = 0x4255524E
VERSION = 1
HEADER = struct.Struct("<IHI")  # magic, version, metadata size
ALIGN = 256
MAX_METADATA = 100 << 20
MAX_TENSORS = 100_000
MAX_TENSOR_BYTES = 10 << 30
SCALAR_KINDS = {"Int": int, "UInt": int, "Float": (float, int), "Bool": bool}


def sniff(head: bytes) -> bool:
    return head[:4] == b"NRUB"


def aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class BurnpackStore(RangeStore):
    """A Burnpack file; quantized tensors read as their dequantized F32 values (``read_quantized``: as stored)."""

    format = NAME
    burn: Compatibility | None = None  # which Burn releases load this file, from its dtype spellings

    def read_entry(self, entry: TensorEntry) -> np.ndarray:
        if entry.dtype.kind != "quantized":
            return super().read_entry(entry)
        self._check_open()
        from ..values.chunked import dequantized_values  # numpy: not at start-up
        try:
            return dequantized_values(entry).array()  # a step at a time: only the F32 result is held whole
        except quantized.SchemeError as exc:
            raise FormatError(self.path, f"tensor {entry.name!r}: {exc}") from None

    def read_quantized(self, name: str) -> quantized.QuantizedValues:
        """A quantized tensor's integers and scales as stored (FormatError when they cannot be decoded)."""
        self._check_open()
        entry = self.entry(name)
        if entry.dtype.kind != "quantized":
            raise ValueError(f"tensor {name!r} is {entry.dtype}, not quantized")
        raw = self._file(name).pread(entry.offset or 0, entry.nbytes, f"tensor {name!r}")
        try:
            return quantized.split(raw, entry.dtype.quant_scheme, entry.shape)
        except quantized.SchemeError as exc:
            raise FormatError(self.path, f"tensor {name!r}: {exc}") from None


def open(where: "str | os.PathLike | ByteSource", **options: Any) -> BurnpackStore:
    return read_with(where, _open)


def _open(mapped: ByteSource) -> BurnpackStore:
    path = mapped.path
    magic, version, size = HEADER.unpack(mapped.pread(0, HEADER.size, "the 10-byte header"))
    if magic != MAGIC:
        raise FormatError(path, "not a Burnpack file (wrong magic number)")
    if version > VERSION:
        raise FormatError(path, f"Burnpack version {version} is newer than this app reads (up to {VERSION})")
    if version == 0:
        raise FormatError(path, "Burnpack version 0 does not exist")
    if size > MAX_METADATA:
        raise FormatError(path, f"metadata claims {size} bytes, over Burn's limit of {MAX_METADATA}")
    raw = mapped.pread(HEADER.size, size, f"the {size}-byte metadata")
    try:
        meta = cbor.decode(raw)
    except ValueError as exc:
        raise FormatError(path, f"metadata is not valid: {exc}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("tensors", {}), dict):
        raise FormatError(path, "metadata is not a map with a 'tensors' map")
    tensors: dict = meta.get("tensors", {})
    if len(tensors) > MAX_TENSORS:
        raise FormatError(path, f"{len(tensors)} tensors, over Burn's limit of {MAX_TENSORS}")
    data_start = aligned(HEADER.size + size)
    buffer = max(0, mapped.size - data_start)
    rows = [_row(path, name, desc) for name, desc in tensors.items()]
    entries = build_entries(path, rows, data_start, buffer, contiguous=False, max_tensor_bytes=MAX_TENSOR_BYTES)
    _check_quantized_sizes(path, entries)
    store = BurnpackStore(path, entries, mapped, version=f"v{version}",
                          metadata=_text_map(path, meta.get("metadata", {}), "metadata"),
                          scalars=_scalars(path, meta.get("scalars", {})))
    spellings = [desc["dtype"] for desc in tensors.values()]
    quantized_entries = [e for e in entries if e.dtype.kind == "quantized"]
    store.burn = compatibility(bare_bool="Bool" in spellings,
                               bool_storages={s["Bool"] for s in spellings if isinstance(s, dict) and "Bool" in s},
                               quantized=[(e.dtype.quant_scheme, e.shape) for e in quantized_entries],
                               format_version=version)
    return store


def _check_quantized_sizes(path: os.PathLike, entries: list[TensorEntry]) -> None:
    """A quantized tensor whose bytes do not fit its scheme (truncated scales, a wrong scheme) is refused
    at open, as a dense tensor whose bytes do not fit dtype x shape is; schemes no one decodes are listed."""
    for entry in entries:
        if entry.dtype.kind != "quantized" or quantized.undecodable(entry.dtype.quant_scheme):
            continue
        try:
            quantized.check_layout(entry.dtype.quant_scheme, entry.shape, entry.nbytes)
        except quantized.SchemeError as exc:
            raise FormatError(path, f"tensor {entry.name!r} {exc}") from None


def _row(path: os.PathLike, name: Any, desc: Any) -> tuple:
    """One descriptor as a row for ``build_entries``; the checks that are Burnpack's own."""
    if not isinstance(name, str) or not isinstance(desc, dict) or not {"dtype", "shape", "data_offsets"} <= desc.keys():
        raise FormatError(path, f"tensor entry {shown(name)} needs dtype, shape and data_offsets")
    spelling = desc["dtype"]
    dtype = _PLAIN.get(spelling) if isinstance(spelling, str) else None
    if dtype is None:
        try:
            dtype = dtypes.from_burnpack(spelling)
        except ValueError as exc:
            raise FormatError(path, f"tensor {name!r}: {exc}") from None
    offsets = desc["data_offsets"]
    if not isinstance(offsets, (list, tuple)) or len(offsets) != 2:
        raise FormatError(path, f"tensor {name!r} has invalid data_offsets {shown(offsets)}")
    param_id = desc.get("param_id")
    if param_id is not None and (type(param_id) is not int or not 0 <= param_id < 1 << 64):
        raise FormatError(path, f"tensor {name!r} has an invalid param_id {shown(param_id)}: Burn stores a "
                                "whole number from 0 to 2**64 - 1")
    return name, dtype, desc["shape"], offsets[0], offsets[1], param_id


_PLAIN = {spelling: dtypes.from_burnpack(spelling) for spelling in ("F64", "F32", "F16", "BF16", "I64", "I32", "I16",
                                                                     "I8", "U64", "U32", "U16", "U8", "Bool")}


def _text_map(path: os.PathLike, value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise FormatError(path, f"'{what}' is not a map of text to text")
    return dict(value)


def _scalars(path: os.PathLike, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FormatError(path, "'scalars' is not a map")
    problem = scalar_problem(value)
    if problem:
        raise FormatError(path, problem)
    return dict(value)


def scalar_problem(scalars: dict[Any, Any]) -> str | None:
    """The first scalar this reader would refuse, in words (None when every one is Int, UInt, Float or Bool):
    the writer asks too, so no export makes a Burnpack its own reader refuses."""
    for name, scalar in scalars.items():
        ok = isinstance(name, str) and isinstance(scalar, dict) and len(scalar) == 1
        if ok:
            (kind, v), = scalar.items()
            ok = kind in SCALAR_KINDS and isinstance(v, SCALAR_KINDS[kind]) and (kind == "Bool" or not isinstance(v, bool))
        if not ok:
            return f"scalar {shown(name)} is not one of Int, UInt, Float, Bool: {shown(scalar)}"
    return None


# --- writing ------------------------------------------------------------------------------------

def layout(items: Sequence[TensorSource], metadata: dict[str, str], scalars: dict[str, Any],
           burn_version: BurnVersion = NEWEST) -> tuple[bytes, list[int]]:
    """The header bytes (padded to the data section) and each item's absolute file offset; dtypes are
    spelled as Burn ``burn_version`` reads them (Bool, the quantization scheme)."""
    tensors, offsets, position = {}, [], 0
    for item in items:
        start = aligned(position)
        offsets.append(start)
        desc: dict[str, Any] = {"dtype": dtypes.to_burnpack(item.dtype, burn_version), "shape": list(item.shape),
                                "data_offsets": [start, start + item.nbytes]}
        if item.param_id is not None:
            desc["param_id"] = item.param_id
        tensors[item.name] = desc
        position = start + item.nbytes
    meta: dict[str, Any] = {"tensors": dict(sorted(tensors.items(), key=lambda kv: kv[0].encode()))}
    if metadata:
        meta["metadata"] = dict(sorted(metadata.items()))
    if scalars:
        meta["scalars"] = dict(sorted(scalars.items()))
    body = cbor.encode(meta)
    header = HEADER.pack(MAGIC, VERSION, len(body)) + body
    header += bytes(aligned(len(header)) - len(header))
    return header, [len(header) + o for o in offsets]


def write_header(out: BinaryIO, items: Sequence[TensorSource], metadata: dict[str, str],
                 scalars: dict[str, Any], burn_version: BurnVersion = NEWEST) -> list[int]:
    header, offsets = layout(items, metadata, scalars, burn_version)
    out.write(header)
    return offsets
