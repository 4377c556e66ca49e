"""Python's cyclic garbage collector paused while many long-lived objects are made.

Opening a header of 100,000 tensors or laying out their tree makes hundreds of thousands of objects,
none of them garbage; the collector would scan the growing heap again and again (half the time of an
open) and, in a worker thread, hold the GIL long enough to freeze the window. Reference counting
still frees everything as usual while it is paused.
"""

from __future__ import annotations

import gc


class collector_paused:  # noqa: N801 - used as a function, like contextlib.suppress
    """``with collector_paused():`` the collector is off inside, and back on after if it was on before.

    ``long_lived``: the objects made meanwhile are kept (a plan's cached stage results), so they join the
    oldest generation at once (``gc.freeze`` then ``unfreeze``) instead of being scanned by the first young
    collection after the pause.
    """

    __slots__ = ("long_lived", "was_enabled")

    def __init__(self, long_lived: bool = False):
        self.long_lived = long_lived
        self.was_enabled = False

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.long_lived:
            gc.freeze()
            gc.unfreeze()
        if self.was_enabled:
            gc.enable()
