"""Checkpoints written by real torch, and builders for the layouts torch no longer writes or that
need forged numbers."""

from __future__ import annotations

import collections
import io
import pickle
import struct
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

LAYOUTS = ("zip", "legacy")
DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128, torch.uint16, torch.uint32,
          torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2)


def save(obj: Any, path: Path, layout: str) -> Path:
    torch.save(obj, path, _use_new_zipfile_serialization=layout == "zip")
    return path


def sample(dtype: torch.dtype, shape: tuple[int, ...] = (3, 4)) -> torch.Tensor:
    g = torch.Generator().manual_seed(DTYPES.index(dtype))
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=g)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 4).to(dtype)
    return torch.randint(0, 100, shape, generator=g).to(dtype)


def checkpoints() -> dict[str, Any]:
    """Every kind of content the reader must rebuild exactly, by file stem."""
    torch.manual_seed(0)
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    tied = torch.randn(4, 4)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(5, 3)).sum().backward()
    optimizer.step()
    return {
        "dtypes": {str(d).removeprefix("torch."): sample(d) for d in DTYPES},
        "views": {"base": base, "t": base.t(), "slice": base[2:4, 3:7], "row": base[5], "col": base[:, 3],
                  "step": base[::2, ::3], "expand": torch.arange(3.0).expand(4, 3)},
        "shared": {"enc.weight": tied, "dec.weight": tied, "half": tied[2:], "other": torch.ones(2)},
        "params": {"w": torch.nn.Parameter(torch.randn(2, 3)), "frozen": torch.nn.Parameter(torch.ones(2), False)},
        "scalars_empty": {"f": torch.tensor(3.5), "i": torch.tensor(7), "b": torch.tensor(True),
                          "e": torch.empty(0, 3), "e2": torch.zeros(2, 0, 4)},
        "nested": {"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
                   "epoch": 42, "config": {"lr": 0.1, "betas": (0.9, 0.99), "name": "run", "size": torch.Size([2, 3]),
                                           "tags": {"a"}, "none": None, "empty": {}},
                   "weights": [torch.ones(2), torch.zeros(3)], "pair": (torch.full((2,), 5.0), 7)},
    }


def torch_flat(obj: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    """What torch.load returned, named the way the reader names tensors."""
    if isinstance(obj, torch.Tensor):
        return {prefix or "tensor": obj}
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, (list, tuple)) else ()
    out: dict[str, torch.Tensor] = {}
    for key, value in items:
        out.update(torch_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def raw_bytes(t: torch.Tensor) -> bytes:
    return t.detach().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes()


# --- hand-built pickles ------------------------------------------------------------------------

class Storage:
    """Stands for one storage when hand-writing a checkpoint pickle."""

    def __init__(self, key: str, numel: int, kind: Any = torch.FloatStorage, view: Any = None):
        self.key, self.numel, self.kind, self.view = key, numel, kind, view


class Tensor:
    """Pickles as torch's _rebuild_tensor_v2 call over a Storage, with any numbers we like."""

    def __init__(self, storage: Storage, offset: int, size: tuple, stride: tuple):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, self.args


def checkpoint_pickle(obj: Any, legacy: bool = False) -> bytes:
    class Pickler(pickle.Pickler):
        def persistent_id(self, item: Any) -> Any:
            if isinstance(item, Storage):
                pid = ("storage", item.kind, item.key, "cpu", item.numel)
                return pid + (item.view,) if legacy else pid
            return None

    out = io.BytesIO()
    Pickler(out, protocol=2).dump(obj)
    return out.getvalue()


def zip_checkpoint(path: Path, obj: Any, storages: dict[str, bytes], byteorder: str = "little") -> Path:
    import zipfile
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("ckpt/data.pkl", checkpoint_pickle(obj))
        archive.writestr("ckpt/byteorder", byteorder)
        for key, data in storages.items():
            archive.writestr(f"ckpt/data/{key}", data)
        archive.writestr("ckpt/version", "3\n")
    return path


LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def legacy_head(little: bool = True) -> bytes:
    sys_info = {"protocol_version": 1001, "little_endian": little, "type_sizes": {"short": 2, "int": 4, "long": 4}}
    return b"".join(pickle.dumps(x, protocol=2) for x in (LEGACY_MAGIC, 1001, sys_info))


def legacy_checkpoint(path: Path, obj: Any, storages: dict[str, tuple[int, bytes]]) -> Path:
    """``storages``: key -> (element count written before the data, data)."""
    body = legacy_head() + checkpoint_pickle(obj, legacy=True) + pickle.dumps(list(storages), protocol=2)
    body += b"".join(struct.pack("<q", count) + data for count, data in storages.values())
    path.write_bytes(body)
    return path


def tar_checkpoint(path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """A checkpoint in the pre-0.1.10 tar layout, with the arrays it must read as."""

    class Ref:
        def __init__(self, key: int):
            self.key = key

    def dump(*objs: Any, main: bool = False) -> bytes:
        """Each object its own pickle, as torch wrote them one after another."""
        out = io.BytesIO()
        for obj in objs:
            pickler = pickle.Pickler(out, protocol=2)
            if main:
                pickler.persistent_id = lambda o: str(o.key) if isinstance(o, Ref) else None  # type: ignore
            pickler.dump(obj)
        return out.getvalue()

    floats = np.arange(12, dtype="<f4")
    longs = np.array([5, -6, 7], dtype="<i8")
    storages = dump(2, (101, "cpu", torch.FloatStorage)) + struct.pack("<q", 12) + floats.tobytes() \
        + dump((102, "cpu", torch.LongStorage)) + struct.pack("<q", 3) + longs.tobytes() \
        + dump([(103, 101, 4, 6)])  # storage 103 = elements 4..9 of storage 101

    def tensor_record(key: int, storage: int, kind: Any, size: tuple, stride: tuple, offset: int) -> bytes:
        n = len(size)
        return dump((key, storage, kind)) + struct.pack(f"<ii{n}q{n}qq", n, 0, *size, *stride, offset)

    tensors = dump(4) + tensor_record(201, 101, torch.FloatTensor, (3, 4), (4, 1), 0) \
        + tensor_record(202, 101, torch.FloatTensor, (2, 2), (1, 3), 1) \
        + tensor_record(203, 103, torch.FloatTensor, (2, 3), (3, 1), 0) + tensor_record(204, 102, torch.LongTensor, (3,), (1,), 0)
    main = dump({"full": Ref(201), "strided": Ref(202), "viewed": Ref(203), "longs": Ref(204), "epoch": 3}, main=True)
    members = {"sys_info": dump({"protocol_version": 1000, "little_endian": True}), "storages": storages,
               "tensors": tensors, "pickle": main}
    write_tar(path, members)
    full = floats.reshape(3, 4)
    expected = {"full": full, "strided": np.lib.stride_tricks.as_strided(floats[1:], (2, 2), (4, 12)),
                "viewed": floats[4:10].reshape(2, 3), "longs": longs}
    return path, expected


def write_tar(path: Path, members: dict[str, bytes]) -> Path:
    """A tar archive holding ``members`` (name -> bytes) in order, as torch's tar layout was written."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def big_endian_copy(source: Path, target: Path, units: list[int]) -> Path:
    """``source`` with its byteorder record set to "big" and each storage's numbers swapped (``units[key]``: the
    bytes swapped together, half a complex number's)."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/byteorder"):
                data = b"big"
            elif "/data/" in info.filename:
                unit = units[int(info.filename.rsplit("/", 1)[1])]
                data = np.frombuffer(data, np.uint8).reshape(-1, unit)[:, ::-1].tobytes()
            dst.writestr(info, data)
    return target
