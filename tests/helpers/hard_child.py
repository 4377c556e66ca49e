"""Run the command line (or a snippet) in a fresh interpreter and measure it as docs/limits.md's bounds ask:
peak resident memory and CPU time from ``wait4`` (CPU, not wall time, so a loaded machine cannot
fail a case), exit status and what it printed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_RSS = 300 << 20  # the documented limits for an input under 2 MiB
MAX_CPU = 2.0
TIMEOUT = 120.0  # wall seconds before a child is presumed hung and killed


@dataclass(frozen=True)
class Run:
    status: int  # exit code, or minus the signal that killed it
    output: str  # stdout and stderr together
    peak_rss: int  # bytes
    cpu: float  # seconds, user + system

    def within_limits(self, max_cpu: float = MAX_CPU) -> bool:
        return self.peak_rss <= MAX_RSS and self.cpu <= max_cpu

    def describe(self) -> str:
        return (f"exit {self.status}, {self.peak_rss / 2**20:.0f} MiB peak, {self.cpu:.2f} s CPU, output:\n"
                f"{self.output[-2000:]}")


# The measured process must not be forked from this (large) one: Linux counts the memory of the
# process image an exec replaces in the new program's peak (ru_maxrss). So a small launcher is
# started first; it forks the program from itself and reports the program's wait4 usage.
LAUNCHER = """
import json, os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    json.dump({"status": os.waitstatus_to_exitcode(status), "rss": usage.ru_maxrss * 1024,
               "cpu": usage.ru_utime + usage.ru_stime}, report)
"""


def run(args: list[str], cwd: Path = REPO) -> Run:
    """``python ARGS`` from the worktree (so its engine is imported), measured."""
    import json
    import tempfile
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    with tempfile.NamedTemporaryFile("r", suffix=".json") as report:
        try:
            done = subprocess.run([sys.executable, "-c", LAUNCHER, report.name, *args], cwd=cwd, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT,
                                  start_new_session=True)
        except subprocess.TimeoutExpired as exc:
            return Run(-signal.SIGKILL, (exc.output or b"").decode("utf-8", "replace") + "\n(hung: killed)", 0, TIMEOUT)
        usage = json.loads(report.read() or "{}")
    output = done.stdout.decode("utf-8", "replace")
    if not usage:
        return Run(done.returncode, output + "\n(the launcher did not report)", 0, TIMEOUT)  # unmeasured: not within limits
    return Run(usage["status"], output, usage["rss"], usage["cpu"])


def cli(*args: str | os.PathLike) -> Run:
    return run(["-m", "engine", *map(str, args)])


def snippet(code: str, *args: str | os.PathLike) -> Run:
    return run(["-c", code, *map(str, args)])
