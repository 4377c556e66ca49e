"""A store's tensor names as a dotted-path tree, so views can show groups (``layer.2.conv``) with totals.

Pure Python: the GUI adapts it to Qt. A node splits its names into child groups only when first
asked for its children, and sorts them in natural order (``layer.2`` before ``layer.10``) then: building
the tree of 100,000 names costs one pass to total them, and a view pays only for the groups it opens.
Laying out is guarded by one lock per tree, so a worker may open levels of the tree a view shows.
A name shows at most MAX_DEPTH levels deep, its last level holding the rest of it, and a node's path is
sliced from a name below it only when asked: one name of 50,000 dotted segments makes 65 nodes, not a
level per segment each holding its path (50,000 paths of 50 KB on average: gigabytes).
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Callable, Iterable, Iterator

from . import rust_regex
from .store import TensorEntry

# A dotted path's segments read as burn-store reads them: burn-store's ``map_indices_contiguous`` takes a
# segment for an index when Rust's ``str::parse::<usize>()`` accepts it (crates/burn-store/src/keyremapper.rs:247 and :307 at v0.20.0, v0.21.0, v0.22.0-pre.2 and
# main): an optional ``+``, then one or more ASCII digits, at most ``usize::MAX`` (2^64 - 1 on the 64-bit
# targets Burn ships for). Python's ``str.isdigit``/``int`` disagree (``²`` is a digit to one and not the
# other, ``٣`` and ``1_000`` are ints), so every reader of indices asks ``parse_index`` instead.
USIZE_MAX = 2**64 - 1
_USIZE_DIGITS = len(str(USIZE_MAX))


def parse_index(segment: str) -> int | None:
    """The value Rust's ``segment.parse::<usize>()`` gives, or None where it fails (``"+5"`` is 5; ``"²"`` None)."""
    digits = segment[1:] if segment.startswith("+") else segment
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    significant = digits.lstrip("0")  # Rust accepts any number of leading zeros; int() would refuse 4,300+ digits
    if len(significant) > _USIZE_DIGITS:
        return None
    value = int(significant or "0")
    return value if value <= USIZE_MAX else None


def is_index(segment: str) -> bool:
    """Whether burn-store takes ``segment`` for an index (a Sequential's position)."""
    return parse_index(segment) is not None


_DIGITS = re.compile(r"([0-9]+)")  # ASCII only: what an index is made of (``parse_index``)
# Levels a name is split into at most; the last holds the rest of the name, dots and all (``a.b`` below
# 63 levels). Deeper than any model's module path (a few tens of levels), shallow enough that a view
# never lays out a level per segment of a hostile name.
MAX_DEPTH = 64


def _number(digits: str) -> tuple[int, str]:
    """A digit run ordered by value without ``int()`` (which refuses 4,300+ digits): length, then digits."""
    significant = digits.lstrip("0")
    return len(significant), significant


def natural_key(text: str) -> tuple:
    """Sort key that orders digit runs by value: ``2`` before ``10``; ties fall back to the text."""
    if text.isascii() and text.isdigit():  # the common case (layer indices), kept fast
        return ("", _number(text), ""), text
    parts: list = _DIGITS.split(text)
    # split() puts text at even positions and digit runs at odd ones, so types always line up.
    parts[1::2] = map(_number, parts[1::2])
    parts[0::2] = map(str.lower, parts[0::2])
    return tuple(parts), text


BUFFER_NAMES = (".running_mean", ".running_var", ".num_batches_tracked")  # BatchNorm state, not trained weights
BUFFER_ENDINGS = tuple(name[1:] for name in BUFFER_NAMES)  # a cheap first test
FLOAT_KINDS = ("float", "complex", "quantized", "gguf")


def is_buffer(entry: TensorEntry) -> bool:
    """A buffer, not a parameter: BatchNorm's running statistics and any tensor that is not floating point."""
    return entry.dtype.kind not in FLOAT_KINDS or ("." + entry.name).endswith(BUFFER_NAMES)


def natural_order(node: "TreeNode") -> tuple:
    return natural_key(node.name)


# Orders a view can ask for: each a key and whether the largest comes first. None is the file's own order.
ORDERS: dict[str, tuple[Callable[["TreeNode"], Any] | None, bool]] = {
    "file": (None, False),
    "natural": (natural_order, False),
    "params": (lambda node: node.params, True),
    "size": (lambda node: node.nbytes, True),
    "dtype": (lambda node: str(node.entry.dtype) if node.entry is not None else "", False),
    "shape": (lambda node: (len(node.entry.shape), node.entry.shape) if node.entry is not None else (-1, ()), True),
}


@dataclass
class TreeShape:
    """How one tree lays out its nodes; every node of the tree shares it, so re-sorting needs no rebuild.

    ``key`` None keeps the file's order (the order the model saved its tensors: module order). ``compact``
    shows a chain of single-child groups as one row (``encoder.block.0``), as VS Code compacts folders;
    ``flat`` lists every tensor by its full name, one level deep.
    """

    key: Callable[["TreeNode"], Any] | None = natural_order
    reverse: bool = False
    compact: bool = False
    flat: bool = False


class _Table:
    """Every tensor of one tree in file order, as columns its nodes index into by row number.

    A group holds the row numbers of the tensors below it (a list of ints), not a tuple per tensor: a tree
    of 100,000 tensors then gives the garbage collector a list per opened group to scan, not 100,000
    tuples (a collection over those, in whichever thread, holds the GIL and freezes the window).
    """

    __slots__ = ("names", "entries", "numel", "nbytes", "buffers", "by_dtype", "lock")

    def __init__(self, entries: list[TensorEntry]) -> None:
        self.entries = entries
        # Held while a level is laid out or re-sorted: a worker may open the first levels of the tree a view
        # shows (first_levels), and two threads splitting one group would each make its children.
        self.lock = threading.RLock()
        self.names: list[str] = []
        self.numel: list[int] = []
        self.nbytes: list[int] = []
        self.buffers: list[int] = []
        # Values per dtype object, keyed by its identity (formats share one per dtype): hashing a frozen
        # dataclass per tensor adds up at 100,000 tensors. Summed here, in the one pass, for ``values_by_dtype``.
        self.by_dtype: dict[int, list] = {}  # id(dtype) -> [dtype, values, whether a buffer's]
        for entry in entries:  # one pass over 100,000 entries: kept flat
            numel = math.prod(entry.shape)
            name = entry.name
            self.names.append(name)
            self.numel.append(numel)
            self.nbytes.append(entry.nbytes)
            dtype = entry.dtype
            kind = self.by_dtype.get(id(dtype))
            if kind is None:
                kind = self.by_dtype[id(dtype)] = [dtype, 0, dtype.kind not in FLOAT_KINDS]
            kind[1] += numel
            self.buffers.append(numel if kind[2] or (name.endswith(BUFFER_ENDINGS) and is_buffer(entry)) else 0)


class TreeNode:
    """A group of tensors sharing a dotted prefix, or one tensor (``entry`` set), or both.

    A name can be a tensor and a prefix at once (``a`` and ``a.b``), so a node may hold an entry and
    children. ``params``, ``nbytes`` and ``tensors`` total the node's own entry and everything below;
    ``buffer_values`` is the part of ``params`` held by buffers (``is_buffer``), ``parameters`` the rest.
    In a compact tree a shown node's ``name`` is the whole chain (``block.0``) and its ``parent`` the
    node it is shown under; the groups folded into it point to it with ``folded_into``. ``depth`` counts
    the name's segments down to this node (the root's is 0); a node at MAX_DEPTH holds the rest of a name.
    """

    __slots__ = ("name", "parent", "depth", "entry", "params", "buffer_values", "nbytes", "tensors", "row",
                 "folded_into", "_shape", "_table", "_rows", "_row", "_offset", "_by_name", "_children")

    def __init__(self, name: str, parent: "TreeNode | None", shape: TreeShape | None = None,
                 table: _Table | None = None) -> None:
        self.name = name
        self.parent = parent
        self.depth = parent.depth + 1 if parent is not None else 0
        self.entry: TensorEntry | None = None
        self.params = 0
        self.buffer_values = 0
        self.nbytes = 0
        self.tensors = 0
        self.row = 0  # position among the parent's children, valid once the parent's children are laid out
        self.folded_into: TreeNode | None = None  # set on a group a compact tree shows as part of a longer row
        self._shape = shape if shape is not None else parent._shape if parent is not None else TreeShape()
        self._table = table if table is not None else parent._table if parent is not None else _Table([])
        self._rows: list[int] | None = None  # table rows of the tensors below (not this node's own entry)
        self._row = -1  # the table row of one name at or below this node: its path is that name's start
        self._offset = 0  # where this node's part of each full name below starts
        self._by_name: dict[str, TreeNode] | None = None
        self._children: list[TreeNode] | None = None

    @property
    def path(self) -> str:
        """The full dotted name of this node (``""`` for the root), sliced from a name below it when asked."""
        if self.parent is None:
            return ""
        return self._table.names[self._row][:self._offset - 1]

    @property
    def parameters(self) -> int:
        """Trained parameters: every value below this node that is not a buffer's."""
        return self.params - self.buffer_values

    @property
    def children(self) -> list["TreeNode"]:
        """Children in the tree's order (compacted when it asks), made on first access."""
        if self._children is None:
            with self._table.lock:  # a worker may be laying out this level for the view (first_levels)
                if self._children is None:
                    nodes = list(self._split().values())
                    if self._shape.compact:
                        nodes = [self._compacted(node) for node in nodes]
                    if self._shape.key is not None:
                        nodes.sort(key=self._shape.key, reverse=self._shape.reverse)
                    for row, child in enumerate(nodes):
                        child.row = row
                    self._children = nodes  # shown only once complete
        return self._children

    @property
    def has_children(self) -> bool:
        return self._rows is not None or bool(self._by_name)

    @property
    def is_tensor(self) -> bool:
        return self.entry is not None

    def child(self, name: str) -> "TreeNode | None":
        return self._split().get(name)

    def find(self, path: str) -> "TreeNode | None":
        """The node shown for a dotted path below this one (``""`` is this node).

        In a compact tree a folded group is found as the row that shows it (``encoder`` -> ``encoder.block.0``).
        """
        if self._shape.flat and path:
            return self._split().get(path)
        node: TreeNode | None = self
        for part in path.split(".", max(0, MAX_DEPTH - 1 - self.depth)) if path else ():  # the last: the rest
            if node.folded_into is None:
                node.children  # noqa: B018 - lay this level out: compaction decides which nodes are shown
            node = node.child(part)
            if node is None:
                return None
        return node.folded_into or node

    def resort(self, key: Callable[["TreeNode"], Any] | None, reverse: bool = False) -> None:
        """Order every level by ``key`` (None: file order); levels not yet opened sort when first opened.

        Lazy: only children lists already made are re-sorted, so a 100,000-tensor tree re-sorts in the time
        its opened groups take.
        """
        with self._table.lock:
            self._shape.key, self._shape.reverse = key, reverse
            stack = [self]
            while stack:
                node = stack.pop()
                if node._children is None:
                    continue
                if key is None:
                    order = {id(child.folded_into or child): i for i, child in enumerate(node._split().values())}
                    node._children.sort(key=lambda c: order[id(c)])
                else:
                    node._children.sort(key=key, reverse=reverse)
                for row, child in enumerate(node._children):
                    child.row = row
                stack.extend(node._children)

    def walk(self) -> Iterator["TreeNode"]:
        """This node and every node shown below it, depth first, in the tree's order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def _split(self) -> dict[str, "TreeNode"]:
        """Group the names below this node by their next segment (the whole name in a flat tree), once.

        Names are never sliced into new strings per level beyond their next segment: each node keeps the
        offset where its part of the full names starts. A child's totals are sums over its rows (C loops).
        """
        if self._by_name is None:
            with self._table.lock:
                if self._by_name is None:
                    self._by_name = self._split_rows() if self._rows else {}
                    self._rows = None
        return self._by_name

    def _split_rows(self) -> dict[str, "TreeNode"]:
        head = self._common_next()
        if head is not None:  # every name goes on below one group (a model's lone top-level module): no split
            return {head: self._only_group(head)}
        table, offset = self._table, self._offset
        flat = self._shape.flat or self.depth >= MAX_DEPTH - 1  # the rest of each name is one child
        names = table.names
        groups: dict[str, list[int]] = {}
        ends_here: list[tuple[str, int]] = []
        below, start, count, runs = self._rows, 0, len(self._rows), 0
        while start < count:  # the hot loop of opening a group: kept flat
            row = below[start]
            name = names[row]
            dot = -1 if flat else name.find(".", offset)
            if dot < 0:
                head = name[offset:]
                ends_here.append((head, row))
                if head not in groups:
                    groups[head] = []
                start += 1
                continue
            head = name[offset:dot]
            # The rows after it in the same group (file order keeps a module's tensors together): one C loop.
            end = _run_end(names, below, start + 1, name[:dot + 1]) if runs < RUN_CHECKS or start > runs * 4 \
                else start + 1  # runs of under 4 rows on average (names interleaved): row by row is faster
            runs += 1
            rows = groups.get(head)
            if rows is None:
                groups[head] = below[start:end]
            else:
                rows.extend(below[start:end])
            start = end
        by_name = {head: self._group(head, rows) for head, rows in groups.items()}
        numel, buffers, nbytes = table.numel.__getitem__, table.buffers.__getitem__, table.nbytes.__getitem__
        for head, row in ends_here:  # a name ending here: the child is (also) that tensor
            child = by_name[head]
            child.entry = table.entries[row]
            child._row = row
            child.params += numel(row)
            child.buffer_values += buffers(row)
            child.nbytes += nbytes(row)
            child.tensors += 1
        return by_name

    def _group(self, head: str, rows: list[int]) -> "TreeNode":
        """The child ``head`` holding the tensors of ``rows`` below it, totalled with C sums over them."""
        child = TreeNode(head, self)
        child._offset = self._offset + len(head) + 1
        if rows:
            table = self._table
            child._rows, child._row, child.tensors = rows, rows[0], len(rows)
            child.params = sum(map(table.numel.__getitem__, rows))
            child.buffer_values = sum(map(table.buffers.__getitem__, rows))
            child.nbytes = sum(map(table.nbytes.__getitem__, rows))
        return child

    def _only_group(self, head: str) -> "TreeNode":
        """The child ``head`` holding every tensor below: this node's totals, less its own tensor's if it is one."""
        if self.entry is not None:
            return self._group(head, self._rows)
        only = TreeNode(head, self)
        only._offset = self._offset + len(head) + 1
        only._rows, only._row = self._rows, self._rows[0]
        only.params, only.buffer_values, only.nbytes, only.tensors = (self.params, self.buffer_values, self.nbytes,
                                                                      self.tensors)
        return only

    def _single_group(self) -> "TreeNode | None":
        """The only child of a group whose names all continue below one group (``block.0.*``), else None.

        Found by reading names until the first that goes elsewhere (usually the second); the child is then
        made without a split.
        """
        if self.entry is not None:
            return None
        if self._by_name is not None:
            children = self._by_name
            only = next(iter(children.values())) if len(children) == 1 else None
            return only if only is not None and only.entry is None else None
        head = self._common_next()
        if head is None:
            return None
        only = self._only_group(head)
        self._by_name, self._rows = {head: only}, None
        return only

    def _common_next(self) -> str | None:
        """The segment every name below continues with, when each goes on below it.

        One C loop (``str.startswith`` over the names, stopping at the first misfit), no Python step per
        name: 100,000 tensors under one top-level module cost a few ms here, where a split costs 0.1 s.
        """
        if not self._rows or self._shape.flat or self.depth >= MAX_DEPTH - 1:
            return None
        names, offset, rows = self._table.names, self._offset, self._rows
        first = names[rows[0]]
        dot = first.find(".", offset)
        below = names if len(rows) == len(names) else map(names.__getitem__, rows)  # the root: every name
        if dot < 0 or not all(map(str.startswith, below, repeat(first[:dot + 1]))):
            return None
        return first[offset:dot]

    def _compacted(self, child: "TreeNode") -> "TreeNode":
        """``child`` or, when it starts a chain of single-child groups, the chain's last group renamed to it."""
        if child.folded_into is not None:
            return child.folded_into
        folded = []
        shown = child
        while (inner := shown._single_group()) is not None:
            folded.append(shown)
            shown = inner
        if folded:  # the chain's name made once: folded groups keep their own segment, not a growing prefix
            shown.name = ".".join([*(node.name for node in folded), shown.name])
            shown.parent = self
            for node in folded:
                node.folded_into = shown
        return shown

    def __repr__(self) -> str:
        kind = "tensor" if self.entry is not None else "group"
        return f"<TreeNode {kind} {self.path or '<root>'}: {self.tensors} tensors>"


RUN_CHECKS = 16  # groups read as runs before the mean run length decides whether runs are worth looking for


def _run_end(names: list[str], rows: list[int], start: int, prefix: str) -> int:
    """Where the run of ``rows`` from ``start`` whose names begin with ``prefix`` ends: chunks twice as long
    each time, each tested by one C loop (``str.startswith``), so a run of n rows costs log(n) Python steps."""
    size = 4
    while start < len(rows):
        chunk = rows[start:start + size]
        fits = list(map(str.startswith, map(names.__getitem__, chunk), repeat(prefix)))
        if not all(fits):
            return start + fits.index(False)
        start, size = start + len(chunk), size * 2
    return start


def build_tree(entries: Iterable[TensorEntry], *, order: str = "natural", compact: bool = False,
               flat: bool = False) -> TreeNode:
    """The dotted-path tree of ``entries``; the root has name and path ``""``.

    One pass totals the whole store (parameters, buffers, bytes); groups split when first opened.
    """
    key, reverse = ORDERS[order]
    table = _Table(list(entries))
    root = TreeNode("", None, TreeShape(key, reverse, compact, flat), table)
    root._rows = list(range(len(table.entries))) or None
    root.tensors = len(table.entries)
    root.params, root.buffer_values, root.nbytes = sum(table.numel), sum(table.buffers), sum(table.nbytes)
    return root


def values_by_dtype(root: TreeNode) -> list[tuple[str, int]]:
    """Values (parameters and buffer values) per dtype name, most first, from the totals ``build_tree`` took.

    Equal dtypes held as distinct objects sum under one name.
    """
    named: Counter[str] = Counter()
    for dtype, count, _ in root._table.by_dtype.values():
        named[str(dtype)] += count
    return named.most_common()


def dtypes_of(root: TreeNode) -> list[Any]:
    """Every dtype object the tree's tensors hold (equal dtypes held as distinct objects each count), from the
    pass ``build_tree`` made: a view asks "any quantized tensor?" without a pass over 100,000 entries."""
    return [dtype for dtype, _, _ in root._table.by_dtype.values()]


LONE_ROW_LIMIT = 256  # a lone top row opens even past the row budget, up to this many rows in view


def first_levels(root: TreeNode, rows: int = 40) -> list[TreeNode]:
    """Groups to open so a large tree first shows its top levels: whole levels, while about ``rows`` rows fit.

    A level is opened entirely or not at all (never the first few layers of many), except that a single
    row opens past the budget (a lone ``model`` row says nothing) unless that shows over LONE_ROW_LIMIT
    rows: a view pays for every row it lays out. Counting stops as soon as a level is too big, so a
    100,000-tensor tree splits little. Runs where the tree is built (a worker).
    """
    opened: list[TreeNode] = []
    level = root.children
    shown = len(level)
    while level:
        groups = [node for node in level if node.has_children]
        added = 0
        for node in groups:
            added += len(node.children)
            if shown + added > rows and (shown > 1 or shown + added > LONE_ROW_LIMIT):
                return opened
        opened += groups
        shown += added
        level = [child for node in groups for child in node.children]
    return opened


def name_matcher(pattern: str, *, regex: bool) -> Callable[[str], bool]:
    """A case-insensitive test on tensor names: substring for text, else a search in burn-store's dialect,
    in linear time (``engine.rust_regex``: a pattern from a shared recipe, pasted in, never hangs the window).

    Raises ``rust_regex.PatternError`` for a regex that cannot be matched, so a caller can show why.
    """
    if regex:
        return rust_regex.compile(pattern, ignore_case=True).search
    needle = pattern.lower()
    return lambda name: needle in name.lower()


def filter_entries(entries: Iterable[TensorEntry], matches: Callable[[str], bool]) -> list[TensorEntry]:
    """The entries whose full name matches; build a tree of them to show a filtered view."""
    return [e for e in entries if matches(e.name)]
