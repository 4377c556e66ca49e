"""Progress of whole-file downloads, for whoever opened the file (the window's status bar).

A remote file is downloaded whole only when its server ignores byte ranges (or a reader must map
the whole file); that happens deep inside ``open_store``, so the caller does not pass a callback
through every reader but sets one for its thread with ``watch_downloads``. The callback gets
``(bytes so far, total)``; it may raise (the window's raises ``InterruptedError`` once its Cancel
is pressed) and the download then stops and removes its partial copy. No network library is
imported here: local opens use this too.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

Progress = Callable[[int, int], None]

_watcher: ContextVar[Progress | None] = ContextVar("store_studio_download_watcher", default=None)


@contextmanager
def watch_downloads(progress: Progress | None) -> Iterator[None]:
    """Whole-file downloads started in this context (this thread) report to ``progress`` (None: to no one)."""
    token = _watcher.set(progress)
    try:
        yield
    finally:
        _watcher.reset(token)


def report(done: int, total: int) -> None:
    """Tell the watcher, if any, how far a download has come (it may raise to stop the download)."""
    progress = _watcher.get()
    if progress is not None:
        progress(done, total)
