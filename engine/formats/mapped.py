"""Shared machinery for formats whose tensors are plain byte ranges in files.

Headers are read with positioned reads (so opening touches only the header); values are read
with positioned reads into private memory (a mapped page past a file's end kills the process
with SIGBUS when the file shrinks under it); streaming reads a chunk at a time so that a
conversion's resident memory stays small however large the file is.

A file can change while it is open (a training job saving in place). Every data read checks,
after reading, that the open file's size and modification time are still those seen at open,
so a change gives a ``FormatError`` ("changed on disk"), never the other file's bytes. A file
*replaced* by a new one (a rename over it, as atomic savers do) is another inode: the open one
keeps its old, consistent bytes, which the store goes on reading (the window marks it stale).
"""

from __future__ import annotations

import math
import operator
import os
from itertools import chain, compress, repeat
from typing import TYPE_CHECKING, Callable, Iterator

from .. import humanize
from ..errors import FormatError, shown
from ..sources import CHUNK
from ..sources.locations import Location
from ..store import Store, TensorEntry, make_entries

if TYPE_CHECKING:
    import numpy as np

    from ..sources.byte_source import ByteSource


class RangeStore(Store):
    """A store whose every tensor is ``nbytes`` raw little-endian bytes at an offset of a byte source.

    ``files`` is the one source, or (sharded checkpoints) a map of tensor name to its shard's source.
    """

    def __init__(self, path: Location, entries: list[TensorEntry], files: "ByteSource | dict[str, ByteSource]",
                 **kwargs):
        self._shards = files if isinstance(files, dict) else None
        self._single = None if isinstance(files, dict) else files
        mapped = list({id(m): m for m in files.values()}.values()) if isinstance(files, dict) else [files]
        super().__init__(path, entries, files=[m.path for m in mapped], **kwargs)
        self._mapped = mapped

    def _file(self, name: str) -> "ByteSource":
        return self._single if self._shards is None else self._shards[name]

    def _read(self, entry: TensorEntry) -> np.ndarray:
        import numpy as np
        dtype = entry.dtype.numpy
        array = self._file(entry.name).array(entry.offset or 0, dtype, entry.shape)
        if entry.dtype.name == "BOOL" and dtype != np.bool_:
            array = array != 0  # Burn's U32-stored bools read as plain bools
        return array

    def byte_range(self, name: str) -> tuple[int, int, int] | None:
        self._check_open()
        return self.entry_byte_range(self.entry(name))

    def verify(self, name: str) -> None:
        self._check_open()
        self._file(name).verify()

    def iter_bytes(self, name: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
        self._check_open()
        return self.entry_iter_bytes(self.entry(name), chunk_size)

    def release(self, name: str) -> None:
        self.entry_release(self.entry(name))

    def entry_byte_range(self, entry: TensorEntry) -> tuple[int, int, int] | None:
        self._check_open()
        mapped = self._file(entry.name)
        fd = mapped.fileno()
        if fd is None:  # a remote source: export streams its chunks instead
            return None
        mapped.verify()
        return fd, entry.offset or 0, entry.nbytes

    def entry_verify(self, entry: TensorEntry) -> None:
        self._check_open()
        self._file(entry.name).verify()

    def entry_iter_bytes(self, entry: TensorEntry, chunk_size: int = CHUNK) -> Iterator[bytes]:
        self._check_open()
        return self._file(entry.name).chunks(entry.offset or 0, entry.nbytes, chunk_size)

    def entry_release(self, entry: TensorEntry) -> None:
        self._file(entry.name).release(entry.offset or 0, entry.nbytes)

    def close(self) -> None:
        if not self.closed:
            for mapped in self._mapped:
                mapped.close()
        super().close()


MAX_NDIM = 64  # numpy makes no array with more dimensions,
MAX_ELEMENTS = 1 << 59  # nor with more elements of its widest dtype (16 bytes), even when a zero dim empties it
MAX_DIM = 1 << 64  # sizes are u64 in Burn and SafeTensors; bounding them keeps every message printable
BULK = 2048  # from this many ranges on, numpy checks them faster than a Python loop
Row = tuple  # (name, dtype, shape as given, start, end, param_id): one tensor as a header states it


def build_entries(path: str | os.PathLike, rows: list[Row], data_start: int, buffer_size: int, *,
                  contiguous: bool, max_tensor_bytes: int | None = None) -> list[TensorEntry]:
    """Validate header rows and make entries in data order (``entries_from_columns`` on the rows' columns)."""
    names, kinds, shapes, starts, ends, param_ids = map(list, zip(*rows)) if rows else ([],) * 6
    return entries_from_columns(path, names, kinds, shapes, starts, ends, param_ids, data_start, buffer_size,
                                contiguous=contiguous, max_tensor_bytes=max_tensor_bytes)


def entries_from_columns(path: str | os.PathLike, names: list[str], kinds: list, shapes: list, starts: list,
                         ends: list, param_ids: list, data_start: int, buffer_size: int, *, contiguous: bool,
                         max_tensor_bytes: int | None = None, typed: bool = False) -> list[TensorEntry]:
    """Validate a header's columns (as stated: shapes and offsets of any type) and make entries in data order.

    Every check is a C-level pass over a whole column (``map``, ``set``, ``min``), fast enough for 100,000
    tensors and cheap for 100; only when one fails does a slow pass look for the offending tensor, so
    the message can name it. ``typed`` says the parser already checked the types (a typed decode): shapes
    are tuples of at most ``MAX_NDIM`` integers in ``[0, 2**63)``, and offsets are such integers too.
    """
    def rows() -> list[Row]:
        return list(zip(names, kinds, shapes, starts, ends, param_ids))

    if not typed:
        shapes = _checked_types(path, rows, shapes, starts, ends)
    sizes = list(map(operator.sub, ends, starts))
    bits = list(map(_BITS, kinds))
    if None in bits:  # opaque dtypes (no bit width): their sizes are taken as stated
        needed = [None if b is None else math.prod(shape) * b for shape, b in zip(shapes, bits)]
    else:
        needed = list(map(operator.mul, map(math.prod, shapes), bits))
    if needed != list(map(operator.mul, sizes, repeat(8))):  # a bulk compare; opaque dtypes are skipped below
        for name, kind, shape, need, size in zip(names, kinds, shapes, needed, sizes):
            if need is not None and need != size * 8:
                _explain_size(path, name, kind, shape, need, size, max_tensor_bytes)
    if 0 in needed:  # an empty tensor's other dimensions must still fit an array
        for shape, need, row in zip(shapes, needed, rows()):
            if need == 0 and math.prod(d for d in shape if d) > MAX_ELEMENTS:
                _refuse_shape(path, row)
    if max_tensor_bytes is not None and max(sizes, default=0) > max_tensor_bytes:
        name, kind, shape, need, size = next(t for t in zip(names, kinds, shapes, needed, sizes)
                                             if t[4] > max_tensor_bytes)
        _explain_size(path, name, kind, shape, size * 8 if need is None else need, size, max_tensor_bytes)
    in_order = contiguous and bool(names) and _tiles_in_order(starts, ends, buffer_size)  # as written, usually
    order = None if in_order else validate_ranges(path, names, starts, ends, buffer_size, contiguous=contiguous)
    entries = make_entries(names, kinds, shapes, sizes, param_ids, list(map(operator.add, starts, repeat(data_start))))
    return entries if order is None or order == list(range(len(order))) else list(map(entries.__getitem__, order))


_BITS = operator.attrgetter("bits")


def _checked_types(path: str | os.PathLike, rows: Callable[[], list[Row]], shapes: list, starts: list, ends: list
                   ) -> list[tuple[int, ...]]:
    """The shapes as tuples, once every dimension and offset is a non-negative integer in bounds."""
    dims = list(chain.from_iterable(shapes)) if set(map(type, shapes)) <= {list, tuple} else None
    if dims is None or not set(map(type, dims)) <= {int} or min(dims, default=0) < 0:
        bad = next(r for r in rows() if not isinstance(r[2], (list, tuple))
                   or not all(type(d) is int and d >= 0 for d in r[2]))
        raise FormatError(path, f"tensor {bad[0]!r} has an invalid shape {shown(bad[2])}")
    if max(map(len, shapes), default=0) > MAX_NDIM or max(dims, default=0) >= MAX_DIM:
        _refuse_shape(path, next(r for r in rows() if len(r[2]) > MAX_NDIM or max(r[2], default=0) >= MAX_DIM))
    if not set(map(type, starts)) | set(map(type, ends)) <= {int} or min(chain(starts, ends), default=0) < 0:
        bad = next(r for r in rows() if not all(type(o) is int and o >= 0 for o in r[3:5]))
        raise FormatError(path, f"tensor {bad[0]!r} has invalid data_offsets {shown(list(bad[3:5]))}")
    return list(map(tuple, shapes))


def _refuse_shape(path: str | os.PathLike, row: Row) -> None:
    raise FormatError(path, f"tensor {row[0]!r} has a shape no array can hold ({len(row[2])} dimensions; the limits "
                            f"are {MAX_NDIM} dimensions, each under 2**64, and 2**59 elements)")


def _explain_size(path: str | os.PathLike, name: str, dtype, shape: tuple[int, ...], bits: int, size: int,
                  max_tensor_bytes: int | None) -> None:
    if bits % 8:
        raise FormatError(path, f"tensor {name!r}: {dtype} x {list(shape)} is not a whole number of bytes")
    if max_tensor_bytes is not None and size > max_tensor_bytes:
        raise FormatError(path, f"tensor {name!r} spans {size} bytes, over the limit of {humanize.size(max_tensor_bytes)} "
                                "per tensor")
    if max_tensor_bytes is not None and bits // 8 > max_tensor_bytes:
        raise FormatError(path, f"tensor {name!r} claims {bits // 8} bytes, over the limit of "
                                f"{humanize.size(max_tensor_bytes)} per tensor")
    raise FormatError(path, f"tensor {name!r} has {size} bytes but {dtype} x {list(shape)} needs {bits // 8}")


def validate_ranges(path: str | os.PathLike, names: list[str], starts: list[int], ends: list[int],
                    buffer_size: int, *, contiguous: bool) -> list[int]:
    """Check each tensor's ``[start, end)`` in a data buffer; return their indices in data order.

    Every range must lie inside the buffer, no two may overlap, and with ``contiguous`` (the
    SafeTensors rule) they must tile the buffer exactly, with no gap and nothing left over.
    """
    if not names:
        if contiguous and buffer_size:
            raise FormatError(path, f"the data buffer has {buffer_size} bytes that no tensor uses")
        return []
    if len(names) < BULK:  # few: sorted columns compared whole, each a C-level pass
        order = sorted(range(len(names)), key=list(zip(starts, ends)).__getitem__)
        s, e = list(map(starts.__getitem__, order)), list(map(ends.__getitem__, order))
        if contiguous:
            ok = s[0] == 0 and s[1:] == e[:-1] and e[-1] == buffer_size and all(map(operator.le, s, e))
        else:
            nonempty = list(map(operator.lt, s, e))
            s_ne, e_ne = list(compress(s, nonempty)), list(compress(e, nonempty))
            ok = all(map(operator.le, s, e)) and max(e) <= buffer_size and all(map(operator.ge, s_ne[1:], e_ne[:-1]))
        if ok:
            return order
    elif max(max(starts), max(ends)) < 2**62:  # many: check in bulk, in numpy
        import numpy as np
        s_all, e_all = np.array(starts, np.int64), np.array(ends, np.int64)
        order = np.lexsort((e_all, s_all))
        s, e = s_all[order], e_all[order]
        if contiguous:
            ok = s[0] == 0 and bool((s[1:] == e[:-1]).all()) and e[-1] == buffer_size and bool((s <= e).all())
        else:
            nonempty = s < e
            s_ne, e_ne = s[nonempty], e[nonempty]
            ok = bool((s <= e).all()) and e.max() <= buffer_size and bool((s_ne[1:] >= e_ne[:-1]).all())
        if ok:
            return order.tolist()
    return _explain_ranges(path, list(zip(names, starts, ends)), buffer_size, contiguous=contiguous)


def _tiles_in_order(starts: list[int], ends: list[int], buffer_size: int) -> bool:
    """Whether the ranges, as listed, tile the buffer: each starts where the one before it ends. Then
    listing order is data order (sorting by start, then end, would keep it: only empty ranges share a
    start, and an empty one sorts first), and the general check below would accept the same."""
    return (starts[0] == 0 and ends[-1] == buffer_size and starts[1:] == ends[:-1]
            and all(map(operator.le, starts, ends)))


def _explain_ranges(path: str | os.PathLike, ranges: list[tuple[str, int, int]], buffer_size: int,
                    *, contiguous: bool) -> list[int]:
    """The precise pass (quicker than numpy for a few ranges): a FormatError naming the first bad range."""
    expected = 0
    previous = None
    order = [i for _, _, i in sorted((r[1], r[2], i) for i, r in enumerate(ranges))]
    for name, start, end in (ranges[i] for i in order):
        if start > end:
            raise FormatError(path, f"tensor {name!r} has a range that ends ({end}) before it starts ({start})")
        if end > buffer_size:
            raise FormatError(path, f"file is truncated or its header is wrong: tensor {name!r} ends at byte {end}, "
                                    f"past the end of the data ({buffer_size} bytes)")
        if contiguous and start != expected:
            problem = "overlaps" if start < expected else "leaves a gap before"
            raise FormatError(path, f"tensor {name!r} {problem} the previous tensor (starts at {start}, expected {expected})")
        if not contiguous and start < expected and start != end:
            raise FormatError(path, f"tensors {previous!r} and {name!r} overlap (at byte {start})")
        if start != end:  # the tensor a later one may overlap (an empty one overlaps none)
            previous = name
        expected = max(expected, end)
    if contiguous and expected != buffer_size:
        raise FormatError(path, f"the data buffer has {buffer_size - expected} bytes that no tensor uses")
    return order
