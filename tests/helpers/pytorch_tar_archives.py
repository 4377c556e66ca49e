"""Checkpoints in torch's oldest (tar) layout, built member by member: storages, tensors and the pickle naming them."""

from __future__ import annotations

import io
import pickle
import struct
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tests.helpers.pytorch_checkpoints import write_tar

FLOATS = np.arange(8, dtype="<f4")


class Ref:
    """A tensor key as the main pickle refers to it (a persistent id)."""

    def __init__(self, key: Any):
        self.key = key


def dump(*objs: Any, refs: bool = False) -> bytes:
    out = io.BytesIO()
    for obj in objs:
        pickler = pickle.Pickler(out, protocol=2)
        if refs:
            pickler.persistent_id = lambda o: o.key if isinstance(o, Ref) else None  # type: ignore[method-assign]
        pickler.dump(obj)
    return out.getvalue()


def storages(records: list[tuple] | None = None, views: Any = (), *, count: int | None = None,
             big: bool = False) -> bytes:
    """``(key, location, class, element count, data)`` records, then the views list."""
    records = [("1", "cpu", torch.FloatStorage, 8, (FLOATS.astype(">f4") if big else FLOATS).tobytes())] \
        if records is None else records
    body = dump(len(records) if count is None else count)
    for key, location, kind, elements, data in records:
        body += dump((key, location, kind)) + struct.pack(">q" if big else "<q", elements) + data
    return body + dump(list(views))


def tensors(records: list[tuple] | None = None, *, count: int | None = None) -> bytes:
    """``(key, storage key, ndim, size, stride, offset)`` records."""
    records = [("10", "1", 2, (2, 3), (3, 1), 2)] if records is None else records
    body = dump(len(records) if count is None else count)
    for key, storage, ndim, size, stride, offset in records:
        body += dump((key, storage, torch.FloatTensor)) + struct.pack("<ii", ndim, 0)
        body += struct.pack(f"<{len(size)}q", *size) + struct.pack(f"<{len(stride)}q", *stride)
        body += struct.pack("<q", offset)
    return body


def checkpoint(path: Path, **members: bytes) -> Path:
    default = {"sys_info": dump({"protocol_version": 1000, "little_endian": True}), "storages": storages(),
               "tensors": tensors(), "pickle": dump({"w": Ref("10"), "epoch": 3}, refs=True)}
    return write_tar(path, {**default, **members})
