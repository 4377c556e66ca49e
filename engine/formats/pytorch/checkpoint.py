"""From an unpickled checkpoint to tensor names and plain values.

Tensors are named by their dotted path (``model_state_dict.fc1.weight``; list and tuple
items by index, like ``nn.ModuleList`` keys; integer keys in decimal, as burn-store names them).
A whole pickled ``nn.Module`` contributes its ``state_dict()`` names. Everything else is kept as
JSON-able values mirroring the checkpoint: the training config, epoch counters, optimizer
hyper-parameters, and each object of an unknown class as ``{"__class__": path, **its state}``, but an
OmegaConf config as its plain values. A pointer back to a container that holds it (a loop) is
``{"$ref": "dotted.path"}`` of that container, never followed.
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

# Shared references (the pickle memo) and loops can make a small pickle expand exponentially when walked:
# the walk counts every object it visits and stops past the budget.
MAX_NODES = 5_000_000
# ... and the walk's budget grows with the file: a few KB of pickle cannot claim millions of tensors.
MIN_NODES = 100_000
BYTES_PER_NODE = 8


def node_budget(file_size: int) -> int:
    """How many objects (tensors, container items) walking a checkpoint of ``file_size`` bytes may visit."""
    return min(MAX_NODES, max(MIN_NODES, file_size // BYTES_PER_NODE))
ROOT_NAME = "tensor"  # the name of a checkpoint that is one bare tensor

_WALKED = {dict, list, tuple, set, frozenset, Placeholder}  # what the walk descends into (the unpickler's exact types)
_TENSORS_ONLY = object()  # a branch that held tensors and nothing else: no place in `values`
_NOT_OMEGACONF = object()  # what ``omegaconf_content`` finds in an object that is not an OmegaConf node
_SCALARS = {str, int, float, bool, type(None)}  # values that show as themselves
_TEXT = {str}
_TEXT_OR_WHOLE = {str, int}  # keys that name tensors as burn-store names them
REFERENCE = "$ref"  # a loop's pointer back to a container shows as {"$ref": "where.it.is"} ("" for the root)
OMEGACONF = "omegaconf."  # the package whose DictConfig, ListConfig and nodes read as their values


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
    walker = _Walker(path, max_nodes)
    walker.count(1)  # the root; every other object is counted by the container that holds it
    values = walker.walk(root, 0)
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
    """One walk over what the unpickler built: tensors named by the path that reaches them, the rest kept as values.

    An object the pickle shares is walked once for each path to it, as torch's names would count it; ``visits``
    bounds that, so sharing cannot make a small file walk millions of objects. An object that points back to one
    of its own containers (OmegaConf's ``_parent``, any back-reference) is a loop torch loads as it is: the
    pointer shows as ``{"$ref": "dotted.path"}`` of that container and is never followed for names. A loop around
    a tensor (its names would never end) or around a module (its state_dict would never end) is refused."""

    def __init__(self, path: str | os.PathLike, max_nodes: int):
        self.path = path
        self.max_nodes = max_nodes
        self.visits = 0
        self.checkpoint = Checkpoint()
        self.parts: list[str] = []  # the path of the object being walked
        self.active: dict[int, int] = {}  # each container on that path -> how many parts name it
        self.looped: dict[int, str] = {}  # each active container something points back to -> where the first does
        self.tensors_met = 0  # tensors walked so far, listed or not: a loop around one is refused
        self.listing = True  # False inside a module's plain attributes: tensors there are not in its state_dict

    def count(self, visits: int) -> None:
        """Objects about to be walked (a container's items, counted as it is entered), against the budget."""
        self.visits += visits
        if self.visits > self.max_nodes:
            raise FormatError(self.path, f"the checkpoint expands to {self.visits} objects or more (the same objects "
                                         f"referenced over and over), over the limit of {self.max_nodes} for a file "
                                         "of its size")

    def walk(self, node: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise FormatError(self.path, f"the checkpoint is nested deeper than {MAX_DEPTH} levels")
        kind = type(node)
        if kind in _SCALARS:
            return node
        if kind not in _WALKED:
            found = self.as_tensor(node)
            return _leaf(node) if found is None else self.tensor(found)
        key = id(node)
        if key in self.active:
            return self.back_reference(node)
        self.active[key] = len(self.parts)
        met = self.tensors_met
        if kind is dict:
            value = self.mapping(node, depth)
        elif kind is not Placeholder:
            value = self.sequence(node, depth)
        elif node.is_module:
            value = self.module(node, depth)
        else:
            value = self.placeholder(node, depth)
        del self.active[key]
        at = self.looped.pop(key, None)
        if at is not None and self.tensors_met > met:
            raise FormatError(self.path, f"the checkpoint contains itself at {at}: the tensors inside that loop would "
                                         "have names without end")
        return value

    def child(self, key: str, node: Any, depth: int) -> Any:
        """``node`` walked as the item ``key`` of the object at ``depth``."""
        self.parts.append(key)
        value = self.walk(node, depth + 1)
        self.parts.pop()  # a refusal ends the whole walk, so only a finished child needs its part back
        return value

    def tensor(self, found: TensorRef) -> Any:
        """A tensor where the walk is: listed under that name, or (in a module's plain attributes) a value."""
        self.tensors_met += 1
        if not self.listing:
            return f"<tensor {'.'.join(self.parts)}, not in the module's state_dict>"
        self.checkpoint.tensors.append((".".join(self.parts) or ROOT_NAME, found))
        return _TENSORS_ONLY

    def back_reference(self, node: Any) -> dict[str, str]:
        """A pointer to a container the walk is inside: shown as where that container is, never followed."""
        at = ".".join(self.parts) or "its root"
        if type(node) is Placeholder and node.is_module:
            raise FormatError(self.path, f"the checkpoint contains itself at {at}")
        self.looped.setdefault(id(node), at)
        return {REFERENCE: ".".join(self.parts[:self.active[id(node)]])}

    def mapping(self, node: dict, depth: int) -> Any:
        """A dict's values tree: keys as text (a whole number in decimal, other keys as Python prints them, noted
        when they name tensors), a branch that holds only tensors left out."""
        self.count(len(node))
        if depth < MAX_DEPTH and _TEXT.issuperset(map(type, node)):  # its plain values need no walk one level down
            # A config's tables (most of a big pickle): the plain values as they are, in C-level passes; only
            # what holds more is walked (the benchmark's config-heavy rows).
            nested = [key for key, value in node.items() if type(value) not in _SCALARS]
            if not nested:
                return node
            shown = dict(node)
            for key in nested:
                value = self.child(key, node[key], depth)
                if value is _TENSORS_ONLY:
                    del shown[key]
                else:
                    shown[key] = value
            return shown if shown else _TENSORS_ONLY
        guessed = not _TEXT_OR_WHOLE.issuperset(map(type, node))
        tensors, shown, tensors_only = self.checkpoint.tensors, {}, bool(node)
        for key, value in node.items():
            name = str(key)
            before = len(tensors)
            value = self.child(name, value, depth)
            if guessed and type(key) not in _TEXT_OR_WHOLE and len(tensors) > before:
                self.checkpoint.guessed_keys.append(".".join([*self.parts, name]))
            if value is not _TENSORS_ONLY:
                shown[name], tensors_only = value, False
        return _TENSORS_ONLY if tensors_only else shown

    def sequence(self, node: list | tuple | set | frozenset, depth: int) -> Any:
        """A list, tuple or set as a list; a tensor among other values shows where it went."""
        self.count(len(node))
        leaves = depth < MAX_DEPTH
        if leaves and _SCALARS.issuperset(map(type, node)):
            return node if type(node) is list else list(node)
        shown, tensors_only = [], bool(node)
        for i, value in enumerate(node):
            if leaves and type(value) in _SCALARS:
                shown.append(value)
                tensors_only = False
                continue
            value = self.child(str(i), value, depth)
            if value is _TENSORS_ONLY:
                value = f"<tensor {'.'.join([*self.parts, str(i)])}>"
            else:
                tensors_only = False
            shown.append(value)
        return _TENSORS_ONLY if tensors_only else shown

    def placeholder(self, node: Placeholder, depth: int) -> Any:
        """An unknown class's object: its class path, then its state as the values tree shows it. An OmegaConf
        node is its value instead, as ``OmegaConf.to_container(resolve=False)`` gives it."""
        content = omegaconf_content(node)
        if content is not _NOT_OMEGACONF:
            self.count(1)
            return self.walk(content, depth + 1)
        values = self.mapping(_fields(node), depth)
        found = {} if values is _TENSORS_ONLY else values
        return {"__class__": node.qualname, **{key: value for key, value in found.items() if key != "__class__"}}

    def module(self, node: Placeholder, depth: int) -> dict[str, Any]:
        """``model.state_dict()`` of a pickled module: its parameters, its persistent buffers, then each
        child's, in table order (torch/nn/modules/module.py, ``_save_to_state_dict`` and ``state_dict``)."""
        attributes = node.attributes()
        transient = attributes.get("_non_persistent_buffers_set")
        transient = set(transient) if isinstance(transient, (set, frozenset, list)) else set()
        for table, skip in (("_parameters", set()), ("_buffers", transient)):
            for key, value in attributes[table].items():
                if value is None or key in skip:
                    continue
                name = ".".join([*self.parts, str(key)])
                found = self.as_tensor(value)
                if found is None:
                    raise FormatError(self.path, f"{table[1:-1]} {name} of module {node.qualname} is "
                                                 f"{with_article(type(value).__name__)}, not a tensor")
                self.tensors_met += 1
                if self.listing:
                    self.checkpoint.tensors.append((name, found))
        values: dict[str, Any] = {"__class__": node.qualname}
        listing, self.listing = self.listing, False
        for key, value in attributes.items():
            if isinstance(key, str) and not key.startswith("_"):
                self.count(1)
                values[key] = _shown(self.child(key, value, depth))
        self.listing = listing
        for key, child in attributes["_modules"].items():
            if child is not None:
                self.count(1)
                values[str(key)] = _shown(self.child(str(key), child, depth))
        return values

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


def omegaconf_content(node: Placeholder) -> Any:
    """An OmegaConf node's value, read from what omegaconf pickles (``__getstate__`` of omegaconf/base.py and
    basecontainer.py: the object's ``__dict__`` less its flags cache): a DictConfig's or ListConfig's
    ``_content`` (a dict or list of nodes; or None, ``"???"`` or an interpolation, kept as written) and a value
    node's ``_val``. ``_metadata`` and ``_parent`` (a pointer back to the container) are left out, as
    ``OmegaConf.to_container`` leaves them. ``_NOT_OMEGACONF`` for any other object."""
    if not node.qualname.startswith(OMEGACONF):
        return _NOT_OMEGACONF
    attributes = node.attributes()
    for key in ("_content", "_val"):
        if key in attributes:
            return attributes[key]
    return _NOT_OMEGACONF


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
