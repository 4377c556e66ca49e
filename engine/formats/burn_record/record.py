"""What every Burn record format shares: metadata, dtypes, parameter ids and the opened store.

A record is ``BurnRecord { metadata, item }``: ``metadata`` names the Burn version, the recorder
and the precision settings; ``item`` is the module's record tree. Named formats (msgpack, JSON)
give a tree whose parameters are ``{id, param: TensorData}``; bincode gives only the parameters,
found by their pattern (``bincode``).
"""

from __future__ import annotations

import math
import re
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import msgspec

from ... import dtypes
from ...dtypes import DType
from ...errors import FormatError
from ...sources import CHUNK
from ...sources.byte_source import ByteSource
from ...sources.locations import Location, location
from ...store import TensorEntry
from ..mapped import RangeStore, build_entries

if TYPE_CHECKING:
    import numpy as np

NAME = "burn-record"
METADATA_FIELDS = ("float", "int", "format", "version", "settings")
PARAM_ID_CHARS = 13  # unpadded base32hex of a u64's 8 bytes
_BASE32HEX = re.compile(r"[0-9a-v]{13}")
MAX_DEPTH = 128  # as Burnpack's CBOR
MAX_TENSORS = 100_000

# DType variants in declaration order (bincode writes the index). Burn 0.14 and 0.15 had no
# Flex32; 0.16 added it after F32; by 0.21 Bool carries its storage (BoolStore: Native, U8, U32).
_PLAIN_ORDER_0_14 = ("F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "Bool",
                     "QFloat")
_PLAIN_ORDER_0_16 = ("F64", "F32", "Flex32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8",
                     "Bool", "QFloat")
DTYPE_TABLES = (_PLAIN_ORDER_0_14, _PLAIN_ORDER_0_16)
BOOL_STORES = ("Native", "U8", "U32")

# Element types of the pre-0.14 ``{value: [...], shape}`` layout, by the Rust type name in metadata.
_ELEMENT_TYPES = {"f64": dtypes.F64, "f32": dtypes.F32, "half::binary16::f16": dtypes.F16,
                  "half::bfloat::bf16": dtypes.BF16, "i64": dtypes.I64, "i32": dtypes.I32, "i16": dtypes.I16,
                  "i8": dtypes.I8, "u64": dtypes.U64, "u32": dtypes.U32, "u16": dtypes.U16, "u8": dtypes.U8,
                  "bool": dtypes.BOOL}


# The records here are msgspec Structs, as the store's entries are: a dataclass generates and compiles its
# methods at import, 1-2 ms of every conversion's start-up a class.
class Metadata(msgspec.Struct, frozen=True):
    """``BurnMetadata``: all text."""

    float: str
    int: str
    format: str
    version: str
    settings: str

    @property
    def version_tuple(self) -> tuple[int, int]:
        found = re.match(r"(\d+)\.(\d+)", self.version)
        return (int(found[1]), int(found[2])) if found else (0, 0)

    @property
    def recorder(self) -> str:
        """``NamedMpkFileRecorder`` out of the full Rust type name."""
        head = self.format.split("<", 1)[0]
        return head.rsplit("::", 1)[-1]

    @property
    def tensor_data(self) -> bool:
        """Burn >= 0.14 writes ``{bytes, shape, dtype}``; before, ``{value, shape}``."""
        return self.version_tuple >= (0, 14)

    def text(self) -> dict[str, str]:
        """What the File panel shows and conversions keep (the recorder's full Rust type name is left
        out: ``recorder`` and ``settings`` say the same, readably)."""
        return {"burn.version": self.version, "burn.recorder": self.recorder, "burn.settings": self.settings,
                "burn.float": self.float, "burn.int": self.int}

    def dtype_variants(self) -> tuple[str, ...]:
        return _PLAIN_ORDER_0_16 if self.version_tuple >= (0, 16) else _PLAIN_ORDER_0_14

    def bool_has_store(self) -> bool:
        return self.version_tuple >= (0, 21)

    def settled_float(self) -> DType | None:
        """The float type the precision settings convert every float tensor to, when known."""
        return _ELEMENT_TYPES.get(self.float) if self.float.startswith(("f", "half::")) else None

    def element_type(self, path: Path, kind: str) -> DType:
        """The element type of an old-layout tensor: ``kind`` is "float" or "int" (from the settings)."""
        name = self.float if kind == "float" else self.int
        found = _ELEMENT_TYPES.get(name)
        if found is None:
            raise FormatError(path, f"record metadata names the {kind} type {name!r:.60}, which this app does not know")
        return found


def metadata_from(path: Path, value: Any) -> Metadata:
    """Check a decoded ``metadata`` map."""
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) for k in METADATA_FIELDS):
        raise FormatError(path, f"the record's metadata is not a map of {', '.join(METADATA_FIELDS)} (text each)")
    return Metadata(*(value[k] for k in METADATA_FIELDS))


def param_id(text: str) -> int | None:
    """Burn's 13-character ParamId text as the u64 Burnpack stores; None for anything else (old UUIDs).

    The text is the u64's 8 little-endian bytes in base32hex, whose digits are Python's base-32
    digits: 65 bits, the last one padding (which must be zero)."""
    if len(text) != PARAM_ID_CHARS or not _BASE32HEX.fullmatch(text):
        return None
    bits = int(text, 32)
    if bits & 1:  # a stray bit past the 64th: not a spelling Burn writes
        return None
    return int.from_bytes((bits >> 1).to_bytes(8, "big"), "little")


def dtype_by_name(path: Path, where: str, value: Any) -> DType:
    """A serde DType (``"F16"``, ``{"Bool": "Native"}``, ``{"QFloat": ...}``) as named formats spell it."""
    try:
        return dtypes.from_burnpack(value)
    except (ValueError, TypeError):
        raise FormatError(path, f"{where}: dtype {value!r:.80} is not one of Burn's") from None


def check_size(path: Path, where: str, dtype: DType, shape: tuple[int, ...], nbytes: int) -> None:
    """bytes = numel x element size, the check that also catches a wrong dtype table."""
    need = dtype.nbytes(shape)
    if need is not None and need != nbytes:
        raise FormatError(path, f"{where}: {nbytes} bytes, but {dtype} x {list(shape)} needs {need}")


class Tensor(msgspec.Struct):
    """One tensor of a record: its bytes lie at ``offset`` of the (mapped) file, or in ``array``."""

    name: str
    dtype: DType
    shape: tuple[int, ...]
    nbytes: int
    param_id: int | None = None
    offset: int | None = None
    array: np.ndarray | None = None
    id_text: str | None = None


def shape_of(path: Path, where: str, value: Any) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or len(value) > 64 or \
            not all(type(d) is int and 0 <= d < 1 << 63 for d in value):
        raise FormatError(path, f"{where}: shape {value!r:.80} is not a list of at most 64 sizes")
    return tuple(value)


def values_array(path: Path, where: str, values: Any, dtype: DType, shape: tuple[int, ...]) -> np.ndarray:
    """Old-layout numbers as an array; half floats were written as their 16-bit patterns."""
    import numpy as np
    if not isinstance(values, (list, tuple)) or len(values) != math.prod(shape):
        count = len(values) if isinstance(values, (list, tuple)) else "no"
        raise FormatError(path, f"{where}: {count} values for shape {list(shape)}")
    try:
        if dtype in (dtypes.F16, dtypes.BF16) and all(type(v) is int for v in values):
            return np.array(values, np.uint16).view(dtype.numpy).reshape(shape)
        return np.array(values, dtype.numpy).reshape(shape)
    except (TypeError, ValueError, OverflowError):
        raise FormatError(path, f"{where}: values are not {dtype} numbers") from None


class BurnRecordStore(RangeStore):
    """Tensors mapped from the record file (or its decompressed copy), or decoded in memory."""

    format = NAME

    def __init__(self, path: Location, tensors: list[Tensor], mapped: "ByteSource", *, kind: str,
                 meta: Metadata, values: Any = None, scalars: dict[str, Any] | None = None,
                 extra_metadata: dict[str, str] | None = None, temporary: Path | None = None):
        path = location(path)
        # the decompressed copy of a .gz record goes on close, or at exit for a store never closed
        self._remove_copy = weakref.finalize(self, temporary.unlink, missing_ok=True) if temporary else None
        if len(tensors) > MAX_TENSORS:
            raise FormatError(path, f"{len(tensors)} tensors, over the limit of {MAX_TENSORS}")
        self.kind = kind
        self.burn_metadata = meta
        self._arrays = {t.name: t.array for t in tensors if t.array is not None}
        rows = [(t.name, t.dtype, list(t.shape), t.offset, t.offset + t.nbytes, t.param_id)
                for t in tensors if t.array is None]
        mapped_entries = {e.name: e for e in build_entries(path, rows, 0, mapped.size, contiguous=False)}
        entries = [mapped_entries.get(t.name) or TensorEntry(t.name, t.dtype, t.shape, t.nbytes, t.param_id)
                   for t in tensors]
        metadata = {**meta.text(), **(extra_metadata or {})}
        for t in tensors:
            if t.id_text is not None and t.param_id is None:
                metadata[f"burn.param_id.{t.name}"] = t.id_text
        super().__init__(path, entries, mapped, version=f"{kind} · Burn {meta.version}", metadata=metadata,
                         values=values, scalars=scalars)
        self.files = [path]  # a .gz record maps a temporary copy; the user's file is the original
        if metadata.get("burn.names", "").startswith("positional"):
            self.note = "Tensor names are positional (param.0, param.1, ...): Bin records have no field names. " \
                        "Convert with --template (a file of the same model) to name them."

    @property
    def description(self) -> str:
        return f"Burn record {self.version}"

    # in-memory tensors have no file range
    def _read(self, entry: TensorEntry) -> np.ndarray:
        array = self._arrays.get(entry.name)
        return array if array is not None else super()._read(entry)

    def entry_byte_range(self, entry: TensorEntry) -> tuple[int, int, int] | None:
        return None if entry.name in self._arrays else super().entry_byte_range(entry)

    def entry_iter_bytes(self, entry: TensorEntry, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        import numpy as np
        if entry.name in self._arrays:
            self._check_open()
            data = memoryview(np.ascontiguousarray(self._arrays[entry.name]).reshape(-1).view(np.uint8))
            return (data[i:i + chunk_size] for i in range(0, len(data), chunk_size))
        return super().entry_iter_bytes(entry, chunk_size)

    def entry_release(self, entry: TensorEntry) -> None:
        if entry.name not in self._arrays:
            super().entry_release(entry)

    def close(self) -> None:
        super().close()
        if self._remove_copy is not None:
            self._remove_copy()
