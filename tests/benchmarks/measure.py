"""Timing and memory measurement: best-of-N in process, wall time and peak RSS of child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mib: float | None = None


def best_of(fn: Callable[[], object], repeat: int = 5) -> Run:
    """The fastest of ``repeat`` calls (warm cache): the least disturbed by a shared machine."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return Run(min(times))


def child(argv: Sequence[str], repeat: int = 3) -> Run:
    """Fastest wall time of a command, with the peak resident memory of that child alone."""
    best: Run | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.read().decode()[-500:]}")
        proc.stderr.close()
        run = Run(elapsed, usage.ru_maxrss / 1024)
        if best is None or run.seconds < best.seconds:
            best = run
    assert best is not None
    return best


def python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]
