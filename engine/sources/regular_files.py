"""Local files are read only when they are regular files: models, shards, templates and recipes alike.

Nothing else is a file to read: a FIFO blocks its reader until a writer comes (for ever, when none does),
a character device never ends (``/dev/zero``) or is empty (``/dev/null``), and a socket cannot be opened.
``open_regular`` looks before it opens (``stat``: a device is never opened, since opening some has effects)
and again at what it opened (``fstat``: the name may have been swapped for a FIFO in between). The open
itself is non-blocking, so not even that swap can hang it; on a regular file the flag changes nothing.
"""

from __future__ import annotations

import os
import stat

OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """A path names a folder, FIFO, device or socket. An ``OSError`` (errno None, the kind in ``strerror``,
    the path in ``filename``), so a caller that handles failed opens handles this one too."""

    def __init__(self, path: str | os.PathLike, kind: str):
        super().__init__(None, f"is a {kind}, not a regular file", os.fspath(path))
        self.kind = kind


def file_kind(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in the words messages use."""
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISDIR(mode):
        return "folder"
    return ("FIFO" if stat.S_ISFIFO(mode) else "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "socket" if stat.S_ISSOCK(mode) else "special file")


def open_regular(path: str | os.PathLike) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at ``path`` and its ``fstat``; ``NotRegularFile`` for anything
    else, other ``OSError`` as ``os.stat`` and ``os.open`` raise them (a missing file, no permission)."""
    _refuse_other_kinds(path, os.stat(path).st_mode)
    fd = os.open(path, OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        _refuse_other_kinds(path, info.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def _refuse_other_kinds(path: str | os.PathLike, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, file_kind(mode))
