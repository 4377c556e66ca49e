"""What the unpickler builds for tensors: descriptors, never data.

A ``StorageRef`` names one storage (its bytes sit somewhere in the file, or in the pickle
itself for numpy arrays); a ``TensorRef`` is a strided view into one. Every number a pickle
claims is checked here before anything is mapped or allocated.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

import msgspec

from ... import dtypes
from ...dtypes import DType
from ...errors import FormatError, shown
from ..mapped import MAX_ELEMENTS

MAX_DIMS = 64
# A view whose strides repeat elements (a saved expand()) holds more values than its storage;
# materializing it may not exceed its storage by more than this.
MAX_BROADCAST_BYTES = 256 << 20
# All tensors together may claim at most this many times the file's bytes, plus this much:
# 1,000 names sharing one stride-0 view of one element would otherwise claim 250 GiB, and
# converting them would write until the disk is full.
MAX_LOGICAL_RATIO = 64
MAX_LOGICAL_EXTRA = 1 << 30


def check_total(path: str | os.PathLike, total: int, file_size: int) -> None:
    """The tensors' logical bytes (what converting writes) against what the file can hold."""
    limit = MAX_LOGICAL_RATIO * file_size + MAX_LOGICAL_EXTRA
    if total > limit:
        raise FormatError(path, f"the tensors claim {total} bytes in all, over the limit of {limit} "
                                f"({MAX_LOGICAL_RATIO} times the file's {file_size} bytes, plus 1 GiB): "
                                "views that repeat their storage's values")

# Element types torch has but the app's dtype model does not decode: listed, never read.
C32 = DType("C32", 32, "complex")
F8_E4M3FNUZ = DType("F8_E4M3FNUZ", 8, "float")
F8_E5M2FNUZ = DType("F8_E5M2FNUZ", 8, "float")

# torch.<name> dtype globals (aliases included) and the legacy storage class of each.
TORCH_DTYPES: dict[str, DType] = {
    "float64": dtypes.F64, "double": dtypes.F64, "float32": dtypes.F32, "float": dtypes.F32,
    "float16": dtypes.F16, "half": dtypes.F16, "bfloat16": dtypes.BF16,
    "int64": dtypes.I64, "long": dtypes.I64, "int32": dtypes.I32, "int": dtypes.I32,
    "int16": dtypes.I16, "short": dtypes.I16, "int8": dtypes.I8, "uint8": dtypes.U8, "bool": dtypes.BOOL,
    "uint16": dtypes.U16, "uint32": dtypes.U32, "uint64": dtypes.U64,
    "complex64": dtypes.C64, "cfloat": dtypes.C64, "complex128": dtypes.C128, "cdouble": dtypes.C128,
    "complex32": C32, "chalf": C32,
    "float8_e4m3fn": dtypes.F8_E4M3, "float8_e5m2": dtypes.F8_E5M2, "float8_e8m0fnu": dtypes.F8_E8M0,
    "float8_e4m3fnuz": F8_E4M3FNUZ, "float8_e5m2fnuz": F8_E5M2FNUZ,
}
STORAGE_CLASSES: dict[str, DType] = {
    "DoubleStorage": dtypes.F64, "FloatStorage": dtypes.F32, "HalfStorage": dtypes.F16,
    "BFloat16Storage": dtypes.BF16, "LongStorage": dtypes.I64, "IntStorage": dtypes.I32,
    "ShortStorage": dtypes.I16, "CharStorage": dtypes.I8, "ByteStorage": dtypes.U8, "BoolStorage": dtypes.BOOL,
    "ComplexFloatStorage": dtypes.C64, "ComplexDoubleStorage": dtypes.C128,
}


class cached_property(functools.cached_property):  # noqa: N801 - functools' name, for what does its job
    """``functools.cached_property`` less the lock Python 3.11 takes at each first access (3.12 dropped it): a
    view's five sizes are first read as a ``.pt`` opens, and that lock was a tenth of listing one (730 first
    reads for the benchmark's 146 tensors). A view is made and read on one thread."""

    def __get__(self, view: Any, owner: type | None = None) -> Any:
        if view is None:
            return self
        value = view.__dict__[self.attrname] = self.func(view)
        return value


# The records here are msgspec Structs, as the store's entries are: a dataclass generates and compiles its
# methods at import, 1-2 ms of every conversion's start-up a class. Both compare (and hash) by identity.
class StorageRef(msgspec.Struct, eq=False):
    """One storage. The layout fills in where its bytes are: ``file_offset`` or ``data``.

    ``view_of`` (legacy and tar layouts) says it is a byte range of another storage.
    """

    key: str
    dtype: DType
    nbytes: int
    view_of: tuple[str, int] | None = None
    file_offset: int | None = None
    data: bytes | None = None
    big_endian: bool = False


class TensorRef(msgspec.Struct, frozen=True, eq=False, dict=True):  # dict: room for the cached sizes
    """A strided view (offset and strides in elements of ``dtype``) into one storage.

    Its derived sizes are computed once each (opening checks them and lists them, reading uses them
    again); they depend only on the view's own fields, which never change."""

    storage: StorageRef
    dtype: DType
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @cached_property
    def itemsize(self) -> int:
        return self.dtype.itemsize or 0

    @cached_property
    def numel(self) -> int:
        return math.prod(self.shape)

    @cached_property
    def nbytes(self) -> int:
        return self.numel * self.itemsize

    @cached_property
    def span(self) -> int:
        """Elements from the first to the last one this view touches (0 when empty)."""
        if self.numel == 0:
            return 0
        return 1 + sum((d - 1) * s for d, s in zip(self.shape, self.stride))

    @cached_property
    def contiguous(self) -> bool:
        expected = 1
        for dim, stride in zip(reversed(self.shape), reversed(self.stride)):
            if dim != 1 and stride != expected:
                return False
            expected *= dim
        return True

    def check(self, path: str | os.PathLike, name: str) -> None:
        """The view must lie inside its storage; a repeating view must stay small."""
        end = (self.offset + self.span) * self.itemsize
        if self.numel and end > self.storage.nbytes:
            raise FormatError(path, f"tensor {name!r} ({self.dtype} {list(self.shape)}, offset {self.offset}, stride "
                                    f"{list(self.stride)}) reaches byte {end} of its storage, which has "
                                    f"{self.storage.nbytes}")
        if self.nbytes > max(self.storage.nbytes, MAX_BROADCAST_BYTES):
            raise FormatError(path, f"tensor {name!r} repeats its storage's values into {self.nbytes} bytes, "
                                    f"over the limit of {MAX_BROADCAST_BYTES}")


def storage_from_pid(path: str | os.PathLike, pid: Any, *, legacy: bool) -> tuple[StorageRef, Any]:
    """Parse ``('storage', type, key, location, numel[, view_metadata])`` into the storage and
    its view metadata (legacy only; None elsewhere)."""
    size = 6 if legacy else 5
    if not isinstance(pid, tuple) or len(pid) != size or pid[0] != "storage":
        raise FormatError(path, f"persistent id {shown(pid, 120)} is not a storage reference")
    _, kind, key, location, numel = pid[:5]
    dtype = storage_dtype(path, kind)
    if not isinstance(key, (str, int)) or isinstance(key, bool) or not isinstance(location, str):
        raise FormatError(path, f"storage reference {shown(pid, 120)} has an invalid key or location")
    nbytes = _count(path, numel, f"storage {key} size") * (dtype.itemsize or 0)
    return StorageRef(str(key), dtype, nbytes), (pid[5] if legacy else None)


def storage_view(path: str | os.PathLike, root: StorageRef, view: Any) -> StorageRef:
    """A legacy view storage ``(view_key, offset, size)``, in elements of the root's type."""
    if not isinstance(view, tuple) or len(view) != 3 or not isinstance(view[0], (str, int)):
        raise FormatError(path, f"storage {root.key} has invalid view metadata {view!r:.120}")
    view_key, offset, size = view
    itemsize = root.dtype.itemsize or 0
    return StorageRef(str(view_key), root.dtype, _count(path, size, "view size") * itemsize,
                      view_of=(root.key, _count(path, offset, "view offset") * itemsize))


def storage_dtype(path: str | os.PathLike, kind: Any) -> DType:
    """The element type a storage class or ``torch.<dtype>`` global stands for."""
    dtype = getattr(kind, "dtype", None)
    if getattr(kind, "kind", None) not in ("storage", "dtype"):
        raise FormatError(path, f"storage type {kind!r:.80} is not a torch storage class or dtype")
    if dtype is None:
        raise FormatError(path, f"storage type {kind.qualname} does not say its element type")
    return dtype


def tensor(path: str | os.PathLike, storage: Any, offset: Any, size: Any, stride: Any,
           dtype: DType | None = None) -> TensorRef:
    """A validated view; called by the rebuild functions the pickle names."""
    if not isinstance(storage, StorageRef):
        raise FormatError(path, f"a tensor's storage is {type(storage).__name__}, not a storage reference")
    shape = _dims(path, size, "size")
    strides = _dims(path, stride, "stride")
    if len(shape) != len(strides):
        raise FormatError(path, f"a tensor has size {list(shape)} but stride {list(strides)}")
    if math.prod(d for d in shape if d) > MAX_ELEMENTS:  # even an empty one (a zero dim) must fit an array
        raise FormatError(path, f"a tensor of size {list(shape)} is larger than any array can be")
    return TensorRef(storage, dtype or storage.dtype, _count(path, offset, "storage offset"), shape, strides)


def _dims(path: str | os.PathLike, value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or len(value) > MAX_DIMS:
        raise FormatError(path, f"a tensor {what} {value!r:.120} is not a list of at most {MAX_DIMS} numbers")
    if set(map(type, value)) <= _INT and min(value, default=0) >= 0 and max(value, default=0) < 1 << 63:
        return tuple(value)  # the common case, in C-level passes: each one a count, as ``_count`` checks it
    return tuple(_count(path, d, what) for d in value)


_INT = {int}


def _count(path: str | os.PathLike, value: Any, what: str) -> int:
    """A size, stride or offset: torch holds them in int64, so wider ones are refused (and never printed whole)."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 63:
        wide = isinstance(value, int) and value.bit_length() > 64
        shown = f"a {value.bit_length()}-bit number" if wide else f"{value!r:.80}"
        raise FormatError(path, f"{what} {shown} is not a non-negative whole number (of 64 bits at most)")
    return value
