"""Legacy and tar checkpoints whose tensor names sit at chosen offsets of a streamed pickle's 64 KiB fetches."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import numpy as np
import torch

from tests.helpers.pytorch_checkpoints import write_tar
from tests.helpers.pytorch_python2_pickles import glob, k

WEIGHT = np.arange(6, dtype=np.float32)


# A tar checkpoint's storages member up to its view list's pickle: one float storage (key 101) holding WEIGHT.
STORAGES_HEAD = (pickle.dumps(1, 2) + pickle.dumps((101, "cpu", torch.FloatStorage), 2) + struct.pack("<q", 6)
                 + WEIGHT.tobytes() + b"\x80\x02")


def name_of(length: int) -> str:
    """A name of ``length`` characters whose every 10-character stretch differs (a lost or repeated piece shows)."""
    return "".join(f"{i:09d}." for i in range(length // 10 + 1))[:length]


def tar_with_storages(path: Path, storages: bytes) -> Path:
    """A tar checkpoint whose storages member is ``storages``, followed by a tensors member of 10,000 text lines
    (so a read past the storages member's end would find bytes, and newlines, to take)."""
    return write_tar(path, {"sys_info": pickle.dumps({"protocol_version": 1000, "little_endian": True}, 2),
                            "storages": storages, "tensors": b"\x80\x02I0\n." * 10_000,
                            "pickle": b"\x80\x02" + glob("collections", "OrderedDict") + b")R" + k(0) + b"."})
