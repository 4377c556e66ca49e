"""Pickle opcodes built byte by byte (globals, calls, torch's tensor rebuilds) and zip checkpoints around them, for
forged checkpoints torch itself never writes."""

from __future__ import annotations

import io
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from engine.errors import FormatError
from engine.formats import open_store


def op_global(module: str, name: str) -> bytes:
    return f"c{module}\n{name}\n".encode()


def plain(obj: object) -> bytes:
    """The opcodes that push ``obj`` (no shared references, so no memo reads)."""
    return pickle.dumps(obj, 2)[2:-1]


def call(target: bytes, *args: bytes) -> bytes:
    return target + b"(" + b"".join(args) + b"tR"


def pickle_file(path: Path, ops: bytes) -> Path:
    path.write_bytes(b"\x80\x02" + ops + b".")
    return path


STORAGE = b"(" + plain("storage") + op_global("torch", "FloatStorage") + plain("0") + plain("cpu") + plain(4) + b"tQ"


EMPTY_HOOKS = op_global("collections", "OrderedDict") + b")R"


def checkpoint(path: Path, ops: bytes) -> Path:
    """A zip checkpoint whose data.pkl is ``ops`` and whose storage 0 holds four float32s 1, 2, 3, 4."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("ckpt/data.pkl", b"\x80\x02" + ops + b".")
        archive.writestr("ckpt/byteorder", b"little")
        archive.writestr("ckpt/data/0", np.arange(1, 5, dtype="<f4").tobytes())
    return path


def torch_loaded(path: Path) -> Any:
    """What ``torch.load(weights_only=False)`` returns for a ``checkpoint`` (the test's own bytes: no risk), after
    adding the version record torch wants and this reader does not."""
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("ckpt/version", "3\n")
    return torch.load(io.BytesIO(path.read_bytes()), weights_only=False)


def tensor_v2(size: tuple = (4,), stride: tuple = (1,)) -> bytes:
    return call(op_global("torch._utils", "_rebuild_tensor_v2"), STORAGE, plain(0), plain(size), plain(stride),
                plain(False), EMPTY_HOOKS)


def in_dict(key: str, value: bytes) -> bytes:
    return b"}" + plain(key) + value + b"s"


def refusal(path: Path) -> str:
    """What a forged pickle's refusal says after naming the file and the opcode."""
    with pytest.raises(FormatError) as caught:
        open_store(path)
    assert caught.value.path == str(path)
    found = re.fullmatch(r".* is malformed \(\w+ at byte \d+\): (.*)", caught.value.problem, re.S)
    return found.group(1) if found else caught.value.problem


DTYPE_F8 = call(op_global("numpy", "dtype"), plain("f8"))


def from_type(rebuild: str, func: bytes, args: bytes) -> bytes:
    """``torch._tensor.<rebuild>(func, torch.Tensor, args, {})``."""
    return call(op_global("torch._tensor", rebuild), func, op_global("torch", "Tensor"), args, b"}")
