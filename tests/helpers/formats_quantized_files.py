"""Burnpack files with quantized and bool tensors, laid out as Burn writes them, for tests of quantized tensors."""

from __future__ import annotations

import struct

import cbor2
import numpy as np


def block(*dims: int) -> dict:
    """serde's BlockSize: ``{storage: [u8; 5], len}`` (cubecl-common 0.10.0 quant/scheme.rs:251-256)."""
    return {"storage": [*dims, *(1,) * (5 - len(dims))], "len": len(dims)}


def gen1(value: str = "Q8S", *, param: str = "F32", store=None, level="Tensor") -> dict:
    return {"value": value, "param": param, "store": store or {"PackedU32": 0}, "level": level, "mode": "Symmetric"}


def gen2(value: str = "Q8S", *, store=None, tensor="default", blocks=None, block_dtype="F32") -> dict:
    """A generation 2 scheme: per tensor, per block, or two-level when both ``tensor`` and ``blocks`` are given."""
    tensor = ("F32" if blocks is None else None) if tensor == "default" else tensor
    return {"value": value, "store": store or {"PackedU32": 0}, "mode": "Symmetric", "tensor": tensor,
            "block": None if blocks is None else {"size": block(*blocks), "dtype": block_dtype}}


def bpk(tensors: dict[str, tuple[dict | str, list[int], bytes]]) -> bytes:
    """A Burnpack file as Burn lays it out: each tensor's bytes at a 256-aligned offset."""
    descs, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        data += bytes(-len(data) % 256)
        descs[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    meta = cbor2.dumps({"tensors": descs})
    head = b"NRUB" + struct.pack("<HI", 1, len(meta)) + meta
    return head + bytes(-len(head) % 256) + data


def write(tmp_path, tensors, name="q.bpk"):
    path = tmp_path / name
    path.write_bytes(bpk(tensors))
    return path


def i8(*values: int) -> bytes:
    return np.array(values, np.int8).tobytes()


def f32(*values: float) -> bytes:
    return np.array(values, "<f4").tobytes()


def read_meta(path) -> dict:
    raw = path.read_bytes()
    return cbor2.loads(raw[10:10 + struct.unpack("<I", raw[6:10])[0]])
