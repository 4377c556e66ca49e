"""The progress line in-process, on a real pty (issue 25: a mutation run maps only in-process calls; the pty tests
of ``test_progress.py`` run the command in a child).

Promises (README "Command line": a progress line on a terminal only, silenced by ``-q``, redrawn in place and
erased at the end) -> tests:
- drawn only on a terminal and without ``-q`` -> ``test_only_a_terminal_without_quiet_gets_the_line``
- never wider than the terminal (no wrapped lines to leave behind) -> ``test_the_line_fits_the_terminals_width``
- nothing done yet, or nothing to do, still reads sensibly -> ``test_the_first_and_empty_states``
"""

from __future__ import annotations

import argparse
import fcntl
import io
import os
import struct
import termios

import pytest

from engine.cli.progress import ERASE, ProgressLine, line
from tests.terminals import read_all


@pytest.fixture
def terminal():
    """A real pseudo-terminal 40 columns wide: what is written to its slave side is read from the master."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    stream = os.fdopen(slave, "w")
    yield stream, master
    if not stream.closed:
        stream.close()
    os.close(master)


def test_only_a_terminal_without_quiet_gets_the_line(terminal):
    stream, _ = terminal
    assert line(argparse.Namespace(quiet=False), "x", stream).active
    assert not line(argparse.Namespace(quiet=True), "x", stream).active
    assert line(argparse.Namespace(), "x", stream).active  # a command without -q
    assert not line(argparse.Namespace(quiet=False), "x", io.StringIO()).active
    closed = io.StringIO()
    closed.close()
    assert not line(argparse.Namespace(quiet=False), "x", closed).active


def test_the_line_fits_the_terminals_width(terminal):
    stream, master = terminal
    clock = iter([0.0, 2.0, 2.5]).__next__
    with line(argparse.Namespace(quiet=False), "writing a-rather-long-name.bpk", stream) as progress:
        progress.clock, progress.started = clock, clock()
        progress(1 << 20, 4 << 20)
    stream.close()
    text = read_all(master)
    drawn = text.split(ERASE)
    assert drawn[0] == "" and drawn[-1] == ""
    # 39 of the 40 columns (the cursor stays on the line): the label gives up its middle, the figures stay whole
    assert drawn[1] == "writing...ame.bpk  1 MiB of 4 MiB (25%)"
    assert len(drawn[1]) == 39


def test_a_stream_without_a_size_gets_eighty_columns():
    stream = io.StringIO()
    progress = ProgressLine("y" * 100, stream, clock=lambda: 0.0)
    progress(1, 2)
    assert stream.getvalue() == ERASE + "y" * 29 + "..." + "y" * 29 + "  1 B of 2 B (50%)"
    assert len(stream.getvalue()) - len(ERASE) == 79


def test_the_first_and_empty_states():
    stream = io.StringIO()
    with ProgressLine("writing", stream, clock=lambda: 5.0) as progress:
        progress(0, 0)
    assert stream.getvalue().split(ERASE) == ["", "writing  0 B of 0 B (0%)", ""]
    stream = io.StringIO()
    now = [5.0]
    with ProgressLine("writing", stream, clock=lambda: now[0]) as progress:
        progress(0, 100)
        now[0] = 6.0
        progress(50, 100)
        progress(100, 100)
    assert stream.getvalue().split(ERASE) == ["", "writing  0 B of 100 B (0%)", "writing  50 B of 100 B (50%)  50 B/s  1 s left",
                                              "writing  100 B of 100 B (100%)  100 B/s", ""]
    untouched = io.StringIO()
    with ProgressLine("writing", untouched):
        pass
    assert untouched.getvalue() == ""  # nothing drawn: nothing to erase


def test_a_rate_needs_time_and_bytes_and_a_whole_is_100_percent():
    """No rate before time has passed or a byte is done (no division by zero), then a rate from the first byte."""
    stream, now = io.StringIO(), [0.0]
    progress = ProgressLine("w", stream, clock=lambda: now[0])
    progress(50, 100)  # no time has passed
    now[0] = 0.5
    progress(0, 100)  # time, but nothing done
    now[0] = 0.7
    progress(1, 100)
    now[0] = 0.9
    progress(1, 1)
    assert stream.getvalue().split(ERASE) == ["", "w  50 B of 100 B (50%)", "w  0 B of 100 B (0%)",
                                              "w  1 B of 100 B (1%)  1 B/s  1 min 9 s left", "w  1 B of 1 B (100%)  1 B/s"]
