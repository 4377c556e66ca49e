"""TorchScript modules with list and dict attributes: torch.jit.save pickles them through
``torch.jit._pickle``'s helpers, which build lists and tags and are allowed by name; the rest of torch.jit is not.

Promises (README, "PyTorch files") -> tests:
- a scripted module with List[int], List[float], List[bool], List[Tensor], Dict[str, Tensor] and Optional
  attributes reads as ``torch.jit.load(f).state_dict()`` (names, dtypes, shapes, bytes), its attributes as values
  -> test_a_scripted_module_with_typed_attributes_reads_as_jit_load_state_dict
- the helpers build what torch.jit builds, and only from what it gives them
  -> test_typed_list_helpers_take_one_list, test_restore_type_tag_keeps_its_value_and_takes_a_text_tag
- anything else in torch.jit is refused by name -> test_other_torch_jit_globals_stay_refused_by_name
"""

# No ``from __future__ import annotations``: torch.jit.script reads the attributes' annotations as types.
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import torch
from tests.helpers.pytorch_checkpoints import raw_bytes

from engine.formats import open_store
from engine.formats.pytorch.tensors import TORCH_DTYPES
from tests.helpers.pytorch_pickle_builders import call, checkpoint, op_global, plain
from tests.refusals import refusal


class Typed(torch.nn.Module):
    ints: List[int]
    floats: List[float]
    flags: List[bool]
    tensors: List[torch.Tensor]
    table: Dict[str, torch.Tensor]
    maybe: Optional[torch.Tensor]
    nothing: Optional[int]

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv1d(1, 2, 3)
        self.norm = torch.nn.BatchNorm1d(2)
        self.ints = [1, 2, 3]
        self.floats = [0.5, 1.5]
        self.flags = [True, False]
        self.tensors = [torch.ones(2), torch.zeros(3, dtype=torch.int64)]
        self.table = {"a": torch.full((2,), 7.0)}
        self.maybe = torch.arange(4.0)
        self.nothing = None
        self.register_buffer("window", torch.hann_window(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.conv(x)) * self.ints[0] + self.floats[0]


def test_a_scripted_module_with_typed_attributes_reads_as_jit_load_state_dict(tmp_path: Path) -> None:
    path = tmp_path / "silero_like.jit"
    torch.jit.save(torch.jit.script(Typed()), str(path))
    expected = torch.jit.load(str(path)).state_dict()
    with open_store(path) as store:
        assert store.version == "TorchScript"
        assert store.names == list(expected)
        for name, tensor in expected.items():
            assert store.entry(name).dtype == TORCH_DTYPES[str(tensor.dtype).removeprefix("torch.")], name
            assert store.entry(name).shape == tuple(tensor.shape), name
            assert store.read(name).tobytes() == raw_bytes(tensor), name
        values = store.values
        assert (values["ints"], values["floats"], values["flags"], values["nothing"]) == ([1, 2, 3], [0.5, 1.5],
                                                                                         [True, False], None)
        # tensors that are attributes, not parameters or buffers: shown where they are, not listed (as state_dict)
        assert values["tensors"] == ["<tensor tensors.0, not in the module's state_dict>",
                                     "<tensor tensors.1, not in the module's state_dict>"]
        assert values["table"] == {"a": "<tensor table.a, not in the module's state_dict>"}
        assert values["maybe"] == "<tensor maybe, not in the module's state_dict>"


def reduce_at(ops: bytes) -> int:
    """The byte of the REDUCE that ends ``ops`` in the data.pkl ``checkpoint`` writes (after PROTO 2)."""
    return 2 + len(ops) - 1


LIST_HELPERS = ("build_intlist", "build_tensorlist", "build_doublelist", "build_boollist", "build_genericlist")


@pytest.mark.parametrize("helper", LIST_HELPERS)
def test_typed_list_helpers_take_one_list(tmp_path: Path, helper: str) -> None:
    built = checkpoint(tmp_path / "list.pt", b"}" + plain("x") + call(op_global("torch.jit._pickle", helper),
                                                                     plain([1, 2.5, True])) + b"s")
    with open_store(built) as store:
        assert store.values == {"x": [1, 2.5, True]}
    ops = call(op_global("torch.jit._pickle", helper), plain((1, 2)))
    tuple_given = checkpoint(tmp_path / "tuple.pt", ops)
    assert refusal(tuple_given) == (f"tuple.pt: data.pkl is malformed (REDUCE at byte {reduce_at(ops)}): a "
                                    "TorchScript list is built from a list, not a tuple")


def test_restore_type_tag_keeps_its_value_and_takes_a_text_tag(tmp_path: Path) -> None:
    tag = op_global("torch.jit._pickle", "restore_type_tag")
    tagged = checkpoint(tmp_path / "tag.pt", call(tag, plain({"a": 1}), plain("Dict[str, int]")))
    with open_store(tagged) as store:
        assert store.values == {"a": 1}
    ops = call(tag, plain({"a": 1}), plain(7))
    untagged = checkpoint(tmp_path / "untagged.pt", ops)
    assert refusal(untagged) == (f"untagged.pt: data.pkl is malformed (REDUCE at byte {reduce_at(ops)}): "
                                 "restore_type_tag's type is not text")


@pytest.mark.parametrize(("module", "name"), [("torch.jit._pickle", "build_tensor_from_id"), ("torch.jit", "load"),
                                              ("torch.jit._serialization", "load")])
def test_other_torch_jit_globals_stay_refused_by_name(tmp_path: Path, module: str, name: str) -> None:
    path = checkpoint(tmp_path / "jit.pt", call(op_global(module, name), plain((1,))))
    assert refusal(path) == (f"jit.pt: refused to load the global {module}.{name}: a weights file never needs it, "
                             "and unpickling it could run code")
