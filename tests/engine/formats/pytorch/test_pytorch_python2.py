"""Python-2-era checkpoints, written opcode by opcode as Python 2's pickler and torch 0.3/0.4 wrote them.

Every opcode used is documented in ``pickletools``: PROTO 2, SHORT_BINSTRING (``U``) text, GLOBAL
(``c``), BINPERSID (``Q``) storage ids, EMPTY_LIST/APPENDS, TUPLE1-3, REDUCE and BUILD. The legacy
layout around them is torch/serialization.py's ``_legacy_save``: the magic number, the protocol
(1001), sys_info, the checkpoint, the storage key list, then each storage as a u64 count and bytes.
Each file is compared with what real ``torch.load(f, map_location="cpu", weights_only=True)`` reads.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
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


def tensor_v1(pid: bytes, offset: int, size: tuple[int, ...], stride: tuple[int, ...]) -> bytes:
    """``torch._utils._rebuild_tensor(storage, offset, size, stride)`` (torch 0.3)."""
    args = tup(pid, k(offset), tup(*map(k, size)), tup(*map(k, stride)))
    return glob("torch._utils", "_rebuild_tensor") + args + b"R"


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


WEIGHT = np.arange(6, dtype=np.float32) * 0.5
SHARED = np.arange(10, dtype=np.float32) - 3


@pytest.mark.parametrize("rebuild", [tensor_v1, tensor_v2])
@pytest.mark.parametrize("location", ["cpu", "cuda:0", "cuda:3"])
def test_python2_state_dict_reads_as_torch_does(tmp_path: Path, rebuild, location: str) -> None:
    """Byte-string keys, an OrderedDict from a list of [key, value] lists, storages on a GPU, shared storage."""
    checkpoint = ordered_dict([
        (s("conv.weight"), rebuild(storage_pid("140230", location, 6), 0, (2, 3), (3, 1))),
        (s("conv.bias"), rebuild(storage_pid("140231", location, 10), 2, (3,), (1,))),
        (s("fc.weight_t"), rebuild(storage_pid("140231", location, 10), 0, (2, 2), (1, 2))),  # a strided view
    ])
    path = legacy_file(tmp_path / f"py2_{rebuild.__name__}_{location}.pth", checkpoint,
                       {"140230": WEIGHT, "140231": SHARED})
    assert_reads_as_torch(path)
    with open_store(path) as store:
        assert store.version == "legacy"
        assert store.read("fc.weight_t").tolist() == [[-3.0, -1.0], [-2.0, 0.0]]


def test_python2_nested_checkpoint_with_plain_values_and_int_keys(tmp_path: Path) -> None:
    """A training checkpoint of the era: a dict of a state_dict, an epoch, a best score, an int-keyed table."""
    state = ordered_dict([(s("w"), tensor_v2(storage_pid("1", "cuda:0", 6, "DoubleStorage"), 0, (6,), (1,)))])
    checkpoint = (b"}(" + s("state_dict") + state + s("epoch") + k(90) + s("best_prec1") + b"G"
                  + struct.pack(">d", 76.15) + s("arch") + s("resnet18") + s("classes") + b"}(" + k(0)
                  + s("tench") + k(1) + s("goldfish") + b"uu")
    path = legacy_file(tmp_path / "py2_nested.pth", checkpoint, {"1": np.arange(6, dtype=np.float64)})
    expected = torch.load(path, map_location="cpu", weights_only=True)
    with open_store(path) as store:
        assert store.names == ["state_dict.w"]
        assert store.read("state_dict.w").tobytes() == expected["state_dict"]["w"].numpy().tobytes()
        assert store.values == {"epoch": 90, "best_prec1": 76.15, "arch": "resnet18",
                                "classes": {"0": "tench", "1": "goldfish"}}
        assert store.foreign_classes == ()
        assert store.note is None


def test_python2_cuda_storage_class_and_long_binstring_read_as_data(tmp_path: Path) -> None:
    """torch 0.3 on a GPU named ``torch.cuda.FloatStorage``; keys of 256 bytes and more are BINSTRING (``T``)."""
    long_key = "layer." * 50 + "weight"
    raw = long_key.encode()
    checkpoint = ordered_dict([(b"T" + struct.pack("<i", len(raw)) + raw,
                                tensor_v1(storage_pid("7", "cuda:1", 6, module="torch.cuda"), 0, (3, 2), (2, 1)))],
                              metadata=False)
    path = legacy_file(tmp_path / "py2_cuda_class.pth", checkpoint, {"7": WEIGHT})
    with open_store(path) as store:
        assert store.names == [long_key]
        assert store.read(long_key).tobytes() == WEIGHT.tobytes()


def test_python2_parameter_built_by_calling_its_class_reads_as_torch_does(tmp_path: Path) -> None:
    """torch 0.3 pickled a Parameter as ``REDUCE(torch.nn.parameter.Parameter, (tensor, requires_grad))``."""
    parameter = glob("torch.nn.parameter", "Parameter") + tup(tensor_v1(storage_pid("5", "cuda:0", 6), 0, (6,), (1,)),
                                                              b"\x88") + b"R"
    path = legacy_file(tmp_path / "py2_parameter.pth", ordered_dict([(s("p"), parameter)]), {"5": WEIGHT})
    assert_reads_as_torch(path)
