"""A name of any depth makes a tree of at most MAX_DEPTH levels: its last level holds the rest of the name,
and every node still knows the full name (search, surgery and Copy Name see it whole).

Without the cap, a SafeTensors file of 97 KiB whose one name has 50,000 dotted segments would drive the window past
4 GiB (a node per segment, each holding its path: 50,000 paths of 50 KB on average) and the user would lose it.
"""

from __future__ import annotations

import tracemalloc

from engine import TensorEntry
from engine.dtypes import F32
from engine.tree import MAX_DEPTH, build_tree, filter_entries, name_matcher

SEGMENTS = [f"s{i}" for i in range(50_000)]
DEEP = ".".join(SEGMENTS)


def _entries(*names: str) -> list[TensorEntry]:
    return [TensorEntry(name, F32, (2,), 8) for name in names]


def _peak_bytes(work) -> int:
    """Peak bytes Python allocated while ``work()`` ran (tracemalloc: exact, whatever else the machine does)."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_name_of_50000_segments_makes_max_depth_levels_and_its_leaf_holds_the_rest():
    root = build_tree(_entries(DEEP), order="file")
    nodes = list(root.walk())
    assert len(nodes) == MAX_DEPTH + 1  # the root, then one node a level
    assert [node.depth for node in nodes] == list(range(MAX_DEPTH + 1))
    assert [node.name for node in nodes[1:MAX_DEPTH]] == SEGMENTS[:MAX_DEPTH - 1]
    leaf = nodes[-1]
    assert leaf.name == ".".join(SEGMENTS[MAX_DEPTH - 1:]) and not leaf.has_children
    assert leaf.path == DEEP and leaf.entry.name == DEEP and leaf.tensors == 1 and leaf.params == 2
    assert nodes[10].path == ".".join(SEGMENTS[:10])
    assert root.find(DEEP) is leaf and root.find(".".join(SEGMENTS[:10])) is nodes[10]
    assert nodes[10].find(".".join(SEGMENTS[10:])) is leaf  # found from a node part of the way down, too


def test_building_and_walking_the_deepest_name_allocates_a_few_times_the_name():
    def build_and_walk() -> None:
        for compact in (False, True):
            for node in build_tree(_entries(DEEP), order="file", compact=compact).walk():
                node.name, node.path  # noqa: B018 - what a view asks of every row it shows

    assert _peak_bytes(build_and_walk) < 20 * len(DEEP)  # 2 MB; a level a segment took gigabytes


def test_a_compact_tree_shows_the_deepest_name_as_one_row_over_its_tail():
    root = build_tree(_entries(DEEP), order="file", compact=True)
    (chain,) = root.children
    assert chain.name == ".".join(SEGMENTS[:MAX_DEPTH - 1]) and chain.path == chain.name
    (leaf,) = chain.children
    assert leaf.name == ".".join(SEGMENTS[MAX_DEPTH - 1:]) and leaf.path == DEEP and leaf.parent is chain
    assert root.find(SEGMENTS[0]) is chain and root.find(".".join(SEGMENTS[:20])) is chain  # folded: its row
    assert root.find(DEEP) is leaf


def test_long_segments_folded_into_a_chain_are_held_once():
    """Each folded group keeps its own segment and the chain its name once: a growing prefix per folded group
    held 63 copies of the name's start."""
    segments = [f"{i:02d}" * 5_000 for i in range(MAX_DEPTH)]  # 64 segments of 10,000 characters
    name = ".".join(segments)

    def build_and_walk() -> None:
        for node in build_tree(_entries(name, name + ".b"), order="file", compact=True).walk():
            node.name  # noqa: B018

    assert _peak_bytes(build_and_walk) < 8 * len(name)


def test_names_alike_down_to_the_last_level_part_there_and_keep_their_tails_whole():
    prefix = ".".join(SEGMENTS[:MAX_DEPTH - 1])
    names = [f"{prefix}.x.y", f"{prefix}.x.z", f"{prefix}.last", f"{prefix}.x"]
    root = build_tree(_entries(*names), order="file")
    bottom = root.find(prefix)
    assert bottom.depth == MAX_DEPTH - 1 and bottom.tensors == 4
    assert [child.name for child in bottom.children] == ["x.y", "x.z", "last", "x"]
    assert [child.path for child in bottom.children] == names
    assert all(not child.has_children for child in bottom.children)  # no level past MAX_DEPTH
    assert root.find(f"{prefix}.x.z").entry.name == f"{prefix}.x.z" and root.find(f"{prefix}.x").path == names[3]


def test_a_name_of_exactly_max_depth_segments_splits_at_every_dot():
    name = ".".join(SEGMENTS[:MAX_DEPTH])
    leaf = build_tree(_entries(name)).find(name)
    assert leaf.name == SEGMENTS[MAX_DEPTH - 1] and leaf.depth == MAX_DEPTH and leaf.path == name


def test_search_sees_the_full_name_past_the_last_level():
    entries = _entries(DEEP, "head.weight")
    found = filter_entries(entries, name_matcher("s49999", regex=False))
    assert [entry.name for entry in found] == [DEEP]
    tree = build_tree(found, order="file", compact=True)
    assert tree.find(DEEP).entry.name == DEEP and tree.tensors == 1
