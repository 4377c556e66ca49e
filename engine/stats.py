"""Summary statistics and a histogram of one tensor, computed chunk by chunk.

Chunking keeps memory bounded (a 256 MB tensor is never copied whole, and narrow floats are widened a
chunk at a time) and lets a caller cancel between chunks; a large tensor's chunks are shared out in pieces to
the machine's cores (``engine.values.parallel``). Pure numpy: the GUI runs this in a worker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from . import quantized
from .errors import StoreStudioError
from .store import TensorEntry
from .values.chunked import ArrayValues, Reader, Values, chunked_values
from .values.parallel import run_pieces

CHUNK_ELEMENTS = 1 << 17  # elements per chunk: two threads' float64 scratch (1 MiB each) stay in the shared caches
PIECE_ELEMENTS = 1 << 19  # elements one thread takes in a row; a tensor this small is summarized on the caller alone
BINS = 64
PERCENTILES = (1, 50, 99)
PERCENTILE_SAMPLE = 1 << 20  # percentiles of larger tensors come from an evenly strided sample this big


class StatsUnavailable(StoreStudioError):
    """This tensor's values cannot be summarized (quantized, packed or complex); the message says why."""


class StatsCancelled(StoreStudioError):
    """The caller's cancel callback asked to stop."""


@dataclass(frozen=True)
class TensorStats:
    """What a user asks of a tensor's values. min/max/mean/std/abs_max/l2/percentiles ignore NaN and Inf.

    ``histogram`` counts finite values in ``len(histogram)`` equal bins from ``edges[0]`` to ``edges[-1]``;
    a constant tensor has one bin and ``edges[0] == edges[-1]``, its value (no invented range).
    For an all-NaN tensor the finite fields are None. ``kind`` ("float", "int" or "bool") says which of
    these mean something for the dtype: a view shows NaN/Inf only for floats, and for bools the share true.
    ``percentiles`` pairs each of PERCENTILES with its value; ``sampled`` is how many values they were
    taken from when that is fewer than ``finite`` (an evenly strided sample of a large tensor), else 0.
    """

    count: int
    finite: int
    nan: int
    inf: int
    zeros: int
    min: float | int | None
    max: float | int | None
    mean: float | None
    std: float | None
    histogram: tuple[int, ...]
    edges: tuple[float, ...]
    kind: str = "float"
    pos_inf: int = 0
    neg_inf: int = 0
    abs_max: float | int | None = None
    l2: float | None = None
    percentiles: tuple[tuple[int, float], ...] = ()
    sampled: int = 0

    @property
    def zero_share(self) -> float:
        return self.zeros / self.count if self.count else 0.0

    @property
    def true_count(self) -> int:
        """For bools: how many are true (every value that is not zero)."""
        return self.count - self.zeros


def stats_for(entry: TensorEntry, *, bins: int = BINS, cancel: Callable[[], bool] | None = None,
              chunk_elements: int = CHUNK_ELEMENTS) -> TensorStats:
    """Statistics of a stored tensor (a quantized one's dequantized values, a chunk at a time); raises
    StatsUnavailable for values that cannot be decoded."""
    if entry.dtype.values_dtype is None:
        why = quantized.why_undecoded(entry.dtype)
        raise StatsUnavailable(f"{why or f'{entry.dtype} values are stored encoded and are not decoded here'}, "
                               "so there are no statistics for them")
    if entry.dtype.kind == "complex":
        raise StatsUnavailable("statistics are not computed for complex values")
    try:
        values = chunked_values(entry)
        if values is not None and values.size:
            return _summarize(values, 1, bins, cancel, chunk_elements)
        array = entry.read()
        try:
            return compute_stats(array, bins=bins, cancel=cancel, chunk_elements=chunk_elements)
        finally:
            del array
    finally:
        entry.release()


def compute_stats(array: np.ndarray, *, bins: int = BINS, cancel: Callable[[], bool] | None = None,
                  chunk_elements: int = CHUNK_ELEMENTS) -> TensorStats:
    """Statistics of any real or bool array, in two chunked passes (moments, then the histogram)."""
    if np.iscomplexobj(array):
        raise StatsUnavailable("statistics are not computed for complex values")
    array, repeats = _distinct(array)
    flat = np.ravel(array, order="K")  # a view for any memory layout numpy can flatten; order does not matter
    return _summarize(ArrayValues(flat), repeats, bins, cancel, chunk_elements)


def _summarize(source: Values, repeats: int, bins: int, cancel: Callable[[], bool] | None,
               chunk_elements: int) -> TensorStats:
    """Two chunked passes over ``source`` (moments and a strided sample, then the histogram); ``repeats`` is
    how often each value stands for itself (a broadcast view's).

    A tensor of more than PIECE_ELEMENTS values is summarized in contiguous pieces on the machine's cores
    (``engine.values.parallel``). Pieces start on chunk boundaries and their chunks' moments are merged in tensor
    order, extremes and counts are exact: the result is the single thread's to the last digit.
    """
    kind = source.dtype.kind
    if kind not in "fiub" and source.dtype.name not in _NARROW:
        raise StatsUnavailable(f"statistics are not computed for {source.dtype} values")
    is_float = kind == "f" or source.dtype.name in _NARROW
    value_kind = "float" if is_float else "bool" if kind == "b" else "int"
    step = max(1, -(-source.size // PERCENTILE_SAMPLE))  # the percentiles' sample: every step-th value
    wide = source.dtype if kind == "f" and source.dtype.itemsize >= 4 else np.float64
    sample = np.empty(0 if kind == "b" else -(-source.size // step), wide)
    piece = _piece_elements(chunk_elements)

    def make_worker() -> Callable[[int], _Moments]:
        read = source.reader(chunk_elements)
        scratch = np.empty(min(source.size, chunk_elements), np.float64)  # reused: a fresh one faults pages in
        flags = np.empty(scratch.size, np.bool_)

        def moments_of(index: int) -> _Moments:
            part = _Moments()
            start = index * piece
            for at, chunk in _chunks(read, source.dtype, start, min(source.size, start + piece), chunk_elements,
                                     cancel):
                if sample.size:
                    taken = chunk[(-at) % step::step]
                    sample[-(-at // step):][:taken.size] = taken
                part.add(chunk, is_float, scratch, flags)
            return part
        return moments_of

    seen = _Moments()
    for part in run_pieces(-(-source.size // piece), make_worker):
        seen.merge(part, is_float)
    count, finite, nan, zeros, low, high = seen.count, seen.finite, seen.nan, seen.zeros, seen.low, seen.high
    pos_inf, neg_inf, inf = seen.pos_inf, seen.neg_inf, seen.pos_inf + seen.neg_inf
    if not finite:
        return TensorStats(count * repeats, 0, nan * repeats, inf * repeats, zeros * repeats, None, None, None, None,
                           (), (), value_kind, pos_inf * repeats, neg_inf * repeats)
    histogram, edges = _histogram(source, low, high, finite, bins, is_float and finite < count, kind == "b",
                                  chunk_elements, cancel)
    percentiles, sampled = ((), 0) if kind == "b" else _percentiles(sample, step, finite < count)
    # Repeating every value the same number of times changes counts and the norm, not the mean, the spread
    # or the percentiles.
    return TensorStats(count * repeats, finite * repeats, nan * repeats, inf * repeats, zeros * repeats, low, high,
                       seen.mean, math.sqrt(seen.m2 / finite), tuple(c * repeats for c in histogram), edges,
                       value_kind, pos_inf * repeats, neg_inf * repeats, max(abs(low), abs(high)),
                       math.sqrt(seen.squares * repeats), percentiles, sampled)


def _piece_elements(chunk_elements: int) -> int:
    """Values one thread takes in a row: whole chunks, so each chunk is the one a single thread would see."""
    return chunk_elements * max(1, PIECE_ELEMENTS // chunk_elements)


class _Moments:
    """Counts, extremes and each chunk's moments ``(n, mean, squared deviations)`` of some finite values."""

    def __init__(self) -> None:
        self.count = self.nan = self.pos_inf = self.neg_inf = self.zeros = self.finite = 0
        self.low: float | int | None = None
        self.high: float | int | None = None
        self.mean = self.m2 = self.squares = 0.0
        self.chunks: list[tuple[int, float, float]] = []

    def add(self, chunk: np.ndarray, is_float: bool, scratch: np.ndarray, flags: np.ndarray) -> None:
        """One chunk's counts, extremes and moments (non-finite values counted, then left out)."""
        self.count += chunk.size
        chunk_low, chunk_high = (chunk.min(), chunk.max()) if chunk.size else (0, 0)
        if is_float and not (np.isfinite(chunk_low) and np.isfinite(chunk_high)):  # min and max see any NaN or inf
            bad_nan = np.isnan(chunk)
            bad_inf = np.isinf(chunk)
            self.nan += int(bad_nan.sum())
            positive = int(np.count_nonzero(chunk[bad_inf] > 0))
            self.pos_inf += positive
            self.neg_inf += int(bad_inf.sum()) - positive
            chunk = chunk[~(bad_nan | bad_inf)]
            if not chunk.size:
                return
            chunk_low, chunk_high = chunk.min(), chunk.max()
        self.zeros += int(np.count_nonzero(np.equal(chunk, 0, out=flags[:chunk.size])))  # 5x count_nonzero of floats
        if not chunk.size:
            return
        self.low = _pick(min, self.low, chunk_low, is_float)
        self.high = _pick(max, self.high, chunk_high, is_float)
        values = scratch[:chunk.size]
        np.copyto(values, chunk, casting="unsafe")
        mean = float(values.sum()) / values.size
        values -= mean
        values *= values  # not np.dot: BLAS threads fight over a shared machine's cores
        self.chunks.append((values.size, mean, float(values.sum())))

    def merge(self, part: "_Moments", is_float: bool) -> None:
        """Add a later piece's counts and its chunks' moments, one chunk at a time in order."""
        self.count += part.count
        self.nan += part.nan
        self.pos_inf += part.pos_inf
        self.neg_inf += part.neg_inf
        self.zeros += part.zeros
        if part.low is not None:
            self.low = _pick(min, self.low, part.low, is_float)
            self.high = _pick(max, self.high, part.high, is_float)
        for n_b, mean_b, m2_b in part.chunks:  # Chan et al.'s pairwise merge of mean and squared deviations
            n = self.finite + n_b
            delta = mean_b - self.mean
            self.mean += delta * n_b / n
            self.m2 += m2_b + delta * delta * self.finite * n_b / n
            self.squares += m2_b + n_b * mean_b * mean_b  # the chunk's sum of squares, from what is already known
            self.finite = n


def _distinct(array: np.ndarray) -> tuple[np.ndarray, int]:
    """A broadcast view (stride 0 along some axes: a saved ``expand()``) as its distinct values and
    how often each repeats, so that its statistics never copy it whole (ravel would)."""
    repeated = [axis for axis, (dim, stride) in enumerate(zip(array.shape, array.strides)) if stride == 0 and dim > 1]
    if not repeated or array.size == 0:
        return array, 1
    index = tuple(slice(0, 1) if axis in repeated else slice(None) for axis in range(array.ndim))
    return array[index], math.prod(array.shape[axis] for axis in repeated)


def _percentiles(sample: np.ndarray, step: int, nonfinite: bool) -> tuple[tuple[tuple[int, float], ...], int]:
    """PERCENTILES of the finite values, exact up to PERCENTILE_SAMPLE values, else of the strided ``sample``
    (every ``step``-th value)."""
    if nonfinite:
        sample = sample[np.isfinite(sample)]
    if not sample.size:
        return (), 0
    values = np.percentile(sample, PERCENTILES)
    return tuple(zip(PERCENTILES, (float(v) for v in values))), (sample.size if step > 1 else 0)


_NARROW = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float16"}


def _chunks(read: Reader, dtype: np.dtype, start: int, stop: int, size: int, cancel: Callable[[], bool] | None
            ) -> Iterator[tuple[int, np.ndarray]]:
    """Successive chunks of values ``start``..``stop`` and where each starts; narrow and ml_dtypes floats
    widened to float32, bools to uint8."""
    is_bool, narrow = dtype.kind == "b", dtype.name in _NARROW
    for at in range(start, stop, size):
        if cancel is not None and cancel():
            raise StatsCancelled("statistics cancelled")
        chunk = read(at, min(at + size, stop))
        if is_bool:
            chunk = chunk.view(np.uint8)
        elif narrow:
            chunk = chunk.astype(np.float32)
        yield at, chunk


def _pick(choose, current, value, is_float: bool):
    value = float(value) if is_float else int(value)
    return value if current is None else choose(current, value)


def _histogram(values: Values, low, high, finite: int, bins: int, skip_nonfinite: bool, is_bool: bool,
               chunk_elements: int, cancel: Callable[[], bool] | None) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Counts of finite values in equal bins; integers get one bin per value when their range is small.
    Pieces of a large tensor are counted on the machine's cores and their counts added (exact)."""
    if is_bool:
        edges = np.array([0.0, 0.5, 1.0])  # two bins: false, true
    elif not isinstance(low, float) and high - low < bins:
        edges = np.arange(low, high + 2, dtype=np.float64) - 0.5
    elif low == high:  # a constant (or a scalar): one bin holding every finite value, at that value
        return (finite,), (float(low), float(high))
    else:
        edges = np.linspace(low, high, bins + 1)
    start, span, count = float(edges[0]), float(edges[-1] - edges[0]), len(edges) - 1
    piece = _piece_elements(chunk_elements)

    def make_worker() -> Callable[[int], np.ndarray]:
        read = values.reader(chunk_elements)
        size = min(values.size, chunk_elements)
        scratch = np.empty(size, np.float64)
        slots = np.empty(size + 1, np.uint8 if count < PAIRED_BINS else np.intp)

        def count_piece(index: int) -> np.ndarray:
            counts = np.zeros(count, dtype=np.int64)
            first = index * piece
            for _, chunk in _chunks(read, values.dtype, first, min(values.size, first + piece), chunk_elements,
                                    cancel):
                if skip_nonfinite:
                    chunk = chunk[np.isfinite(chunk)]
                counts += _bin_counts(chunk, start, span, count, scratch, slots)
            return counts
        return count_piece

    counts = np.zeros(count, dtype=np.int64)
    for part in run_pieces(-(-values.size // piece), make_worker):
        counts += part
    return tuple(int(c) for c in counts), tuple(float(e) for e in edges)


PAIRED_BINS = 254  # up to this many bins, two values' bins are counted as one 16-bit number


def _bin_counts(chunk: np.ndarray, start: float, span: float, bins: int, scratch: np.ndarray,
                slots: np.ndarray) -> np.ndarray:
    """``np.histogram(chunk, bins, (start, start + span))`` for values inside that range, in a few passes
    over reused buffers instead of numpy's dozen over fresh ones (a value within rounding of an inner
    edge may land in the neighbouring bin; the last edge belongs to the last bin, as in numpy).

    ``np.bincount`` is most of a histogram's time, per value counted; with byte-sized bins, each pair of
    neighbouring bins read as one uint16 is counted instead, half as many, and the pairs' counts summed
    back by byte (either byte order gives the same sums)."""
    values = scratch[:chunk.size]
    np.subtract(chunk, start, out=values, dtype=np.float64)
    values *= bins / span  # >= 0; the last edge gives `bins` exactly, folded into the last bin below
    slot = slots[:chunk.size]
    np.copyto(slot, values, casting="unsafe")  # truncation: the bin
    if slots.dtype == np.intp:
        counts = np.bincount(slot, minlength=bins + 1)
    else:
        counts = _paired_counts(slots, chunk.size, bins)
    counts[bins - 1] += counts[bins]
    return counts[:bins]


def _paired_counts(slots: np.ndarray, size: int, bins: int) -> np.ndarray:
    """How often each value 0..bins occurs in ``slots[:size]`` (bytes), counted two at a time."""
    pad = bins + 1  # an odd count is padded with a value no bin has
    if size % 2:
        slots[size] = pad
        size += 1
    pairs = np.bincount(slots[:size].view(np.uint16), minlength=256 * (pad + 1)).reshape(-1, 256)[:pad + 1]
    return pairs.sum(axis=1) + pairs[:, :pad + 1].sum(axis=0)
