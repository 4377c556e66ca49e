"""The allowlist table's names and kinds that session 12's mutation run of engine/formats/pytorch/allowlist.py showed
no test reached: the tensor types torch.save names, the tensor-subclass rebuilds nested as torch nests them, and the
refusal naming a class stand-in a forged pickle calls.

Promises (README, "PyTorch files": a checkpoint reads as torch.load reads it, the note says when
torch.load(weights_only=True) would refuse the file, a forged pickle is refused in one line naming what is wrong)
-> tests:
- a plain tensor carrying attributes (pickled through ``torch.Tensor``) and the legacy tensor types torch.save names
  (``torch.FloatTensor``, ``torch.cuda.LongTensor``) read, listed by name, with no note: torch's safe loader takes
  them -> test_tensor_types_torch_save_names_read_by_name_without_a_note
- a tensor subclass rebuilt through ``torch._tensor.Tensor`` (the module torch defines it in) reads as its tensor
  -> test_a_subclass_rebuilt_as_torch_tensor_Tensor_reads_as_its_tensor
- ``_rebuild_from_type`` and ``_rebuild_from_type_v2``, each as the rebuild function of the other or of itself, read
  as torch.load reads them -> test_subclass_rebuilds_nested_in_each_other_read_as_torch_reads_them
- calling a class the table knows but never builds (a tensor type, a dtype, numpy.ndarray) is refused naming it
  -> test_calling_a_class_that_builds_nothing_is_refused_naming_it
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.formats import open_store
from test_allowlist_builders_exact import (EMPTY_HOOKS, STORAGE, call, checkpoint, op_global, pickle_file, plain,
                                         refusal, torch_loaded)

FOUR = np.arange(1, 5, dtype="<f4")  # what checkpoint() stores in storage 0


def test_tensor_types_torch_save_names_read_by_name_without_a_note(tmp_path: Path) -> None:
    tagged = torch.arange(3.0)
    tagged.tag = "kept"  # an attribute: torch pickles the tensor through _rebuild_from_type_v2(..., torch.Tensor, ...)
    path = tmp_path / "types.pt"
    torch.save({"w": tagged, "cpu": torch.FloatTensor, "cuda": torch.cuda.LongTensor}, path)
    assert torch.load(path, weights_only=True)["cpu"] is torch.FloatTensor  # torch's safe loader takes the file
    with open_store(path) as store:
        assert store.names == ["w"]
        np.testing.assert_array_equal(store.read("w"), np.arange(3.0, dtype=np.float32))
        assert store.values == {"cpu": "torch.FloatTensor", "cuda": "torch.cuda.LongTensor"}
        assert store.note is None and store.foreign_classes == ()


def from_type(rebuild: str, func: bytes, args: bytes) -> bytes:
    """``torch._tensor.<rebuild>(func, torch.Tensor, args, {})``."""
    return call(op_global("torch._tensor", rebuild), func, op_global("torch", "Tensor"), args, b"}")


TENSOR_V2_ARGS = b"(" + STORAGE + plain(0) + plain((4,)) + plain((1,)) + plain(False) + EMPTY_HOOKS + b"t"


def test_a_subclass_rebuilt_as_torch_tensor_Tensor_reads_as_its_tensor(tmp_path: Path) -> None:
    ops = call(op_global("torch._tensor", "_rebuild_from_type_v2"), op_global("torch._utils", "_rebuild_tensor_v2"),
               op_global("torch._tensor", "Tensor"), TENSOR_V2_ARGS, b"}")
    with open_store(checkpoint(tmp_path / "sub.pt", b"}" + plain("w") + ops + b"s")) as store:
        np.testing.assert_array_equal(store.read("w"), FOUR)


REBUILDS = ("_rebuild_from_type", "_rebuild_from_type_v2")


@pytest.mark.parametrize("inner", REBUILDS)
@pytest.mark.parametrize("outer", REBUILDS)
def test_subclass_rebuilds_nested_in_each_other_read_as_torch_reads_them(tmp_path: Path, outer: str,
                                                                          inner: str) -> None:
    inner_args = b"(" + op_global("torch._utils", "_rebuild_tensor_v2") + op_global("torch", "Tensor") \
        + TENSOR_V2_ARGS + b"}t"
    ops = b"}" + plain("w") + from_type(outer, op_global("torch._tensor", inner), inner_args) + b"s"
    path = checkpoint(tmp_path / "nested.pt", ops)
    expected = torch_loaded(path)["w"].numpy()
    with open_store(path) as store:
        np.testing.assert_array_equal(store.read("w"), expected)
        np.testing.assert_array_equal(store.read("w"), FOUR)


@pytest.mark.parametrize(("module", "name"), [("torch", "FloatTensor"), ("torch.cuda", "DoubleTensor"),
                                              ("torch", "float32"), ("numpy", "ndarray")])
def test_calling_a_class_that_builds_nothing_is_refused_naming_it(tmp_path: Path, module: str, name: str) -> None:
    path = pickle_file(tmp_path / "call.pt", call(op_global(module, name), plain(2)))
    assert refusal(path) == f"{module}.{name} cannot be called"
