"""The status bar's account of a whole-file download: bytes, rate, time left.

A server that ignores byte ranges, or a format read from a whole local copy (a Bin record), means
downloading all of the file before anything can be shown; the window says how far it has come, how
fast, and how long is left, and the Cancel beside the bar stops it (the engine then removes its
partial copy). The worker writes its progress here; the window reads it a few times a second, so no
report is dropped and the rate falls while a server stalls.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from engine import humanize

STEPS = 1000  # the bar counts per mille: byte counts pass a QProgressBar's 32-bit range


@dataclass
class Download:
    """How far one file's download has come; ``started`` is 0 until it starts (most opens download nothing)."""

    name: str
    progress: tuple[int, int] = (0, 0)  # bytes so far and in all: one tuple, so the window never sees half an update
    started: float = 0.0

    def listener(self, cancelled: Callable[[], bool]) -> Callable[[int, int], None]:
        """The engine's download callback (in the worker): records progress, and stops the download once cancelled."""
        def heard(done: int, total: int) -> None:
            if cancelled():
                raise InterruptedError("cancelled")
            if not self.started:
                self.started = time.monotonic()
            self.progress = (done, total)
        return heard

    @property
    def rate(self) -> float:
        """Bytes a second since the download started."""
        return self.progress[0] / max(time.monotonic() - self.started, 1e-6)

    @property
    def steps(self) -> int:
        done, total = self.progress
        return round(STEPS * done / total) if total else 0

    def text(self) -> str:
        done, total = self.progress
        rate = self.rate
        left = f"about {humanize.duration((total - done) / rate)} left" if rate > 0 else "estimating time left"
        return (f"Downloading all of {self.name}: {humanize.size(done)} of {humanize.size(total)} · "
                f"{humanize.size(round(rate))}/s · {left}")
