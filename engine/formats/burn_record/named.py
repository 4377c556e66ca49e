"""From the decoded tree of a named record (msgpack or JSON) to tensors, values and scalars.

Tensor names are the field path joined with ``.`` (list items by index, enum variants by
name), the same path Burnpack uses for the module. A parameter is ``{id, param: TensorData}``;
optimizer state holds bare TensorData. Everything else is kept as plain values, and its numbers
(optimizer and scheduler state) also as Burnpack scalars.

An optimizer's record (``HashMap<ParamId, AdaptorRecordItem>``: each parameter's id text, then
``V1``, then ``Rank{D}``, then the optimizer's state; crates/burn-optim/src/optim/simple/record/base.rs:26-31
and v1.rs:13-40 at v0.21.0, crates/burn-core/src/record/primitive.rs:121-134 for the id keys) comes out
in the layout current Burn loads (``ModuleOptimizer::to_record``/``load_record``,
crates/burn-optim/src/optim/module/module_optimizer.rs:199-300 at main): tensors named
``{param_id}.{field path}`` carrying that ``param_id``, the rank as the scalar ``{param_id}.__rank``
(:24, :213-216) and the state's numbers as scalars of the same names, ``usize`` fields as ``UInt``
(crates/burn-pack/src/base.rs, ``impl_scalar_int``). The state's field paths are unchanged between
v0.21.0 and main (adam.rs, adamw.rs, sgd.rs, momentum.rs, adagrad.rs, rmsprop.rs, adan.rs).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import msgspec

from ...errors import FormatError
from .record import MAX_DEPTH, Metadata, Tensor, check_size, dtype_by_name, param_id, shape_of, values_array

RANK_KEY = "__rank"  # module_optimizer.rs:24 at main: the per-parameter scalar holding the state's rank
_RANK = re.compile(r"Rank([0-9])")

ROOT_NAME = "item"
_TENSORS_ONLY = object()  # a branch that held only tensors: no place in `values`


class Blob(msgspec.Struct, frozen=True):  # msgspec Structs, as in record.py
    """A byte string left in the file: ``length`` bytes at ``offset``."""

    offset: int
    length: int


class Walked(msgspec.Struct):
    tensors: list[Tensor]
    values: Any
    scalars: dict[str, Any]


def walk(path: Path, item: Any, meta: Metadata) -> Walked:
    walker = _Walker(path, meta)
    states = optimizer_states(item)
    values = walker.walk(item, [], 0) if states is None else walker.walk_optimizer(states)
    return Walked(walker.tensors, {} if values is _TENSORS_ONLY else values, walker.scalars)


def optimizer_states(item: Any) -> list[tuple[int, int, Any]] | None:
    """``(param_id, rank, state)`` per parameter when ``item`` is an optimizer's record, else None.

    Every key must be a ParamId Burn writes (13 base32hex characters; an old UUID id has no u64 Burn
    would agree on, so such a record keeps its field paths) and every value ``{"V1": {"Rank{D}": ...}}``
    (``{"Rank{D}": ...}`` is taken too).
    """
    if not isinstance(item, dict) or not item:
        return None
    states = []
    for key, record in item.items():
        pid = param_id(key) if isinstance(key, str) else None
        if isinstance(record, dict) and set(record) == {"V1"}:
            record = record["V1"]
        if pid is None or not isinstance(record, dict) or len(record) != 1:
            return None
        (variant, state), = record.items()
        rank = _RANK.fullmatch(variant) if isinstance(variant, str) else None
        if rank is None:
            return None
        states.append((pid, int(rank.group(1)), state))
    return states


class _Walker:
    def __init__(self, path: Path, meta: Metadata):
        self.path, self.meta = path, meta
        self.tensors: list[Tensor] = []
        self.scalars: dict[str, Any] = {}
        self.owner: int | None = None  # the parameter whose optimizer state is being walked

    def walk_optimizer(self, states: list[tuple[int, int, Any]]) -> dict[str, Any]:
        """Each parameter's state under ``{param_id}.``, its tensors carrying that id, its rank a scalar."""
        values = {}
        for pid, rank, state in states:
            self.owner = pid
            self.scalars[f"{pid}.{RANK_KEY}"] = {"UInt": rank}
            found = self.walk(state, [str(pid)], 1)
            values[str(pid)] = {RANK_KEY: rank} if found is _TENSORS_ONLY else {RANK_KEY: rank, **found}
        self.owner = None
        return values

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
            return [f"<tensor {'.'.join(parts + [str(i)])}>" if v is _TENSORS_ONLY else v  # the tensor's own name
                    for i, v in enumerate(children)]
        if isinstance(node, Blob):
            return f"<{node.length} bytes>"
        if isinstance(node, (bytes, bytearray)):
            return bytes(node).hex()
        if isinstance(node, (int, float)) and not isinstance(node, bool):
            unsigned = self.owner is not None and not isinstance(node, float) and node >= 0  # the states' usize fields
            kind = "Float" if isinstance(node, float) else ("Int" if node < 1 << 63 and not unsigned else "UInt")
            if kind == "Float" or -(1 << 63) <= node < 1 << 64:
                self.scalars[name] = {kind: node}
        return node

    def tensor(self, name: str, data: dict, id_text: str | None) -> Tensor:
        where = f"tensor {name!r}"
        shape = shape_of(self.path, where, data["shape"])
        ids = {} if id_text is None else {"id_text": id_text, "param_id": param_id(id_text)}
        if id_text is None and self.owner is not None:
            ids = {"param_id": self.owner}
        if "value" in data:  # before Burn 0.14: numbers, typed by the precision settings
            dtype = self.meta.element_type(self.path, _value_kind(data["value"], self.meta))
            array = values_array(self.path, where, data["value"], dtype, shape)
            return Tensor(name, dtype, shape, array.nbytes, array=array, **ids)
        dtype = dtype_by_name(self.path, where, data["dtype"])
        raw = data["bytes"]
        if isinstance(raw, Blob):
            check_size(self.path, where, dtype, shape, raw.length)
            return Tensor(name, dtype, shape, raw.length, offset=raw.offset, **ids)
        import numpy as np  # bytes held in the record's structure, not in the file: kept as an array
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
