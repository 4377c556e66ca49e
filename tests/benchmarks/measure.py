"""Timing and memory measurement: best-of-N in process, wall time and peak RSS of child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mib: float | None = None
    cpu_seconds: float | None = None  # a child's user + system time, its own waited-for children included


# --quick sets each to 1: it checks the suite runs, not speed. A conversion takes 7 turns: writing 2 GB to a
# tmpfs here took cp anything from 0.85 s to 5.8 s (nine turns in a row on a quiet machine, CPU time the same as
# wall; this virtual machine's balloon device reports freed memory to its host, which must then back it again),
# and with 3 turns one unlucky run of cp or ours decided a row. The floor each reaches in 7 is what a row compares.
REPEATS = {"in_process": 5, "child": 3, "convert": 7}


QUICK_CALLS = 0.25, 200  # a call this quick is repeated for this many seconds, at most this many times


def best_of(fn: Callable[[], object], repeat: int | None = None) -> Run:
    """The fastest of ``repeat`` calls (warm cache): the least disturbed by a shared machine.

    Calls of a millisecond or less go on being repeated for a quarter of a second: five of them
    are over in microseconds, so one scheduler tick could decide a row's ratio.
    """
    times: list[float] = []
    first = time.perf_counter()
    calls = repeat or REPEATS["in_process"]
    seconds, most = QUICK_CALLS
    while len(times) < calls or (calls > 1 and len(times) < most and time.perf_counter() - first < seconds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return Run(min(times))


def in_turns(fns: Sequence[Callable[[], object]], rounds: int = 3) -> list[Run]:
    """The fastest call of each function, ``best_of`` each in turn for ``rounds`` rounds: a sub-millisecond
    ratio measured in two blocks a quarter of a second apart read 0.85x and 1.22x for the same 146 tensors."""
    best: list[float] = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_of(fn).seconds)
    return [Run(seconds) for seconds in best]


# Linux carries a process's pre-exec peak into its ru_maxrss, so a child forked straight from this
# (large) benchmark process would report our peak. This small launcher forks the real command.
LAUNCHER = """
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\npeak-kib={usage.ru_maxrss} seconds={time.perf_counter() - start} "
                 f"cpu={usage.ru_utime + usage.ru_stime}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def child(argv: Sequence[str], repeat: int | None = None, fresh: Path | None = None) -> Run:
    """Fastest wall time of a command, with the peak resident memory of that child alone.

    ``fresh`` is a file the command writes: it is removed before each run, so every run writes anew.
    """
    return side_by_side([(argv, fresh)], repeat)[0]


def side_by_side(commands: Sequence[tuple[Sequence[str], Path | None]], repeat: int | None = None,
                 discard: bool = False) -> list[Run]:
    """The fastest run of each command, the commands taking turns (a, b, a, b, ...).

    Turns matter on a shared machine: a ratio of two commands timed minutes apart measures the load's
    change as much as the commands, while turns put each pair in the same seconds (and the same page
    cache). ``discard`` removes every command's ``fresh`` file before each run, not only its own, and all
    of them at the end: on a tmpfs, three 2 GB outputs kept until their command's next turn, with torch's
    own 2.2 GB, pushed the sources out of the page cache of a 24 GiB machine (cp 1.0 s warm, 2-9 s then).
    """
    best: list[Run | None] = [None] * len(commands)
    discarded = [fresh for _, fresh in commands if fresh is not None] if discard else []
    for _ in range(repeat or REPEATS["child"]):
        for i, (argv, fresh) in enumerate(commands):
            _remove(discarded)
            run = _run_child(argv, fresh)
            if best[i] is None or run.seconds < best[i].seconds:
                best[i] = run
    _remove(discarded)
    return [run for run in best if run is not None]


def _remove(paths: Sequence[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def _run_child(argv: Sequence[str], fresh: Path | None) -> Run:
    if fresh is not None:
        fresh.unlink(missing_ok=True)
    os.sync()  # start each run with no dirty pages, or it pays for the previous run's writeback
    result = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr[-500:]}")
    peak, rest = result.stderr.rsplit("peak-kib=", 1)[1].split(" seconds=")
    seconds, cpu = rest.split(" cpu=")
    return Run(float(seconds), int(peak) / 1024, float(cpu))


def python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]
