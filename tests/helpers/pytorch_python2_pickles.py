"""Legacy checkpoints as Python 2 torch wrote them, opcode by opcode, and the check that one reads exactly as
torch's safe loader reads it."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import torch

from engine.formats import open_store

MAGIC = 0x1950A86A20F9469CFC6C


def s(text: str) -> bytes:
    """SHORT_BINSTRING: a Python 2 ``str`` (bytes) of under 256 bytes."""
    raw = text.encode("utf-8")
    return b"U" + bytes([len(raw)]) + raw


def k(n: int) -> bytes:
    """BININT1 or BININT2: a small whole number."""
    return b"K" + bytes([n]) if n < 256 else b"M" + struct.pack("<H", n)


def tup(*items: bytes) -> bytes:
    """TUPLE1/2/3 for short tuples, MARK ... TUPLE otherwise."""
    if 1 <= len(items) <= 3:
        return b"".join(items) + {1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(items)]
    return b"(" + b"".join(items) + b"t"


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def storage_pid(key: str, location: str, numel: int, storage_class: str = "FloatStorage",
                module: str = "torch") -> bytes:
    """``('storage', torch.FloatStorage, key, location, numel, None)`` then BINPERSID."""
    return b"(" + s("storage") + glob(module, storage_class) + s(key) + s(location) + k(numel) + b"N" + b"tQ"


def tensor_v2(pid: bytes, offset: int, size: tuple[int, ...], stride: tuple[int, ...]) -> bytes:
    """``_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())`` (torch 0.4)."""
    hooks = glob("collections", "OrderedDict") + b")R"
    return (glob("torch._utils", "_rebuild_tensor_v2")
            + tup(pid, k(offset), tup(*map(k, size)), tup(*map(k, stride)), b"\x89", hooks) + b"R")


def ordered_dict(pairs: list[tuple[bytes, bytes]], metadata: bool = True) -> bytes:
    """Python 2's ``OrderedDict.__reduce__``: ``(OrderedDict, ([[key, value], ...],), inst_dict)``."""
    items = b"](" + b"".join(b"](" + key + value + b"e" for key, value in pairs) + b"e"
    state = (b"}" + s("_metadata") + glob("collections", "OrderedDict") + b")R" + b"s") if metadata else b""
    return glob("collections", "OrderedDict") + items + b"\x85R" + (state + b"b" if metadata else b"")


def legacy_file(path: Path, checkpoint: bytes, storages: dict[str, np.ndarray]) -> Path:
    """The legacy layout around one checkpoint pickle, storages in the order given."""
    head = (b"\x80\x02\x8a\x0a" + MAGIC.to_bytes(10, "little") + b"."
            + b"\x80\x02" + k(1001) + b"."
            + b"\x80\x02}(" + s("protocol_version") + k(1001) + s("little_endian") + b"\x88"
            + s("type_sizes") + b"}(" + s("short") + k(2) + s("int") + k(4) + s("long") + k(4) + b"uu.")
    keys = b"\x80\x02](" + b"".join(s(key) for key in storages) + b"e."
    data = b"".join(struct.pack("<q", array.size) + array.tobytes() for array in storages.values())
    path.write_bytes(head + b"\x80\x02" + checkpoint + b"." + keys + data)
    return path


def assert_reads_as_torch(path: Path) -> None:
    """Names, dtypes, shapes and values exactly as torch's safe loader reads the same bytes."""
    expected = torch.load(path, map_location="cpu", weights_only=True)
    with open_store(path) as store:
        assert store.names == list(expected)
        for name, tensor in expected.items():
            tensor = tensor.detach()
            assert store.entry(name).dtype.numpy == tensor.numpy().dtype
            assert store.entry(name).shape == tuple(tensor.shape)
            assert store.read(name).tobytes() == tensor.contiguous().numpy().tobytes()
