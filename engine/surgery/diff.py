"""Compare two stores (or a plan and a store) tensor by tensor, values included, in bounded memory.

Values are streamed a chunk of elements at a time (a large tensor in pieces, on the machine's cores) and
each tensor's pages are given back after it, so a diff of two 50 GB files stays small. Equal bytes short-cut the
arithmetic; otherwise floats are compared as float64 (max and mean absolute difference, allclose)
and ints/bools exactly. A ``Plan`` compares by its target names and transformed values, so a
source and what was exported from it through that plan compare identical. ``value_difference`` looks
closer at one pair: max/mean absolute difference, allclose and a histogram of the differences.
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ..store import Store
from ..values.chunked import values_of
from ..values.parallel import run_pieces
from .plan import Plan

CHUNK_ELEMENTS = 1 << 17  # elements read from each file per step: both chunks stay in the caches while compared
BLOCK_ELEMENTS = 1 << 16  # elements of arithmetic per step: its three buffers stay in cache
PIECE_ELEMENTS = 1 << 19  # elements one thread compares in a row (balances the two threads to half a piece); a tensor
# this small compares on the calling thread alone, with no hand-off
HISTOGRAM_BINS = 64
VALUE_CHUNK_ELEMENTS = 1 << 20  # float64 differences value_difference holds at once (8 MiB)
STATUSES = ("identical", "different", "only_in_a", "only_in_b", "shape_mismatch", "dtype_mismatch")


@dataclass(frozen=True)
class TensorDiff:
    name: str
    status: str
    dtype_a: str | None = None
    dtype_b: str | None = None
    shape_a: tuple[int, ...] | None = None
    shape_b: tuple[int, ...] | None = None
    max_abs: float | None = None
    mean_abs: float | None = None
    allclose: bool | None = None
    relative_change: float | None = None  # ||a - b|| / ||a|| (L2 over every value) of a pair whose values differ

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status}
        for key in ("dtype_a", "dtype_b", "max_abs", "mean_abs", "allclose", "relative_change"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        for key in ("shape_a", "shape_b"):
            value = getattr(self, key)
            if value is not None:
                out[key] = list(value)
        return out


@dataclass
class DiffReport:
    tensors: list[TensorDiff] = field(default_factory=list)

    @property
    def summary(self) -> dict[str, int]:
        counts = {status: 0 for status in STATUSES}
        for t in self.tensors:
            counts[t.status] += 1
        return {**counts, "total": len(self.tensors)}

    @property
    def all_identical(self) -> bool:
        return all(t.status == "identical" for t in self.tensors)

    def to_json(self) -> dict[str, Any]:
        return {"tensors": [t.to_json() for t in self.tensors], "summary": self.summary}


def diff(a: Store | Plan, b: Store | Plan, *, values: bool = True, rtol: float = 1e-5, atol: float = 1e-8,
         chunk_elements: int = CHUNK_ELEMENTS, progress: Callable[[int, int], None] | None = None) -> DiffReport:
    """Compare ``a`` with ``b`` by name. ``values=False`` still tells identical from different (by bytes)
    but skips the value statistics."""
    items_a = {t.name: t for t in _items(a)}
    items_b = {t.name: t for t in _items(b)}
    report = DiffReport()
    total = sum(t.nbytes for n, t in items_a.items() if n in items_b)
    done = 0
    for name, x in items_a.items():
        y = items_b.get(name)
        if y is None:
            report.tensors.append(TensorDiff(name, "only_in_a", str(x.dtype), None, tuple(x.shape)))
            continue
        report.tensors.append(_compare(name, x, y, values, rtol, atol, chunk_elements))
        done += x.nbytes
        if progress:
            progress(done, total)
    report.tensors += [TensorDiff(n, "only_in_b", None, str(y.dtype), None, tuple(y.shape))
                       for n, y in items_b.items() if n not in items_a]
    return report


def _items(source: Store | Plan) -> Iterable[Any]:
    return source.tensors if isinstance(source, Plan) else source.entries


def _compare(name: str, x: Any, y: Any, values: bool, rtol: float, atol: float, chunk: int) -> TensorDiff:
    base = dict(dtype_a=str(x.dtype), dtype_b=str(y.dtype), shape_a=tuple(x.shape), shape_b=tuple(y.shape))
    if tuple(x.shape) != tuple(y.shape):
        return TensorDiff(name, "shape_mismatch", **base)
    same_dtype = x.dtype == y.dtype
    try:
        if x.dtype.values_dtype is None or y.dtype.values_dtype is None:  # quantized ones compare dequantized
            equal = same_dtype and _digest(x) == _digest(y)
            return TensorDiff(name, "identical" if equal else ("different" if same_dtype else "dtype_mismatch"), **base)
        stats = _values(x, y, same_dtype, values, rtol, atol, chunk)
    finally:
        for item in (x, y):
            item.release()
    if not same_dtype:
        status = "dtype_mismatch"
    else:
        status = "identical" if stats["equal"] else "different"
    return TensorDiff(name, status, **base, max_abs=stats.get("max_abs"), mean_abs=stats.get("mean_abs"),
                      allclose=stats.get("allclose"), relative_change=stats.get("relative_change"))


def _digest(item: Any) -> str:
    """A hash of a tensor's bytes, for dtypes numpy cannot decode (quantized, packed)."""
    h = hashlib.sha256()
    for part in item.iter_bytes():
        h.update(part)
    return h.hexdigest()


def _values(x: Any, y: Any, same_dtype: bool, values: bool, rtol: float, atol: float, chunk: int) -> dict[str, Any]:
    """Stream both tensors in chunks; equal bytes skip the arithmetic, the rest runs in cache-sized blocks.

    A tensor of more than PIECE_ELEMENTS values is compared in contiguous pieces on the machine's cores
    (``engine.values.parallel``), each thread reading into its own buffers. Pieces start on chunk boundaries, so
    every block is the one a single thread would compare, and the blocks' sums are added in tensor order:
    the result is the single thread's to the last digit, on every run.
    """
    n = math.prod(x.shape)
    work = _working_dtype(x.dtype.values_dtype, y.dtype.values_dtype)
    side_a, side_b = values_of(x), values_of(y)
    piece = chunk * max(1, PIECE_ELEMENTS // chunk)
    differs = threading.Event()  # without values, the first differing chunk settles it: every piece stops
    apart = threading.Event()  # a block found not allclose: the tensor is not, so no piece checks again

    def make_worker() -> Callable[[int], _Stats]:
        read_a, read_b = side_a.reader(chunk), side_b.reader(chunk)
        scratch = _Stats(min(n, BLOCK_ELEMENTS), rtol, atol, work, apart)

        def compare(index: int) -> _Stats:
            stats = scratch.fresh()
            start = index * piece
            with np.errstate(invalid="ignore", over="ignore"):  # numpy's error state is each thread's own
                for at in range(start, min(n, start + piece), chunk):
                    if differs.is_set():
                        break
                    stop = min(n, at + chunk)
                    ca, cb = read_a(at, stop), read_b(at, stop)
                    if same_dtype and _same_bytes(ca, cb):
                        stats.skipped.append((at, stop))  # its share of ||a|| is counted only if the pair differs
                        continue
                    if not values:
                        stats.equal = False
                        differs.set()
                        break
                    for block in range(0, ca.size, BLOCK_ELEMENTS):
                        stats.add(ca[block:block + BLOCK_ELEMENTS], cb[block:block + BLOCK_ELEMENTS])
            return stats
        return compare

    parts = run_pieces(-(-n // piece), make_worker)
    equal = all(part.equal for part in parts)
    if not values:
        return {"equal": equal}
    total = 0.0
    for part in parts:
        for block_sum in part.sums:  # one addition at a time, in tensor order: as one thread adds them
            total += block_sum
    return {"equal": equal, "max_abs": max((part.largest for part in parts), default=0.0),
            "mean_abs": total / n if n else 0.0, "allclose": all(part.close for part in parts),
            "relative_change": None if equal else _relative_change(parts, side_a.reader(chunk))}


def _relative_change(parts: list["_Stats"], read_a: Callable[[int, int], np.ndarray]) -> float:
    """||a - b|| / ||a|| from each differing block's squares and, read again now, the chunks skipped as equal
    (a LoRA merge or a fine-tune changes whole tensors; a pair that differs in one chunk rereads the rest of a)."""
    delta = sum(d for part in parts for d, _ in part.squares)
    size = sum(x for part in parts for _, x in part.squares)
    for part in parts:
        for start, stop in part.skipped:
            chunk = np.asarray(read_a(start, stop), np.float64).reshape(-1)
            size += float(np.dot(chunk, chunk))
    change = math.sqrt(delta) / math.sqrt(size) if size else math.inf
    return change if not math.isnan(change) else math.inf  # NaN or infinite values: as max |a - b| says, infinite


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Byte equality, refusing early on the first differing kilobytes (the common case of real diffs)."""
    head = min(a.size, 1024)
    if a[:head].tobytes() != b[:head].tobytes():
        return False
    if a.nbytes <= 1 << 16:
        return a.tobytes() == b.tobytes()
    word = np.uint64 if a.nbytes % 8 == 0 else np.uint8  # 8 bytes a compare: half the time of one byte a compare
    return bool(np.array_equal(a.view(np.uint8).view(word), b.view(np.uint8).view(word)))


def _working_dtype(a: np.dtype, b: np.dtype) -> np.dtype:
    """float32 when both sides are floats of 32 bits or fewer (their differences are then rounded once,
    as ``numpy.allclose`` computes them for such arrays, at several times float64's speed); float64 else."""
    narrow = all(d.kind == "f" and d.itemsize <= 4 or d.kind == "V" and d.itemsize <= 2 for d in (a, b))
    return np.dtype(np.float32) if narrow else np.dtype(np.float64)


class _Stats:
    """Running max of ``|a - b|``, each differing block's sum of it (``sums``) and allclose, reusing its
    buffers block after block.

    Arithmetic runs in ``work`` (float32 for narrow floats); a block whose float32 result is not
    finite (NaN, infinity or an overflowing difference) is redone in float64, where NaN against NaN
    (and an infinity against the same infinity) count as equal. ``apart`` is shared by a tensor's
    pieces: once one block is not allclose, neither is the tensor, and the other pieces skip the
    tolerance passes (five more passes over a block: a sixth of the arithmetic, once a piece).
    """

    def __init__(self, size: int, rtol: float, atol: float, work: np.dtype = np.dtype(np.float64),
                 apart: threading.Event | None = None):
        self.x, self.y, self.d = (np.empty(size, work) for _ in range(3))
        self.rtol, self.atol = rtol, atol
        self.apart = apart or threading.Event()
        self.equal, self.close, self.largest, self.sums = True, True, 0.0, []
        self.squares: list[tuple[float, float]] = []  # each differing block's sum of (a - b)**2 and of a**2
        self.skipped: list[tuple[int, int]] = []  # chunks skipped as byte-equal
        self.wide = self if work == np.float64 else None

    def fresh(self) -> "_Stats":
        """New results over these buffers (a piece's own), sharing the float64 fallback's buffers too."""
        stats = object.__new__(_Stats)
        stats.x, stats.y, stats.d, stats.rtol, stats.atol = self.x, self.y, self.d, self.rtol, self.atol
        stats.apart = self.apart
        stats.equal, stats.close, stats.largest, stats.sums = True, True, 0.0, []
        stats.squares, stats.skipped = [], []
        stats.wide = stats if self.wide is self else self.wide
        return stats

    def add(self, ca: np.ndarray, cb: np.ndarray) -> None:
        m = ca.size
        x = ca if ca.dtype == self.d.dtype else _cast(ca, self.x[:m])
        y = cb if cb.dtype == self.d.dtype else _cast(cb, self.y[:m])
        d = self.d[:m]
        np.subtract(x, y, out=d)  # the caller ignores overflow and invalid: a NaN or inf here is handled below
        np.abs(d, out=d)
        largest = float(d.max()) if m else 0.0
        if not math.isfinite(largest):
            if self.wide is not self:
                self._add_wide(ca, cb)
                return
            bad = ~np.isfinite(d)  # NaN or inf somewhere: only unequal pairs count
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            d[bad & same] = 0.0
            d[bad & ~same] = np.inf
            largest = float(d.max())
        if largest == 0.0:
            return
        self.equal = False
        self.largest = max(self.largest, largest)
        self.sums.append(float(d.sum()))  # numpy sums pairwise: a float32 block's sum is good to ~1e-7
        self.squares.append((float(np.dot(d, d)), float(np.dot(x, x))))
        if self.close and largest > self.atol:
            if self.apart.is_set():
                self.close = False
                return
            tolerance = self.y[:m]
            np.abs(y, out=tolerance)
            tolerance *= self.rtol
            tolerance += self.atol
            self.close = bool(np.less_equal(d, tolerance).all())
            if not self.close:
                self.apart.set()

    def _add_wide(self, ca: np.ndarray, cb: np.ndarray) -> None:
        if self.wide is None:
            self.wide = _Stats(self.d.size, self.rtol, self.atol, apart=self.apart)
        wide = self.wide
        wide.equal, wide.close, wide.largest, wide.sums = self.equal, self.close, self.largest, self.sums
        wide.squares = self.squares
        wide.add(ca, cb)
        self.equal, self.close, self.largest = wide.equal, wide.close, wide.largest


def _cast(values: np.ndarray, into: np.ndarray) -> np.ndarray:
    np.copyto(into, values, casting="unsafe")
    return into


@dataclass(frozen=True)
class ValueDifference:
    """How one pair of tensors differs, value by value: ``histogram`` counts ``a - b`` between ``edges``.

    ``transposed`` says ``a`` was compared transposed (a 2-D pair whose shapes are each other's reverse);
    ``nonfinite`` counts pairs whose difference is NaN or infinite (left out of the histogram).
    """

    count: int
    max_abs: float
    mean_abs: float
    allclose: bool
    histogram: tuple[int, ...]
    edges: tuple[float, ...]
    transposed: bool = False
    nonfinite: int = 0


def value_difference(a: Any, b: Any, *, bins: int = HISTOGRAM_BINS, rtol: float = 1e-5, atol: float = 1e-8,
                     chunk_elements: int = VALUE_CHUNK_ELEMENTS, cancel: Callable[[], bool] | None = None
                     ) -> ValueDifference:
    """Compare the values of two tensors (anything with ``shape``, ``dtype`` and ``read()``) in bounded memory.

    Two passes over chunks of float64 differences: the first finds the range, max/mean ``|a - b|`` and
    allclose (as ``diff`` does: NaN against NaN and an infinity against itself are equal), the second
    bins ``a - b`` over that range. ``cancel()`` returning true stops between chunks with ``InterruptedError``.
    """
    shape_a, shape_b = tuple(a.shape), tuple(b.shape)
    transposed = shape_a != shape_b and len(shape_a) == 2 and shape_a[::-1] == shape_b
    if shape_a != shape_b and not transposed:
        raise ValueError(f"shapes {list(shape_a)} and {list(shape_b)} differ; their values cannot be compared")
    for item in (a, b):
        if item.dtype.values_dtype is None:
            raise ValueError(f"{item.dtype} values cannot be decoded, only compared byte for byte")
    try:
        x, y = a.read(), b.read()
        if transposed:
            x = x.T

        def pairs() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            return _chunk_pairs(x, y, chunk_elements, cancel)

        count, nonfinite, low, high, total, largest, close = 0, 0, np.inf, -np.inf, 0.0, 0.0, True
        for ca, cb in pairs():
            d = _signed_difference(ca, cb)
            finite = np.isfinite(d)
            bad = int(d.size - np.count_nonzero(finite))
            count += d.size
            nonfinite += bad
            good = d[finite] if bad else d
            if good.size:
                low, high = min(low, float(good.min())), max(high, float(good.max()))
                largest = max(largest, float(np.abs(good).max()))
                total += float(np.abs(good).sum())
            if bad:
                largest, close = np.inf, False
            elif close and good.size:
                gap = np.abs(good)
                with np.errstate(invalid="ignore"):  # a NaN or infinite b is within tolerance only when equal
                    close = bool(((gap <= atol + rtol * np.abs(cb)) | (gap == 0)).all())
        if low > high:  # nothing finite (or nothing at all): one empty bin around zero
            low = high = 0.0
        if low == high:
            low, high = low - 0.5, high + 0.5
        edges = np.linspace(low, high, bins + 1)
        counts = np.zeros(bins, np.int64)
        for ca, cb in pairs():
            d = _signed_difference(ca, cb)
            counts += np.histogram(d[np.isfinite(d)], bins=edges)[0]
    finally:
        for item in (a, b):
            item.release()
    mean = np.inf if nonfinite else total / count if count else 0.0
    return ValueDifference(count, largest, float(mean), close, tuple(int(c) for c in counts),
                           tuple(float(e) for e in edges), transposed, nonfinite)


def _chunk_pairs(x: np.ndarray, y: np.ndarray, chunk: int,
                 cancel: Callable[[], bool] | None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Matching flat float64 chunks of ``x`` and ``y``; a transposed ``x`` is walked a block of rows at a time."""
    if x.ndim == 2 and not x.flags.c_contiguous:
        rows = max(1, chunk // max(1, x.shape[1]))
        slices = ((x[r:r + rows].reshape(-1), y[r:r + rows].reshape(-1)) for r in range(0, x.shape[0], rows))
    else:
        fx, fy = np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(y).reshape(-1)
        slices = ((fx[s:s + chunk], fy[s:s + chunk]) for s in range(0, fx.size, chunk))
    for ca, cb in slices:
        if cancel is not None and cancel():
            raise InterruptedError("value comparison cancelled")
        yield ca.astype(np.float64), cb.astype(np.float64)


def _signed_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b``, with NaN against NaN and an infinity against itself counting as 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = a - b
    bad = ~np.isfinite(d)
    if bad.any():
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        d[bad & same] = 0.0
    return d
