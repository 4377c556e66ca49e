"""The status bar's account of a whole-file download: bytes, rate, time left.

A server that ignores byte ranges, or a format read from a whole local copy (a Bin record), means
downloading all of the file before anything can be shown; the window says how far it
has come, how fast, and how long is left, and the Cancel beside the bar stops it (the engine then
removes its partial copy). The worker reports through a ``ProgressRelay`` a few times a second.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from engine import humanize

STEPS = 1000  # the bar counts per mille: byte counts pass a QProgressBar's 32-bit range


@dataclass
class Download:
    """How far one file's download has come."""

    name: str
    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)

    def update(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    @property
    def rate(self) -> float:
        """Bytes a second since the download started."""
        return self.done / max(time.monotonic() - self.started, 1e-6)

    @property
    def steps(self) -> int:
        return round(STEPS * self.done / self.total) if self.total else 0

    def text(self) -> str:
        rate = self.rate
        left = (f"about {humanize.duration((self.total - self.done) / rate)} left" if rate > 0
                else "estimating time left")
        return (f"Downloading all of {self.name}: {humanize.size(self.done)} of {humanize.size(self.total)} · "
                f"{humanize.size(round(rate))}/s · {left}")
