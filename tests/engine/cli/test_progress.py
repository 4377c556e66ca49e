"""The progress line: on a terminal only (a real pty here), silenced by -q, bytes, rate and time left."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from engine.cli.progress import ERASE, ProgressLine
from tests.helpers.samples import SAMPLES
from tests.helpers.engine_terminal import stderr_on_a_pty

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
