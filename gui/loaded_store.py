"""What opening a file hands the window: the store, its tree and totals, made in a worker.

Its own module so that the tab (store_view) and the file panel (file_info) both import it from below.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine import RemoteLocation, Store, open_store
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


def load_store(path: Path | RemoteLocation, cancelled: Callable[[], bool]) -> LoadedStore:
    """Open and index a file (or a URL); runs in a worker so a large header or a slow server never freezes the window."""
    store = open_store(path)
    if cancelled():  # nobody wants it any more: close it here rather than leave it open
        store.close()
        raise InterruptedError("cancelled")
    tree = build_tree(store.entries, order="file", compact=True)
    opened = first_levels(tree) if tree.tensors > SMALL_STORE else []
    by_dtype: Counter = Counter()
    for entry in store.entries:  # keyed by DType, named once at the end: str() per tensor adds up at 100,000
        by_dtype[entry.dtype] += math.prod(entry.shape)
    return LoadedStore(store, tree, opened, [(str(d), n) for d, n in by_dtype.most_common()], store.file_size)
