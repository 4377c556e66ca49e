"""Burn records written the way Burn's recorders wrote them, without Burn.

A model's record is described once as a tree of ``Param``, ``Data`` (a bare tensor, as in
optimizer state), ``Unit`` (a constant), ``Some``/``None`` (``Option``), ``Variant`` (an enum
module), lists (``Vec``) and dicts (structs, fields in declaration order), then encoded by
serde's rules for each recorder: msgpack with field names (rmp_serde ``write_named``), JSON
(serde_json) and bincode 2 ``standard()`` (or bincode 1's fixed encoding).
"""

from __future__ import annotations

import base64
import gzip
import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

FULL, HALF = "FullPrecisionSettings", "HalfPrecisionSettings"
RECORDER = {"NamedMpk": ("NamedMpkFileRecorder", "mpk"), "NamedMpkGz": ("NamedMpkGzFileRecorder", "mpk.gz"),
            "Bin": ("BinFileRecorder", "bin"), "BinGz": ("BinGzFileRecorder", "bin.gz"),
            "PrettyJson": ("PrettyJsonFileRecorder", "json"), "JsonGz": ("JsonGzFileRecorder", "json.gz")}
DTYPES_0_14 = ["F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "Bool", "QFloat"]
DTYPES_0_16 = ["F64", "F32", "Flex32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "Bool",
               "QFloat"]
NUMPY_NAMES = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32", "int16": "I16",
               "int8": "I8", "uint8": "U8", "bool": "Bool"}


@dataclass
class Data:
    array: np.ndarray


@dataclass
class Param:
    id: str
    array: np.ndarray


@dataclass
class Variant:
    name: str
    index: int
    payload: Any


@dataclass
class Some:
    value: Any


class Unit:
    """A constant field (``usize`` config): Burn's ConstantRecord, serialized with ``serialize_none``."""


def id_text(value: int) -> str:
    """Burn's ParamId text: unpadded lowercase base32hex of the u64's little-endian bytes."""
    return base64.b32hexencode(value.to_bytes(8, "little")).decode().lower().rstrip("=")


@dataclass
class Settings:
    version: str = "0.21.0"
    half: bool = False
    recorder: str = "NamedMpk"
    fixed: bool = False  # bincode 1

    @property
    def vt(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)

    @property
    def float_type(self) -> str:
        return "half::binary16::f16" if self.half else "f32"

    @property
    def int_type(self) -> str:
        return "i16" if self.half else ("i32" if self.vt >= (0, 21) else "i64")

    def metadata(self) -> dict[str, str]:
        settings = HALF if self.half else FULL
        name = RECORDER[self.recorder][0]
        return {"float": self.float_type, "int": self.int_type,
                "format": f"burn_core::record::file::{name}<burn_core::record::settings::{settings}>",
                "version": self.version, "settings": settings}

    def stored(self, array: np.ndarray) -> np.ndarray:
        """What the precision settings turn a tensor into before it is saved."""
        if array.dtype.kind == "f":
            return array.astype("<f2" if self.half else "<f4")
        if array.dtype.kind in "iu":
            return array.astype({"i16": "<i2", "i32": "<i4", "i64": "<i8"}[self.int_type])
        return array

    def dtype_name(self, array: np.ndarray) -> Any:
        name = NUMPY_NAMES[array.dtype.name]
        if name == "Bool" and self.vt >= (0, 21):
            return {"Bool": "Native"}
        return name


# --- named formats ------------------------------------------------------------------------------

def named(node: Any, s: Settings, as_json: bool) -> Any:
    if isinstance(node, Param):
        return {"id": node.id, "param": named(Data(node.array), s, as_json)}
    if isinstance(node, Data):
        array = s.stored(node.array)
        if s.vt < (0, 14):
            flat = array.reshape(-1)
            values = flat.view("<u2").tolist() if array.dtype == np.float16 else flat.tolist()
            return {"value": values, "shape": list(array.shape)}
        raw = np.ascontiguousarray(array).tobytes()
        return {"bytes": list(raw) if as_json else raw, "shape": list(array.shape), "dtype": s.dtype_name(array)}
    if isinstance(node, Variant):
        return node.name if node.payload is Unit else {node.name: named(node.payload, s, as_json)}
    if isinstance(node, Some):
        return named(node.value, s, as_json)
    if node is Unit:
        return None
    if isinstance(node, dict):
        return {k: named(v, s, as_json) for k, v in node.items()}
    if isinstance(node, list):
        return [named(v, s, as_json) for v in node]
    return node


def record_tree(item: Any, s: Settings, as_json: bool) -> dict:
    return {"metadata": s.metadata(), "item": named(item, s, as_json), "_b": None}


# --- bincode ------------------------------------------------------------------------------------

class Bincode:
    def __init__(self, s: Settings):
        self.s = s

    def uint(self, n: int, width: int = 8) -> bytes:
        if self.s.fixed:
            return n.to_bytes(width, "little")
        if n < 251:
            return bytes([n])
        for marker, size in ((251, 2), (252, 4), (253, 8)):
            if n < 1 << (8 * size):
                return bytes([marker]) + n.to_bytes(size, "little")
        raise ValueError(n)

    def text(self, t: str) -> bytes:
        raw = t.encode()
        return self.uint(len(raw)) + raw

    def encode(self, node: Any) -> bytes:
        s = self.s
        if isinstance(node, Param):
            return self.text(node.id) + self.encode(Data(node.array))
        if isinstance(node, Data):
            array = s.stored(node.array)
            shape = b"".join(self.uint(d) for d in array.shape)
            if s.vt < (0, 14):
                if array.dtype == np.float16 and not s.fixed:  # serde writes f16 as its u16 bits
                    values = b"".join(self.uint(v, 2) for v in array.reshape(-1).view("<u2").tolist())
                elif array.dtype.kind == "i" and not s.fixed:  # varint integers are zigzag-encoded
                    values = b"".join(self.uint((v << 1) ^ (v >> 63)) for v in array.reshape(-1).tolist())
                else:
                    values = array.tobytes()
                return self.uint(array.size) + values + self.uint(array.ndim) + shape
            raw = np.ascontiguousarray(array).tobytes()
            table = DTYPES_0_16 if s.vt >= (0, 16) else DTYPES_0_14
            name = NUMPY_NAMES[array.dtype.name]
            dtype = self.uint(table.index(name), 4) + (self.uint(0, 4) if name == "Bool" and s.vt >= (0, 21) else b"")
            return self.uint(len(raw)) + raw + self.uint(array.ndim) + shape + dtype
        if isinstance(node, Variant):
            return self.uint(node.index, 4) + (b"" if node.payload is Unit else self.encode(node.payload))  # unit variant
        if isinstance(node, Some):
            return b"\x01" + self.encode(node.value)
        if node is None:
            return b"\x00"
        if node is Unit:  # Burn's ConstantRecord serializes as none: bincode's Option tag 0
            return b"\x00"
        if isinstance(node, dict):
            return b"".join(self.encode(v) for v in node.values())
        if isinstance(node, list):
            return self.uint(len(node)) + b"".join(self.encode(v) for v in node)
        if isinstance(node, bool):
            return bytes([node])
        if isinstance(node, int):
            return self.uint(node)
        if isinstance(node, float):
            return struct.pack("<d", node)
        if isinstance(node, str):
            return self.text(node)
        raise TypeError(node)

    def record(self, item: Any) -> bytes:
        meta = self.s.metadata()
        return b"".join(self.text(meta[k]) for k in ("float", "int", "format", "version", "settings")) + \
            self.encode(item)


# --- files --------------------------------------------------------------------------------------

def record_bytes(item: Any, s: Settings) -> bytes:
    base = s.recorder.removesuffix("Gz")
    if base == "NamedMpk":
        raw = msgpack.packb(record_tree(item, s, False), use_bin_type=True, use_single_float=s.vt < (0, 14))
    elif base == "Bin":
        raw = Bincode(s).record(item)
    elif s.recorder == "PrettyJson":
        raw = json.dumps(record_tree(item, s, True), indent=2).encode()
    else:
        raw = json.dumps(record_tree(item, s, True), separators=(",", ":")).encode()
    return gzip.compress(raw) if s.recorder.endswith("Gz") else raw


def json_record_with_float_at(end: int) -> bytes:
    """A JSON record whose metadata's ``"float"`` key ends at byte ``end`` (a padding field before it), to put the
    key just inside or just past the first bytes a record's kind is told by."""
    meta = Settings(recorder="PrettyJson").metadata()
    head = '{"metadata": {"pad": "'
    tail = '", "float": ' + json.dumps(meta["float"]) + "".join(
        f", {json.dumps(k)}: {json.dumps(v)}" for k, v in meta.items() if k != "float") + '}, "item": {"n": 1}}'
    raw = (head + "x" * (end - len(head) - len('", "float"')) + tail).encode()
    assert raw.index(b'"float"') + len(b'"float"') == end
    return raw


def write_record(folder: Path, stem: str, item: Any, s: Settings) -> Path:
    path = folder / f"{stem}.{RECORDER[s.recorder][1]}"
    path.write_bytes(record_bytes(item, s))
    return path


# --- the model every test saves -------------------------------------------------------------------

IDS = [10777079075451239370, 1, 2**64 - 1, 42, 987654321987654321, 7, 2**40 + 3, 5, 6, 11, 12]


def model_item(seed: int = 0, *, int_param: bool = True) -> tuple[Any, dict[str, tuple[np.ndarray, int]]]:
    """A record with nested lists, enum variants, options and constants; and name -> (array, id).

    ``int_param=False`` leaves out the int parameter, which pre-0.14 half-precision Bin records
    cannot tell from a float one."""
    rng = np.random.default_rng(seed)
    f = lambda *shape: rng.standard_normal(shape).astype("<f4")  # noqa: E731
    arrays = {
        "embed.weight": f(5, 3),
        "layers.0.linear.weight": f(3, 4), "layers.0.linear.bias": f(4),
        "layers.0.norm.gamma": f(4), "layers.0.norm.beta": f(4),
        "layers.1.linear.weight": f(4, 2), "layers.1.linear.bias": f(2),
        "layers.1.norm.gamma": f(2), "layers.1.norm.beta": f(2),
        "feature.BaseConv.weight": f(2, 1, 3),
        "steps": np.arange(-3, 3, dtype="<i8").reshape(2, 3),
    }
    ids = dict(zip(arrays, IDS))
    p = {name: Param(id_text(ids[name]), array) for name, array in arrays.items()}

    def layer(i: int) -> dict:
        return {"linear": {"weight": p[f"layers.{i}.linear.weight"], "bias": Some(p[f"layers.{i}.linear.bias"])},
                "norm": {"gamma": p[f"layers.{i}.norm.gamma"], "beta": p[f"layers.{i}.norm.beta"], "epsilon": Unit}}

    item = {
        "embed": {"weight": p["embed.weight"]},
        "layers": [layer(0), layer(1)],
        "activation": Variant("Relu", 1, Unit),
        "feature": Variant("BaseConv", 0, {"weight": p["feature.BaseConv.weight"]}),
        "hidden_size": Unit,
        "head": {"bias": None},
        **({"steps": p["steps"]} if int_param else {}),
    }
    if not int_param:
        del arrays["steps"]
    return item, {name: (array, ids[name]) for name, array in arrays.items()}
