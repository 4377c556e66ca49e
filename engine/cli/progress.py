"""A progress line on stderr for long work (convert, diff, migrate): bytes, rate and time left.

Only a terminal gets it: piped or redirected stderr stays clean for logs, and ``-q`` silences it
anywhere. The line is redrawn in place (carriage return) at most ten times a second and erased
when the work ends, so the one-line result or error that follows starts on a clean line.

A subcommand calls ``add_quiet_flag(p)`` in its ``register`` and wraps its long step in
``with line(args, "writing out.bpk") as report: export(..., progress=report)``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from types import TracebackType
from typing import Callable, TextIO

from .. import humanize

REDRAW_EVERY = 0.1  # seconds between redraws; the last state (done == total) is always drawn
ERASE = "\r\x1b[K"  # back to the line's start, clear to its end


def add_quiet_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")


def line(args: argparse.Namespace, label: str, stream: TextIO | None = None) -> "ProgressLine":
    """The progress line for a subcommand's long step; silent with ``-q`` or when stderr is not a terminal."""
    stream = stream or sys.stderr
    return ProgressLine(label, stream, active=not getattr(args, "quiet", False) and _is_terminal(stream))


class ProgressLine:
    """``progress(done, total)`` in bytes, as the engine's export and diff call it; a context manager."""

    def __init__(self, label: str, stream: TextIO, *, active: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # the label names a file (one a folder being migrated holds): only ERASE is ours to send as control
        self.label, self.stream, self.active, self.clock = humanize.printable(label), stream, active, clock
        self.started = clock()
        self.drawn_at: float | None = None

    def __call__(self, done: int, total: int) -> None:
        if not self.active:
            return
        now = self.clock()
        if done < total and self.drawn_at is not None and now - self.drawn_at < REDRAW_EVERY:
            return
        self.drawn_at = now
        self.stream.write(ERASE + self.text(done, total, now - self.started, self._width() - 1))
        self.stream.flush()

    def text(self, done: int, total: int, elapsed: float, width: int | None = None) -> str:
        """``writing model.bpk  512 MiB of 2 GiB (25%)  410 MiB/s  4 s left``, within ``width`` characters: a
        narrow terminal shortens the label in its middle, then drops the rate, then the time left, never
        cutting a figure in two."""
        amount = f"{humanize.size(done)} of {humanize.size(total)} ({done * 100 // max(total, 1)}%)"
        extras = []
        if elapsed > 0 and done > 0:
            rate = done / elapsed
            extras.append(f"{humanize.size(round(rate))}/s")
            if done < total:
                extras.append(f"{humanize.duration((total - done) / rate)} left")
        while True:
            figures = "  ".join([amount, *extras])
            room = None if width is None else width - len(figures) - 2
            if room is None or room >= min(len(self.label), 12):
                return "  ".join([_elided(self.label, room), figures])
            if not extras:
                return figures if len(figures) <= width else f"{done * 100 // max(total, 1)}%"
            extras.pop(0 if len(extras) == 2 else -1)

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            return 80
        return columns or 80  # a terminal that reports no size (a pty nobody sized) gets the usual 80

    def __enter__(self) -> "ProgressLine":
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.drawn_at is not None:
            self.stream.write(ERASE)
            self.stream.flush()


def _elided(label: str, room: int | None) -> str:
    """``label`` in at most ``room`` characters, its middle replaced by ``...`` (the file's end stays)."""
    if room is None or len(label) <= room:
        return label
    keep = room - 3
    return label[:keep // 2] + "..." + label[len(label) - (keep - keep // 2):]


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, AttributeError):  # closed or not a real stream
        return False
