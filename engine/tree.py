"""A store's tensor names as a dotted-path tree, so views can show groups (``layer.2.conv``) with totals.

Pure Python: the GUI adapts it to Qt. Built in one pass over the names (fast for 100,000 tensors);
children are put in natural order (``layer.2`` before ``layer.10``) only when first asked for, so a
view that never opens a group never pays for sorting it.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Iterator

from .store import TensorEntry

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple:
    """Sort key that orders digit runs by value: ``2`` before ``10``; ties fall back to the text."""
    parts = _DIGITS.split(text)
    # split() puts text at even positions and digit runs at odd ones, so types always line up.
    return tuple(int(p) if i % 2 else p.lower() for i, p in enumerate(parts)), text


class TreeNode:
    """A group of tensors sharing a dotted prefix, or one tensor (``entry`` set), or both.

    A name can be a tensor and a prefix at once (``a`` and ``a.b``), so a node may hold an entry and
    children. ``params``, ``nbytes`` and ``tensors`` total the node's own entry and everything below.
    """

    __slots__ = ("name", "path", "parent", "entry", "params", "nbytes", "tensors", "row", "_by_name", "_children")

    def __init__(self, name: str, path: str, parent: "TreeNode | None") -> None:
        self.name = name
        self.path = path
        self.parent = parent
        self.entry: TensorEntry | None = None
        self.params = 0
        self.nbytes = 0
        self.tensors = 0
        self.row = 0  # position among the parent's children, valid once the parent's children are sorted
        self._by_name: dict[str, TreeNode] = {}
        self._children: list[TreeNode] | None = None

    @property
    def children(self) -> list["TreeNode"]:
        """Children in natural order, sorted on first access."""
        if self._children is None:
            self._children = sorted(self._by_name.values(), key=lambda n: natural_key(n.name))
            for row, child in enumerate(self._children):
                child.row = row
        return self._children

    @property
    def has_children(self) -> bool:
        return bool(self._by_name)

    @property
    def is_tensor(self) -> bool:
        return self.entry is not None

    def child(self, name: str) -> "TreeNode | None":
        return self._by_name.get(name)

    def find(self, path: str) -> "TreeNode | None":
        """The node at a dotted path below this one (``""`` is this node)."""
        node: TreeNode | None = self
        for part in path.split(".") if path else ():
            node = node._by_name.get(part) if node is not None else None
        return node

    def walk(self) -> Iterator["TreeNode"]:
        """This node and every node below it, depth first, in natural order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def __repr__(self) -> str:
        kind = "tensor" if self.entry is not None else "group"
        return f"<TreeNode {kind} {self.path or '<root>'}: {self.tensors} tensors>"


def build_tree(entries: Iterable[TensorEntry]) -> TreeNode:
    """The dotted-path tree of ``entries``; the root has name and path ``""``."""
    root = TreeNode("", "", None)
    for entry in entries:
        numel, nbytes = entry.numel, entry.nbytes
        node = root
        root.params += numel
        root.nbytes += nbytes
        root.tensors += 1
        start = 0
        name = entry.name
        while True:
            dot = name.find(".", start)
            part = name[start:] if dot < 0 else name[start:dot]
            child = node._by_name.get(part)
            if child is None:
                child = TreeNode(part, name if dot < 0 else name[:dot], node)
                node._by_name[part] = child
            node = child
            node.params += numel
            node.nbytes += nbytes
            node.tensors += 1
            if dot < 0:
                break
            start = dot + 1
        node.entry = entry
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
