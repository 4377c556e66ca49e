"""Compare two stores (or a plan and a store) tensor by tensor, values included, in bounded memory.

Values are streamed a chunk of elements at a time from the mapped arrays and each tensor's pages
are given back after it, so a diff of two 50 GB files stays small. Equal bytes short-cut the
arithmetic; otherwise floats are compared as float64 (max and mean absolute difference, allclose)
and ints/bools exactly. A ``Plan`` compares by its target names and transformed values, so a
source and what was exported from it through that plan compare identical.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from ..store import Store
from .plan import Plan

CHUNK_ELEMENTS = 4 << 20  # elements read from the maps per step
BLOCK_ELEMENTS = 1 << 16  # elements of float64 arithmetic per step: three buffers stay in cache
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

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status}
        for key in ("dtype_a", "dtype_b", "max_abs", "mean_abs", "allclose"):
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
        if x.dtype.numpy is None or y.dtype.numpy is None:
            equal = same_dtype and _digest(x) == _digest(y)
            return TensorDiff(name, "identical" if equal else ("different" if same_dtype else "dtype_mismatch"), **base)
        stats = _values(x.read(), y.read(), same_dtype, values, rtol, atol, chunk)
    finally:
        for item in (x, y):
            item.release()
    if not same_dtype:
        status = "dtype_mismatch"
    else:
        status = "identical" if stats["equal"] else "different"
    return TensorDiff(name, status, **base, max_abs=stats.get("max_abs"), mean_abs=stats.get("mean_abs"),
                      allclose=stats.get("allclose"))


def _digest(item: Any) -> str:
    """A hash of a tensor's bytes, for dtypes numpy cannot decode (quantized, packed)."""
    h = hashlib.sha256()
    for part in item.iter_bytes():
        h.update(part)
    return h.hexdigest()


def _values(a: np.ndarray, b: np.ndarray, same_dtype: bool, values: bool, rtol: float, atol: float, chunk: int) -> dict[str, Any]:
    """Stream both arrays in chunks; equal bytes skip the arithmetic, the rest runs in cache-sized blocks."""
    fa, fb = np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
    n = fa.size
    stats = _Stats(min(n, BLOCK_ELEMENTS), rtol, atol)
    for start in range(0, n, chunk):
        ca, cb = fa[start:start + chunk], fb[start:start + chunk]
        if same_dtype and np.array_equal(ca.view(np.uint8), cb.view(np.uint8)):
            continue
        if not values:
            return {"equal": False}
        for block in range(0, ca.size, BLOCK_ELEMENTS):
            stats.add(ca[block:block + BLOCK_ELEMENTS], cb[block:block + BLOCK_ELEMENTS])
    if not values:
        return {"equal": True}
    return {"equal": stats.equal, "max_abs": stats.largest, "mean_abs": stats.total / n if n else 0.0,
            "allclose": stats.close}


class _Stats:
    """Running max/sum of ``|a - b|`` in float64 and allclose, reusing its buffers block after block.

    NaN against NaN (and an infinity against the same infinity) count as equal.
    """

    def __init__(self, size: int, rtol: float, atol: float):
        self.x, self.y, self.d = (np.empty(size, np.float64) for _ in range(3))
        self.rtol, self.atol = rtol, atol
        self.equal, self.close, self.largest, self.total = True, True, 0.0, 0.0

    def add(self, ca: np.ndarray, cb: np.ndarray) -> None:
        m = ca.size
        x, y, d = self.x[:m], self.y[:m], self.d[:m]
        np.copyto(x, ca, casting="unsafe")
        np.copyto(y, cb, casting="unsafe")
        with np.errstate(invalid="ignore", over="ignore"):
            np.subtract(x, y, out=d)
        np.abs(d, out=d)
        largest = float(d.max()) if m else 0.0
        if not np.isfinite(largest):  # NaN or inf somewhere: only unequal pairs count
            bad = ~np.isfinite(d)
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            d[bad & same] = 0.0
            d[bad & ~same] = np.inf
            largest = float(d.max())
        if largest == 0.0:
            return
        self.equal = False
        self.largest = max(self.largest, largest)
        self.total += float(d.sum())
        if self.close and largest > self.atol:
            np.abs(y, out=y)
            y *= self.rtol
            y += self.atol
            self.close = bool(np.less_equal(d, y).all())
