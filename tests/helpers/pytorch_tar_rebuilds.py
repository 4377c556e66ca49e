"""Tar checkpoints whose tensors are rebuilt from a plain ``('storage', class, key, ...)`` tuple, with no persistent ids."""

from __future__ import annotations

import io
import pickle
import struct
import tarfile
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch

STORAGES = {np.dtype("<f4"): torch.FloatStorage, np.dtype("<f8"): torch.DoubleStorage,
            np.dtype("<i8"): torch.LongStorage}


class _Rebuild:
    """Pickles as ``_rebuild_tensor_v2(('storage', class, key, 'cpu', numel), ...)``: a plain tuple, no PERSID."""

    def __init__(self, key: str, array: np.ndarray, numel: int, offset: int = 0):
        self.args = (("storage", STORAGES[array.dtype], key, "cpu", numel), offset, tuple(array.shape),
                     tuple(s // array.itemsize for s in array.strides), False, OrderedDict())

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, self.args


def write_tar(path: Path, tensors: dict[str, np.ndarray], *, storages: bytes | None = None) -> Path:
    """As burn-store's create_tar_format.py: a storage per tensor, named by key in the main pickle."""
    table = io.BytesIO()
    pickle.dump(len(tensors), table, protocol=2)
    state = OrderedDict()
    for index, (name, array) in enumerate(tensors.items()):
        key = str(1000 + index)
        table.write(pickle.dumps((key, "cpu", STORAGES[array.dtype]), protocol=2))
        table.write(struct.pack("<q", array.size))
        table.write(np.ascontiguousarray(array).tobytes())
        state[name] = _Rebuild(key, array, array.size)
    sys_info = pickle.dumps({"protocol_version": 1000, "little_endian": True,
                             "type_sizes": {"short": 2, "int": 4, "long": 8}}, protocol=2)
    with tarfile.open(path, "w") as tar:
        for member, data in (("sys_info", sys_info), ("pickle", pickle.dumps(state, protocol=2)),
                             ("storages", table.getvalue() if storages is None else storages)):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path
