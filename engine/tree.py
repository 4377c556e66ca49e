"""A store's tensor names as a dotted-path tree, so views can show groups (``layer.2.conv``) with totals.

Pure Python: the GUI adapts it to Qt. A node splits its names into child groups only when first
asked for its children, and sorts them in natural order (``layer.2`` before ``layer.10``) then: building
the tree of 100,000 names costs one pass to total them, and a view pays only for the groups it opens.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Iterable, Iterator

from .store import TensorEntry

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple:
    """Sort key that orders digit runs by value: ``2`` before ``10``; ties fall back to the text."""
    if text.isdigit():  # the common case (layer indices), kept fast
        return ("", int(text), ""), text
    parts: list = _DIGITS.split(text)
    # split() puts text at even positions and digit runs at odd ones, so types always line up.
    parts[1::2] = map(int, parts[1::2])
    parts[0::2] = map(str.lower, parts[0::2])
    return tuple(parts), text


class TreeNode:
    """A group of tensors sharing a dotted prefix, or one tensor (``entry`` set), or both.

    A name can be a tensor and a prefix at once (``a`` and ``a.b``), so a node may hold an entry and
    children. ``params``, ``nbytes`` and ``tensors`` total the node's own entry and everything below.
    """

    __slots__ = ("name", "path", "parent", "entry", "params", "nbytes", "tensors", "row", "_below", "_by_name",
                 "_children")

    def __init__(self, name: str, path: str, parent: "TreeNode | None") -> None:
        self.name = name
        self.path = path
        self.parent = parent
        self.entry: TensorEntry | None = None
        self.params = 0
        self.nbytes = 0
        self.tensors = 0
        self.row = 0  # position among the parent's children, valid once the parent's children are sorted
        self._below: list[tuple[str, TensorEntry, int]] = []  # (rest of the name, entry, numel) until split
        self._by_name: dict[str, TreeNode] | None = None
        self._children: list[TreeNode] | None = None

    @property
    def children(self) -> list["TreeNode"]:
        """Children in natural order, made and sorted on first access."""
        if self._children is None:
            self._children = sorted(self._split().values(), key=lambda n: natural_key(n.name))
            for row, child in enumerate(self._children):
                child.row = row
        return self._children

    @property
    def has_children(self) -> bool:
        return bool(self._below or self._by_name)

    @property
    def is_tensor(self) -> bool:
        return self.entry is not None

    def child(self, name: str) -> "TreeNode | None":
        return self._split().get(name)

    def find(self, path: str) -> "TreeNode | None":
        """The node at a dotted path below this one (``""`` is this node)."""
        node: TreeNode | None = self
        for part in path.split(".") if path else ():
            node = node.child(part) if node is not None else None
        return node

    def walk(self) -> Iterator["TreeNode"]:
        """This node and every node below it, depth first, in natural order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def _split(self) -> dict[str, "TreeNode"]:
        """Group the names below this node by their next segment, once."""
        if self._by_name is None:
            by_name: dict[str, TreeNode] = {}
            prefix = f"{self.path}." if self.parent is not None else ""
            for rest, entry, numel in self._below:  # the hot loop of opening a group: kept flat
                head, dot, tail = rest.partition(".")
                child = by_name.get(head)
                if child is None:
                    child = by_name[head] = TreeNode(head, prefix + head, self)
                child.params += numel
                child.nbytes += entry.nbytes
                child.tensors += 1
                if dot:
                    child._below.append((tail, entry, numel))
                else:
                    child.entry = entry
            self._by_name = by_name
            self._below = []
        return self._by_name

    def __repr__(self) -> str:
        kind = "tensor" if self.entry is not None else "group"
        return f"<TreeNode {kind} {self.path or '<root>'}: {self.tensors} tensors>"


def build_tree(entries: Iterable[TensorEntry]) -> TreeNode:
    """The dotted-path tree of ``entries``; the root has name and path ``""``."""
    root = TreeNode("", "", None)
    root._below = [(entry.name, entry, math.prod(entry.shape)) for entry in entries]
    root.tensors = len(root._below)
    root.params = sum(numel for _, _, numel in root._below)
    root.nbytes = sum(entry.nbytes for _, entry, _ in root._below)
    return root


def name_matcher(pattern: str, *, regex: bool) -> Callable[[str], bool]:
    """A case-insensitive test on tensor names: substring for text, ``re.search`` for regex.

    Raises ``re.error`` for an invalid regex, so a caller can show what is wrong with it.
    """
    if regex:
        return re.compile(pattern, re.IGNORECASE).search  # type: ignore[return-value]
    needle = pattern.lower()
    return lambda name: needle in name.lower()


def filter_entries(entries: Iterable[TensorEntry], matches: Callable[[str], bool]) -> list[TensorEntry]:
    """The entries whose full name matches; build a tree of them to show a filtered view."""
    return [e for e in entries if matches(e.name)]
