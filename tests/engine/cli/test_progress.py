"""The progress line: on a terminal only (a real pty here), silenced by -q, bytes, rate and time left, redrawn in
place at most ten times a second, never wider than the terminal, erased at the end. Without it a long conversion
would look hung, or would litter the terminal and a piped log with half-drawn lines.

Promises (README "Command line": a progress line on a terminal only, silenced by ``-q``, redrawn in place and
erased at the end) -> tests:
- drawn only on a terminal and without ``-q`` -> ``test_only_a_terminal_without_quiet_gets_the_line``
- never wider than the terminal (no wrapped lines to leave behind) -> ``test_the_line_fits_the_terminals_width``
- nothing done yet, or nothing to do, still reads sensibly -> ``test_the_first_and_empty_states``
- a redraw a tenth of a second after the last one is drawn, one sooner is not, the last state always is
  -> ``test_a_redraw_waits_a_tenth_of_a_second_except_for_the_last_state``
"""

from __future__ import annotations

import argparse
import fcntl
import io
import os
import struct
import subprocess
import sys
import termios

import pytest

from engine.cli.progress import ERASE, REDRAW_EVERY, ProgressLine, line
from tests.helpers.engine_terminal import stderr_on_a_pty
from tests.helpers.samples import SAMPLES
from tests.terminals import read_all

SAMPLE = str(SAMPLES / "sample_cnn.bpk")



@pytest.mark.child
def test_convert_draws_a_progress_line_on_a_terminal_and_erases_it(tmp_path):
    code, terminal = stderr_on_a_pty("convert", SAMPLE, str(tmp_path / "out.safetensors"))
    assert code == 0
    assert f"{ERASE}writing out.safetensors  " in terminal
    assert " (100%)  " in terminal and "/s" in terminal
    assert terminal.rstrip().endswith(f"{ERASE}wrote {tmp_path / 'out.safetensors'}")


@pytest.mark.child
def test_quiet_silences_the_progress_line_even_on_a_terminal(tmp_path):
    code, terminal = stderr_on_a_pty("convert", SAMPLE, str(tmp_path / "out.bpk"), "-q")
    assert code == 0
    assert "writing" not in terminal and ERASE not in terminal


@pytest.mark.child
def test_diff_draws_a_progress_line_on_a_terminal():
    code, terminal = stderr_on_a_pty("diff", SAMPLE, str(SAMPLES / "sample_cnn.safetensors"))
    assert code == 0
    assert f"{ERASE}comparing  " in terminal and " (100%)" in terminal


@pytest.mark.child
def test_piped_stderr_gets_no_progress_line(tmp_path):
    out = tmp_path / "out.bpk"
    result = subprocess.run([sys.executable, "-m", "gui.launch", "convert", SAMPLE, str(out)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and result.stderr == f"wrote {out}\n"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_shows_bytes_rate_and_time_left_and_redraws_at_most_ten_times_a_second():
    stream, clock = io.StringIO(), Clock()
    with ProgressLine("writing m.bpk", stream, clock=clock) as progress:
        clock.now += 2
        progress(200 << 20, 800 << 20)
        clock.now += 0.05
        progress(210 << 20, 800 << 20)  # too soon: not drawn
        clock.now += 0.07
        progress(220 << 20, 800 << 20)
        progress(800 << 20, 800 << 20)  # the end is always drawn
    drawn = stream.getvalue().split(ERASE)
    assert drawn == ["", "writing m.bpk  200 MiB of 800 MiB (25%)  100 MiB/s  6 s left",
                     "writing m.bpk  220 MiB of 800 MiB (27%)  104 MiB/s  6 s left",
                     "writing m.bpk  800 MiB of 800 MiB (100%)  377 MiB/s", ""]


def test_an_inactive_line_writes_nothing():
    stream = io.StringIO()
    with ProgressLine("x", stream, active=False) as progress:
        progress(1, 2)
        progress(2, 2)
    assert stream.getvalue() == ""


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


def test_a_redraw_waits_a_tenth_of_a_second_except_for_the_last_state():
    stream, now = io.StringIO(), [0.0]
    progress = ProgressLine("w", stream, clock=lambda: now[0])
    progress(1, 4)
    now[0] = 0.05
    progress(2, 4)  # sooner than a tenth: skipped
    now[0] = REDRAW_EVERY
    progress(3, 4)  # exactly a tenth after the first: drawn
    progress(4, 4)  # the last state: drawn at once
    assert [text.split("  ")[1] for text in stream.getvalue().split(ERASE)[1:]] == [
        "1 B of 4 B (25%)", "3 B of 4 B (75%)", "4 B of 4 B (100%)"]
