"""Pieces of one long numpy job run side by side on the machine's cores, results kept in piece order.

numpy's ufuncs and reductions and ``os.preadv`` release the GIL on large buffers, so a diff or a
statistics pass split into contiguous pieces runs on two cores at once from threads. The calling
thread works too, claiming pieces alongside a small shared pool's helpers, so a busy pool (the window
computing statistics while a diff runs) never stalls a caller: it then does every piece itself. Each
participating thread builds its own worker once a job (its own reused buffers); results come back
indexed by piece, so the caller merges them in the same order on every run.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")

# The cores this process may use, at most 4: the pieces copy from the page cache and stream through memory,
# which a few cores saturate (measured on this project's 2-core machines only).
THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _helpers() -> ThreadPoolExecutor:
    """The shared pool, made on first use: THREADS - 1 helpers, the caller being the last thread."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(THREADS - 1, thread_name_prefix="store-studio-piece")
        return _pool


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's threads: it makes its own pool when it needs one."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def run_pieces(count: int, make_worker: Callable[[], Callable[[int], T]]) -> list[T]:
    """``worker(i)`` for every piece ``i`` in ``range(count)``, each thread with its own ``make_worker()``.

    The first failure (by piece index) is raised once every started piece has stopped; no piece is
    started after a failure. One piece, or one thread on this machine, runs inline with no hand-off.
    """
    if count <= 1 or THREADS == 1:
        worker = make_worker()
        return [worker(i) for i in range(count)]
    job = _Job(count, make_worker)
    helpers = [_helpers().submit(job.work) for _ in range(min(THREADS, count) - 1)]
    job.work()
    _finish(helpers)
    return job.results()


def _finish(helpers: list[Future]) -> None:
    """Wait for helpers that started; one still queued behind another job finds nothing left, so drop it."""
    for helper in helpers:
        if not helper.cancel():
            helper.result()


class _Job:
    """Pieces handed out one at a time to whichever thread asks next, results stored by index."""

    def __init__(self, count: int, make_worker: Callable[[], Callable[[int], T]]):
        self._count, self._make_worker = count, make_worker
        self._next = 0
        self._lock = threading.Lock()
        self._results: list = [None] * count
        self._errors: dict[int, BaseException] = {}

    def _claim(self) -> int | None:
        with self._lock:
            if self._errors or self._next >= self._count:
                return None
            self._next += 1
            return self._next - 1

    def work(self) -> None:
        piece = self._claim()
        if piece is None:
            return
        try:
            worker = self._make_worker()
            while piece is not None:
                self._results[piece] = worker(piece)
                piece = self._claim()
        except BaseException as exc:  # handed to the caller, raised there
            with self._lock:
                self._errors[piece] = exc

    def results(self) -> list:
        if self._errors:
            raise self._errors[min(self._errors)]
        return self._results
