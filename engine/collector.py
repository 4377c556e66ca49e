"""Python's cyclic garbage collector paused while many long-lived objects are made.

Opening a header of 100,000 tensors or laying out their tree makes hundreds of thousands of objects,
none of them garbage; the collector would scan the growing heap again and again (half the time of an
open) and, in a worker thread, hold the GIL long enough to freeze the window. Reference counting
still frees everything as usual while it is paused.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
