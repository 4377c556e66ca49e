"""Files that are not regular files, for the tests that refuse them (a FIFO, a socket)."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def a_socket(folder: Path, name: str = "sock") -> Path:
    """A Unix socket's name (it stays one once closed), bound relative to its folder: a socket's path may hold
    at most 107 bytes, fewer than a test's temporary folder may."""
    here = os.getcwd()
    os.chdir(folder)
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(name)
    finally:
        os.chdir(here)
    return folder / name
