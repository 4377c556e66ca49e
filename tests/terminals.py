"""What a program wrote to a real pty, for the tests of progress lines drawn only on a terminal."""
from __future__ import annotations

import fcntl
import os
import struct
import sys
import termios


def read_all(master: int) -> str:
    """Everything written to the slave side, once it is closed (then the master reads EOF or EIO, never waits)."""
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the slave side is closed and drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def cli_on_a_terminal(monkeypatch, argv: list[str]) -> str:
    """``store-studio ARGV`` in-process with stderr on a real 80-column pty (it must exit 0); what the terminal got."""
    from engine.cli import main

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    terminal = os.fdopen(slave, "w")
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(argv) == 0
    terminal.close()
    try:
        return read_all(master)
    finally:
        os.close(master)
