"""The process's own file descriptors, for tests that a store releases its files and reads one on descriptor 0."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def open_descriptors_naming(path: Path) -> list[int]:
    """The process's descriptors open on ``path`` (from /proc, what the system itself holds)."""
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                fds.append(int(fd))
        except OSError:  # the descriptor listdir itself used, gone by now
            pass
    return fds


@contextmanager
def stdin_closed() -> Iterator[None]:
    """As in a process started with its standard input closed (a service, ``store-studio <&-``): the next file
    opened gets descriptor 0. This process's own stdin is back when the block ends."""
    stdin = os.dup(0)
    os.close(0)
    try:
        yield
    finally:
        os.dup2(stdin, 0)
        os.close(stdin)
