"""From an unpickled checkpoint to tensor names and plain values.

Tensors are named by their dotted path (``model_state_dict.fc1.weight``; list and tuple
items by index, like ``nn.ModuleList`` keys; integer keys in decimal, as burn-store names them).
A whole pickled ``nn.Module`` contributes its ``state_dict()`` names. Everything else is kept as
JSON-able values mirroring the checkpoint: the training config, epoch counters, optimizer
hyper-parameters, and each object of an unknown class as ``{"__class__": path, **its state}``.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from ...errors import FormatError
from ...humanize import with_article
from .allowlist import Global, NumpyArray, NumpyDType, Placeholder
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
_WALKED = (*_CONTAINERS, Placeholder)  # what the walk descends into
_TENSORS_ONLY = object()  # a branch that held tensors and nothing else: no place in `values`


class Checkpoint(msgspec.Struct):  # not a dataclass: see tensors.py
    tensors: list[tuple[str, TensorRef]] = msgspec.field(default_factory=list)
    values: Any = None
    # Keys that are neither text nor whole numbers (tuples, floats, booleans) that name tensors: burn-store
    # refuses them (Burn main 2c06be35, crates/burn-store/src/pytorch/pickle_reader.rs:1259-1267, get_dict_key,
    # which names int keys in decimal as here); here they read as str(key) and the store's note says so.
    guessed_keys: list[str] = msgspec.field(default_factory=list)


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
        self.listing = True  # False inside a module's plain attributes: tensors there are not in its state_dict

    def walk(self, node: Any, parts: list[str], depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise FormatError(self.path, f"the checkpoint is nested deeper than {MAX_DEPTH} levels")
        found = self.as_tensor(node)
        if found is not None:
            if not self.listing:
                return f"<tensor {'.'.join(parts)}, not in the module's state_dict>"
            self.checkpoint.tensors.append((".".join(parts) or ROOT_NAME, found))
            return _TENSORS_ONLY
        if isinstance(node, _WALKED):
            if id(node) in self.active:
                raise FormatError(self.path, f"the checkpoint contains itself at {'.'.join(parts) or 'its root'}")
            self.active.add(id(node))
            try:
                if isinstance(node, Placeholder):
                    return self.module(node, parts, depth) if node.is_module else self.placeholder(node, parts, depth)
                return self.container(node, parts, depth)
            finally:
                self.active.discard(id(node))
        return _leaf(node)

    def guessed_children(self, node: dict, parts: list[str], depth: int) -> list[tuple[str, Any]]:
        """Walk a dict with keys burn-store refuses, recording those under which tensors were named."""
        children = []
        for key, value in node.items():
            before = len(self.checkpoint.tensors)
            children.append((str(key), self.walk(value, parts + [str(key)], depth + 1)))
            if type(key) not in (str, int) and len(self.checkpoint.tensors) > before:
                self.checkpoint.guessed_keys.append(".".join(parts + [str(key)]))
        return children

    def placeholder(self, node: Placeholder, parts: list[str], depth: int) -> dict[str, Any]:
        """An unknown class's object: its class path, then its state as the values tree shows it."""
        values = self.container(_fields(node), parts, depth)
        found = {} if values is _TENSORS_ONLY else values
        return {"__class__": node.qualname, **{key: value for key, value in found.items() if key != "__class__"}}

    def module(self, node: Placeholder, parts: list[str], depth: int) -> dict[str, Any]:
        """``model.state_dict()`` of a pickled module: its parameters, its persistent buffers, then each
        child's, in table order (torch/nn/modules/module.py, ``_save_to_state_dict`` and ``state_dict``)."""
        attributes = node.attributes()
        transient = attributes.get("_non_persistent_buffers_set")
        transient = set(transient) if isinstance(transient, (set, frozenset, list)) else set()
        for table, skip in (("_parameters", set()), ("_buffers", transient)):
            for key, value in attributes[table].items():
                if value is None or key in skip:
                    continue
                found = self.as_tensor(value)
                if found is None:
                    raise FormatError(self.path, f"{table[1:-1]} {'.'.join(parts + [str(key)])} of module "
                                                 f"{node.qualname} is {with_article(type(value).__name__)}, not a tensor")
                if self.listing:
                    self.checkpoint.tensors.append((".".join(parts + [str(key)]), found))
        values: dict[str, Any] = {"__class__": node.qualname}
        listing, self.listing = self.listing, False
        try:
            for key, value in attributes.items():
                if isinstance(key, str) and not key.startswith("_"):
                    values[key] = _shown(self.walk(value, parts + [key], depth + 1))
        finally:
            self.listing = listing
        for key, child in attributes["_modules"].items():
            if child is not None:
                values[str(key)] = _shown(self.walk(child, parts + [str(key)], depth + 1))
        return values

    def container(self, node: Any, parts: list[str], depth: int) -> Any:
        items = [(str(k), v) for k, v in node.items()] if isinstance(node, dict) else \
            [(str(i), v) for i, v in enumerate(node)]
        if isinstance(node, dict) and not all(type(k) in (str, int) for k in node):
            children = self.guessed_children(node, parts, depth)
        else:
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


def _fields(node: Placeholder) -> dict[str, Any]:
    """A placeholder's state as one dict: attributes by name, then what else it received."""
    attributes = node.attributes()
    fields: dict[str, Any] = {str(key): value for key, value in attributes.items()}
    if node.args:
        fields["__args__"] = list(node.args)
    if node.state is not None and not attributes and not isinstance(node.state, dict):
        fields["__state__"] = node.state
    if node.items is not None:
        fields["__items__"] = node.items
    if node.listitems is not None:
        fields["__list__"] = node.listitems
    return fields


def _shown(value: Any) -> Any:
    return {} if value is _TENSORS_ONLY else value


def _children(node: Any) -> Any:
    if isinstance(node, dict):
        return node.values()
    if isinstance(node, Placeholder):
        return [*node.args, node.state, *(node.items or {}).values(), *(node.listitems or ())]
    return node


def _expanded_size(node: Any, sizes: dict[int, int], depth: int) -> int:
    """How many nodes walking ``node`` visits, counted in time linear in the distinct objects."""
    if not isinstance(node, _WALKED) or depth > MAX_DEPTH:
        return 1
    if id(node) in sizes:
        return sizes[id(node)]
    sizes[id(node)] = 1  # while in progress: a cycle counts once here, the walk reports it
    children = _children(node)
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
