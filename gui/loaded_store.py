"""What opening a file hands the window: the store, its tree and totals, made in a worker.

Its own module so that the tab (store_view) and the file panel (file_info) both import it from below.
"""

from __future__ import annotations

import gc
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine import RemoteLocation, Store, open_store, watch_downloads
from engine.collector import collector_paused
from engine.tree import TreeNode, build_tree, first_levels

SMALL_STORE = 64  # a store this small opens fully expanded: everything in it at a glance


@dataclass
class LoadedStore:
    """What a worker hands the window: the store, its tree (in file order, compacted) and totals worked out once.

    ``tree`` totals the whole store (``tree.params`` is every parameter), so views never re-sum 100,000 entries.
    """

    store: Store
    tree: TreeNode
    opened: list[TreeNode]  # groups the view opens first (engine.tree.first_levels), found off the UI thread
    params_by_dtype: list[tuple[str, int]]
    file_size: int


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
        opened = first_levels(tree) if tree.tensors > SMALL_STORE else []
        by_dtype = _params_by_dtype(store)
        # A store lives as long as its tab: its objects leave the collector's scans (a full scan of a
        # 100,000-tensor store holds the GIL for most of a second: the window would freeze at random).
        gc.freeze()
    return LoadedStore(store, tree, opened, by_dtype, store.file_size)


def release_frozen_objects() -> None:
    """Give the collector back what ``load_store`` froze, once a tab closes.

    A closed store's objects hold reference cycles (entries and their store), which only the collector
    frees, and frozen objects it never looks at: without this every closed tab would stay in memory. The
    stores still open are frozen again by the next load.
    """
    gc.unfreeze()


def _params_by_dtype(store: Store) -> list[tuple[str, int]]:
    """Parameters per dtype, most first. Keyed by the dtype object's identity (formats share one per dtype):
    hashing a frozen dataclass per tensor, and naming it, add up at 100,000 tensors."""
    counts: Counter = Counter()
    kinds = {}
    for entry in store.entries:
        key = id(entry.dtype)
        kinds[key] = entry.dtype
        counts[key] += math.prod(entry.shape)
    named: Counter = Counter()
    for key, count in counts.items():  # equal dtypes that are distinct objects are summed under one name
        named[str(kinds[key])] += count
    return named.most_common()
