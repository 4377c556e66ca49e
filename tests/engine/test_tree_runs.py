"""A group splits its names run by run (engine/tree.py, _run_end): whatever the order of the names, grouped by
module or interleaved, each group holds exactly the tensors below it, its children in order of first appearance."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import ArrayStore
from engine.tree import RUN_CHECKS, build_tree

SEGMENTS = ["a", "b", "c", "0", "1", "10", "2", "w", ""]


def _expected_children(names: list[str], path: str | None) -> list[str]:
    """Next segments below ``path`` (None: the root) in order of first appearance (what a file-order tree shows)."""
    prefix = "" if path is None else f"{path}."
    heads: dict[str, None] = {}
    for name in names:
        if name.startswith(prefix):
            heads.setdefault(name[len(prefix):].split(".", 1)[0], None)
    return list(heads)


def _check(names: list[str]) -> None:
    store = ArrayStore({name: np.zeros(1 + i % 3, np.float32) for i, name in enumerate(names)})
    root = build_tree(store.entries, order="file")
    for node in root.walk():
        below = [n for n in names if node is root or n.startswith(f"{node.path}.") or n == node.path]
        assert node.tensors == len(below), node.path
        assert node.params == sum(1 + names.index(n) % 3 for n in below), node.path
        expected = _expected_children(names, None if node is root else node.path)
        assert [child.name for child in node.children] == expected, node.path


@settings(max_examples=120, deadline=None)
@given(st.lists(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map(".".join), min_size=1,
                max_size=80, unique=True), st.booleans())
def test_groups_hold_their_tensors_in_any_order(names, grouped):
    _check(sorted(names) if grouped else names)


def test_long_runs_and_interleaved_names_after_them():
    runs = [f"m.{i}.w{j}" for i in range(RUN_CHECKS + 4) for j in range(40)]  # runs of 40 rows
    interleaved = [f"m.{i % 7}.x{i}" for i in range(300)]  # heads that come back one row at a time
    _check(runs + interleaved)
    _check(interleaved + runs)
