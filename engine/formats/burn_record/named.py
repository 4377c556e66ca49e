"""From the decoded tree of a named record (msgpack or JSON) to tensors, values and scalars.

Tensor names are the field path joined with ``.`` (list items by index, enum variants by
name), the same path Burnpack uses for the module. A parameter is ``{id, param: TensorData}``;
optimizer state holds bare TensorData. Everything else is kept as plain values, and its numbers
(optimizer and scheduler state) also as Burnpack scalars.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import FormatError
from .record import MAX_DEPTH, Metadata, Tensor, check_size, dtype_by_name, param_id, shape_of, \
    values_array

ROOT_NAME = "item"
_TENSORS_ONLY = object()  # a branch that held only tensors: no place in `values`


@dataclass(frozen=True)
class Blob:
    """A byte string left in the file: ``length`` bytes at ``offset``."""

    offset: int
    length: int


@dataclass
class Walked:
    tensors: list[Tensor]
    values: Any
    scalars: dict[str, Any]


def walk(path: Path, item: Any, meta: Metadata) -> Walked:
    walker = _Walker(path, meta)
    values = walker.walk(item, [], 0)
    return Walked(walker.tensors, {} if values is _TENSORS_ONLY else values, walker.scalars)


class _Walker:
    def __init__(self, path: Path, meta: Metadata):
        self.path, self.meta = path, meta
        self.tensors: list[Tensor] = []
        self.scalars: dict[str, Any] = {}

    def walk(self, node: Any, parts: list[str], depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise FormatError(self.path, f"the record is nested deeper than {MAX_DEPTH} levels at "
                                         f"{'.'.join(parts[:8])}...")
        name = ".".join(parts) or ROOT_NAME
        if isinstance(node, dict):
            if _is_param(node):
                self.tensors.append(self.tensor(name, node["param"], node["id"]))
                return _TENSORS_ONLY
            if _is_tensor_data(node):
                self.tensors.append(self.tensor(name, node, None))
                return _TENSORS_ONLY
            children = [(str(k), self.walk(v, parts + [str(k)], depth + 1)) for k, v in node.items()]
            if children and all(v is _TENSORS_ONLY for _, v in children):
                return _TENSORS_ONLY
            return {k: v for k, v in children if v is not _TENSORS_ONLY}
        if isinstance(node, list):
            children = [self.walk(v, parts + [str(i)], depth + 1) for i, v in enumerate(node)]
            if children and all(v is _TENSORS_ONLY for v in children):
                return _TENSORS_ONLY
            return [f"<tensor {name}.{i}>" if v is _TENSORS_ONLY else v for i, v in enumerate(children)]
        if isinstance(node, Blob):
            return f"<{node.length} bytes>"
        if isinstance(node, (bytes, bytearray)):
            return bytes(node).hex()
        if isinstance(node, (int, float)) and not isinstance(node, bool):
            kind = "Float" if isinstance(node, float) else ("Int" if node < 1 << 63 else "UInt")
            if kind == "Float" or -(1 << 63) <= node < 1 << 64:
                self.scalars[name] = {kind: node}
        return node

    def tensor(self, name: str, data: dict, id_text: str | None) -> Tensor:
        where = f"tensor {name!r}"
        shape = shape_of(self.path, where, data["shape"])
        ids = {} if id_text is None else {"id_text": id_text, "param_id": param_id(id_text)}
        if "value" in data:  # before Burn 0.14: numbers, typed by the precision settings
            dtype = self.meta.element_type(self.path, _value_kind(data["value"], self.meta))
            array = values_array(self.path, where, data["value"], dtype, shape)
            return Tensor(name, dtype, shape, array.nbytes, array=array, **ids)
        dtype = dtype_by_name(self.path, where, data["dtype"])
        raw = data["bytes"]
        if isinstance(raw, Blob):
            check_size(self.path, where, dtype, shape, raw.length)
            return Tensor(name, dtype, shape, raw.length, offset=raw.offset, **ids)
        raw = _as_bytes(self.path, where, raw)
        check_size(self.path, where, dtype, shape, len(raw))
        array = None
        if dtype.numpy is not None:
            count = math.prod(shape)
            array = np.frombuffer(raw, dtype.numpy, count).reshape(shape) if count else np.zeros(shape, dtype.numpy)
            if dtype.name == "BOOL" and dtype.numpy != np.bool_:
                array = array != 0
        else:  # quantized: the bytes as they are, never decoded
            array = np.frombuffer(raw, np.uint8)
        return Tensor(name, dtype, shape, len(raw), array=array, **ids)


def _is_param(node: dict) -> bool:
    return set(node) == {"id", "param"} and isinstance(node["id"], str) and isinstance(node["param"], dict) \
        and _is_tensor_data(node["param"])


def _is_tensor_data(node: dict) -> bool:
    keys = set(node)
    return keys == {"bytes", "shape", "dtype"} or keys == {"value", "shape"}


def _value_kind(values: Any, meta: Metadata) -> str:
    """Old layouts do not say float or int. Floats are written as floats, except half floats,
    which serde writes as their 16-bit patterns: then only numbers no pattern can be (negative,
    or over 16 bits) mark an int tensor, and the far commoner float is assumed otherwise."""
    if not isinstance(values, list) or not values or any(isinstance(v, float) for v in values):
        return "float"
    if not meta.float.startswith("half::"):
        return "int"
    return "int" if any(type(v) is int and not 0 <= v < 1 << 16 for v in values) else "float"


def _as_bytes(path: Path, where: str, raw: Any) -> bytes:
    """JSON writes byte strings as lists of numbers."""
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw)
    if isinstance(raw, list) and all(type(b) is int and 0 <= b < 256 for b in raw):
        return bytes(raw)
    raise FormatError(path, f"{where}: 'bytes' is not a byte string")
