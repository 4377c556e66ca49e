"""From an unpickled checkpoint to tensor names and plain values.

Tensors are named by their dotted path (``model_state_dict.fc1.weight``; list and tuple
items by index, like ``nn.ModuleList`` keys). Everything else is kept as JSON-able values
mirroring the checkpoint: the training config, epoch counters, optimizer hyper-parameters.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ...errors import FormatError
from .allowlist import Global, NumpyArray, NumpyDType
from .tensors import StorageRef, TensorRef
from .unpickler import MAX_DEPTH

# Shared references (the pickle memo) can make a small pickle expand exponentially when walked:
# the expanded size is computed first, in linear time.
MAX_NODES = 5_000_000
# ... and the walk's budget grows with the file: a few KB of pickle cannot claim millions of tensors.
MIN_NODES = 100_000
BYTES_PER_NODE = 8


def node_budget(file_size: int) -> int:
    """How many objects (tensors, container items) walking a checkpoint of ``file_size`` bytes may visit."""
    return min(MAX_NODES, max(MIN_NODES, file_size // BYTES_PER_NODE))
ROOT_NAME = "tensor"  # the name of a checkpoint that is one bare tensor

_CONTAINERS = (dict, list, tuple, set, frozenset)
_TENSORS_ONLY = object()  # a branch that held tensors and nothing else: no place in `values`


@dataclass
class Checkpoint:
    tensors: list[tuple[str, TensorRef]] = field(default_factory=list)
    values: Any = None


def flatten(path: str | os.PathLike, root: Any, top_level_key: str | None = None, *,
            max_nodes: int = MAX_NODES) -> Checkpoint:
    if top_level_key is not None:
        root = select(path, root, top_level_key)
    expanded = _expanded_size(root, {}, 0)
    if expanded > max_nodes:
        raise FormatError(path, f"the checkpoint expands to {expanded} objects (the same objects referenced over and "
                                f"over), over the limit of {max_nodes} for a file of its size")
    walker = _Walker(path)
    values = walker.walk(root, [], 0)
    walker.checkpoint.values = {} if values is _TENSORS_ONLY else values
    return walker.checkpoint


def select(path: str | os.PathLike, root: Any, key: str) -> Any:
    """The branch at ``key``: a top-level key, or a dotted path into nested dicts."""
    if not isinstance(root, dict):
        raise FormatError(path, f"top-level key {key!r} needs a checkpoint that is a dict, not a "
                                f"{type(root).__name__}")
    for candidate in (key, *([int(key)] if key.lstrip("-").isdigit() else [])):
        if candidate in root:
            return root[candidate]
    node: Any = root
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            keys = ", ".join(repr(str(k)) for k in list(root)[:50]) or "none"
            raise FormatError(path, f"has no top-level key {key!r}; its top-level keys are: {keys}")
        node = node[part]
    return node


class _Walker:
    def __init__(self, path: str | os.PathLike):
        self.path = path
        self.checkpoint = Checkpoint()
        self.active: set[int] = set()  # containers on the current path, to catch cycles

    def walk(self, node: Any, parts: list[str], depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise FormatError(self.path, f"the checkpoint is nested deeper than {MAX_DEPTH} levels")
        found = self.as_tensor(node)
        if found is not None:
            self.checkpoint.tensors.append((".".join(parts) or ROOT_NAME, found))
            return _TENSORS_ONLY
        if isinstance(node, _CONTAINERS):
            if id(node) in self.active:
                raise FormatError(self.path, f"the checkpoint contains itself at {'.'.join(parts) or 'its root'}")
            self.active.add(id(node))
            try:
                return self.container(node, parts, depth)
            finally:
                self.active.discard(id(node))
        return _leaf(node)

    def container(self, node: Any, parts: list[str], depth: int) -> Any:
        items = [(str(k), v) for k, v in node.items()] if isinstance(node, dict) else \
            [(str(i), v) for i, v in enumerate(node)]
        children = [(key, self.walk(value, parts + [key], depth + 1)) for key, value in items]
        if children and all(value is _TENSORS_ONLY for _, value in children):
            return _TENSORS_ONLY
        if isinstance(node, dict):
            return {key: value for key, value in children if value is not _TENSORS_ONLY}
        # Keep list positions meaningful: a tensor among other values shows where it went.
        return [f"<tensor {'.'.join(parts + [key])}>" if value is _TENSORS_ONLY else value
                for key, value in children]

    def as_tensor(self, node: Any) -> TensorRef | None:
        if isinstance(node, TensorRef):
            return node
        if isinstance(node, NumpyArray):
            if node.tensor is None:
                raise FormatError(self.path, "a numpy array in the checkpoint has no data")
            return node.tensor
        if isinstance(node, StorageRef):  # a bare storage: show it as the 1-D tensor it holds
            itemsize = node.dtype.itemsize or 1
            return TensorRef(node, node.dtype, 0, (node.nbytes // itemsize,), (1,))
        return None


def _expanded_size(node: Any, sizes: dict[int, int], depth: int) -> int:
    """How many nodes walking ``node`` visits, counted in time linear in the distinct objects."""
    if not isinstance(node, _CONTAINERS) or depth > MAX_DEPTH:
        return 1
    if id(node) in sizes:
        return sizes[id(node)]
    sizes[id(node)] = 1  # while in progress: a cycle counts once here, the walk reports it
    children = node.values() if isinstance(node, dict) else node
    sizes[id(node)] = 1 + sum(_expanded_size(child, sizes, depth + 1) for child in children)
    return sizes[id(node)]


def _leaf(node: Any) -> Any:
    """A JSON-able stand-in for one non-tensor value."""
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, complex):
        return [node.real, node.imag]
    if isinstance(node, (bytes, bytearray)):
        return bytes(node).hex()
    if isinstance(node, slice):
        return [_leaf(node.start), _leaf(node.stop), _leaf(node.step)]
    if isinstance(node, Global):
        return node.qualname
    if isinstance(node, NumpyDType):
        return str(node.numpy)
    return repr(node)
