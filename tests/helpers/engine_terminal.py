"""Running ``store-studio`` with its stderr on a real terminal (a pty), where it draws progress lines."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def stderr_on_a_pty(*args: str) -> tuple[int, str]:
    """Run ``store-studio ARGS`` from the checkout with stderr on a terminal; the exit code and what it received."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gui.launch", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=slave, cwd=REPO)
    os.close(slave)
    received = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    return proc.wait(timeout=120), received.decode()
