"""``store-studio --help | head -1``: a reader that leaves early is no error; the command stops quietly (exit 0,
as the commands do), never with a BrokenPipeError traceback on the terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).parents[3] / "resources" / "samples" / "sample_cnn.bpk"


@pytest.mark.child
@pytest.mark.parametrize("argv", [["--help"], ["inspect", str(SAMPLE)]], ids=["help", "inspect"])
def test_output_into_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write meets EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "gui.launch", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr.decode()) == (0, "")
