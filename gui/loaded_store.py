"""What opening a file hands the window: the store, its tree and totals, made in a worker.

Its own module so that the tab (store_view) and the file panel (file_info) both import it from below.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine import (
    CheckpointBranches,
    RemoteLocation,
    Store,
    TreeNode,
    build_tree,
    checkpoint_branches,
    collector_paused,
    first_levels,
    open_store,
    values_by_dtype,
    watch_downloads,
)

SMALL_STORE = 64  # a store this small opens fully expanded: everything in it at a glance
LATE_LEVELS_FROM = 5_000  # tensors from which a tab shows its tree first and opens its first levels after


@dataclass
class LoadedStore:
    """What a worker hands the window: the store, its tree (in file order, compacted) and totals worked out once.

    ``tree`` totals the whole store (``tree.params`` is every parameter), so views never re-sum 100,000 entries.
    """

    store: Store
    tree: TreeNode
    # Groups the view opens first (engine.tree.first_levels), found off the UI thread; None for a large store,
    # whose view works them out in a worker once its tree has painted (they split up to every name).
    opened: list[TreeNode] | None
    params_by_dtype: list[tuple[str, int]]
    file_size: int
    branches: CheckpointBranches | None = None  # a training checkpoint's top-level branches, when it has several


def load_store(path: Path | RemoteLocation, cancelled: Callable[[], bool],
               download_progress: Callable[[int, int], None] | None = None) -> LoadedStore:
    """Open and index a file (or a URL); runs in a worker so a large header or a slow server never freezes the window.

    ``download_progress`` hears of a whole-file download (a server ignoring byte ranges, a remote Bin record)
    and may raise to stop it.
    """
    with collector_paused(), watch_downloads(download_progress):
        store = open_store(path)
        if cancelled():  # nobody wants it any more: close it here rather than leave it open
            store.close()
            raise InterruptedError("cancelled")
        tree = build_tree(store.entries, order="file", compact=True)
        tree.children  # noqa: B018 - the first level is laid out here, not in the tab's first paint
        opened = [] if tree.tensors <= SMALL_STORE else first_levels(tree) if tree.tensors < LATE_LEVELS_FROM else None
        by_dtype = values_by_dtype(tree)
        branches = checkpoint_branches(store)
        freeze_lasting_objects()
    return LoadedStore(store, tree, opened, by_dtype, store.file_size, branches)


def freeze_lasting_objects() -> None:
    """Take what a tab keeps for its lifetime (a store and its tree) out of the collector's scans.

    Made while the collector was paused, 100,000 tensors' objects would all wait in its youngest generation,
    and the next collection, in whichever thread allocates next, would scan them with the GIL held: a
    0.1 s freeze of the window in the middle of typing. A full scan of them later would hold it for longer.
    """
    gc.freeze()


def release_frozen_objects() -> None:
    """Give the collector back what ``load_store`` froze, once a tab closes.

    A closed store's objects hold reference cycles (entries and their store), which only the collector
    frees, and frozen objects it never looks at: without this every closed tab would stay in memory. The
    stores still open are frozen again by the next load.
    """
    gc.unfreeze()
