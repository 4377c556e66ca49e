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
def collector_paused(long_lived: bool = False) -> Iterator[None]:
    """``long_lived``: the objects made meanwhile are kept (a plan's cached stage results), so they join the
    oldest generation at once (``gc.freeze`` then ``unfreeze``) instead of being scanned by the first young
    collection after the pause: 9 ms of a 70 ms re-plan of 10,000 tensors."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if long_lived:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()
