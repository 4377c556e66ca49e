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
from tests.helpers.pytorch_python2_pickles import (  # noqa: F401
    MAGIC,
    assert_reads_as_torch,
    glob,
    k,
    legacy_file,
    ordered_dict,
    s,
    storage_pid,
    tensor_v2,
    tup,
)


def tensor_v1(pid: bytes, offset: int, size: tuple[int, ...], stride: tuple[int, ...]) -> bytes:
    """``torch._utils._rebuild_tensor(storage, offset, size, stride)`` (torch 0.3)."""
    args = tup(pid, k(offset), tup(*map(k, size)), tup(*map(k, stride)))
    return glob("torch._utils", "_rebuild_tensor") + args + b"R"










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
