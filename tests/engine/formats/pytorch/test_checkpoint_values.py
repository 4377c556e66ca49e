"""From an unpickled checkpoint to names and values, as the user sees them: engine/formats/pytorch/
checkpoint.py's values tree, ``--key`` selection, the expansion budget at its edge, and its refusals.

Promises (README, "PyTorch files") -> tests:
- a checkpoint's other values are kept as JSON-able values (bytes as hex, complex as [re, im], ...)
  -> test_plain_values_are_shown_as_json, test_a_tensor_among_values_shows_where_it_went,
  test_a_slice_shows_its_start_stop_and_step
- ``--key`` keeps one branch: a top-level key, an integer key, or a dotted path -> test_top_level_key_forms,
  test_a_missing_key_lists_the_top_level_keys
- a whole pickled module lists its state_dict; a tensor attribute is a value, not listed
  -> test_a_module_attribute_tensor_is_a_value_not_a_name, test_a_module_table_entry_that_is_not_a_tensor_is_refused,
  test_a_child_module_entry_holding_only_tensors_shows_as_an_empty_branch
- shared references cannot expand a small file into millions of objects -> test_the_expansion_budget_is_exact,
  test_the_budget_grows_with_the_file
- non-persistent buffers are left out, as state_dict() does -> test_non_persistent_buffers_may_be_listed_as_a_list
- an object of an unknown class shows its class path and its state -> test_a_placeholder_shows_its_class_then_its_state,
  test_an_object_with_slots_and_a_dict_shows_both
- a loop among non-tensor objects reads, its pointer back shown as {"$ref": where} -> test_a_loop_without_tensors_shows_where_it_points_back
"""

from __future__ import annotations

import collections
import pickle
from pathlib import Path

from tests.helpers.pytorch_checkpoints import Storage, Tensor, zip_checkpoint

from engine.formats import open_store
from engine.formats.pytorch.checkpoint import MAX_NODES, MIN_NODES, node_budget
from tests.refusals import refusal

FOUR = bytes(16)


def plain(path: Path, obj: object) -> Path:
    path.write_bytes(pickle.dumps(obj, protocol=2))
    return path


def test_plain_values_are_shown_as_json(tmp_path: Path) -> None:
    import numpy as np
    obj = {"c": np.complex128(1.5 - 2j), "b": b"\x00\xff", "ba": bytearray(b"\x10"), "s": slice(1, None, 2), "n": None,
           "t": (1, "x"), "f": frozenset({3}), "big": 1 << 70, "nested": {"k": [True, 2.5]}}
    with open_store(plain(tmp_path / "v.pt", obj)) as store:
        assert store.names == []
        assert store.values == {"c": [1.5, -2.0], "b": "00ff",
                                "ba": {"__class__": "__builtin__.bytearray", "__args__": ["10"]}, "s": [1, None, 2], "n": None,
                                "t": [1, "x"], "f": [3], "big": 1 << 70, "nested": {"k": [True, 2.5]}}


def test_a_slice_shows_its_start_stop_and_step(tmp_path: Path) -> None:
    with open_store(plain(tmp_path / "s.pt", {"s": slice(0, 5, 2), "t": slice(None, 3, None)})) as store:
        assert store.values == {"s": [0, 5, 2], "t": [None, 3, None]}


def test_a_global_and_a_numpy_dtype_are_shown_by_name(tmp_path: Path) -> None:
    import numpy as np
    with open_store(plain(tmp_path / "g.pt", {"cls": collections.OrderedDict, "dt": np.dtype("<f2")})) as store:
        assert store.values == {"cls": "collections.OrderedDict", "dt": "float16"}


def test_a_tensor_among_values_shows_where_it_went(tmp_path: Path) -> None:
    obj = {"mixed": [1, Tensor(Storage("0", 4), 0, (4,), (1,)), "x"], "only": [Tensor(Storage("0", 4), 0, (2,), (1,))],
           "epoch": 3}
    with open_store(zip_checkpoint(tmp_path / "m.pt", obj, {"0": FOUR})) as store:
        assert store.names == ["mixed.1", "only.0"]
        assert store.values == {"mixed": [1, "<tensor mixed.1>", "x"], "epoch": 3}


def test_a_bare_tensor_is_named_tensor(tmp_path: Path) -> None:
    with open_store(zip_checkpoint(tmp_path / "t.pt", Tensor(Storage("0", 4), 0, (4,), (1,)), {"0": FOUR})) as store:
        assert store.names == ["tensor"] and store.values == {}


def nested(tmp_path: Path) -> Path:
    obj = {"model": {"enc": {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}}, 3: Tensor(Storage("0", 4), 0, (2,), (1,)),
           -1: {"v": Tensor(Storage("0", 4), 0, (1,), (1,))}, "model.enc": 5}
    return zip_checkpoint(tmp_path / "k.pt", obj, {"0": FOUR})


def test_top_level_key_forms(tmp_path: Path) -> None:
    path = nested(tmp_path)
    with open_store(path, top_level_key="model") as store:
        assert store.names == ["enc.w"]
    with open_store(path, top_level_key="3") as store:
        assert store.names == ["tensor"]
    with open_store(path, top_level_key="-1") as store:
        assert store.names == ["v"]
    with open_store(path, top_level_key="model.enc") as store:  # an exact key wins over the dotted path
        assert store.names == [] and store.values == 5
    path = zip_checkpoint(tmp_path / "d.pt", {"model": {"enc": {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}}},
                          {"0": FOUR})
    with open_store(path, top_level_key="model.enc") as store:
        assert store.names == ["w"]


def test_a_missing_key_lists_the_top_level_keys(tmp_path: Path) -> None:
    path = nested(tmp_path)
    assert refusal(path, top_level_key="model.dec") == (
        "k.pt: has no top-level key 'model.dec'; its top-level keys are: 'model', '3', '-1', 'model.enc'")
    assert refusal(path, top_level_key="model.enc.w.x") == (
        "k.pt: has no top-level key 'model.enc.w.x'; its top-level keys are: 'model', '3', '-1', 'model.enc'")
    many = plain(tmp_path / "many.pt", {f"k{i}": i for i in range(60)})
    listed = ", ".join(repr(f"k{i}") for i in range(50))
    assert refusal(many, top_level_key="zz") == f"many.pt: has no top-level key 'zz'; its top-level keys are: {listed}"
    assert refusal(plain(tmp_path / "none.pt", {}), top_level_key="zz") == (
        "none.pt: has no top-level key 'zz'; its top-level keys are: none")
    assert refusal(plain(tmp_path / "list.pt", [1]), top_level_key="zz") == (
        "list.pt: top-level key 'zz' needs a checkpoint that is a dict, not a list")


def test_the_expansion_budget_is_exact(tmp_path: Path) -> None:
    """41 references to one list of 2,438 numbers: 1 + 41 x 2,439 = 100,000 objects, the budget of a small file."""
    at_limit = plain(tmp_path / "at.pt", [list(range(2438))] * 41)
    with open_store(at_limit) as store:
        assert len(store.values) == 41
    over = plain(tmp_path / "over.pt", [list(range(2439))] * 41)
    assert refusal(over) == ("over.pt: the checkpoint expands to 100041 objects or more (the same objects referenced "
                             "over and over), over the limit of 100000 for a file of its size")


def test_the_budget_grows_with_the_file() -> None:
    assert node_budget(0) == MIN_NODES == 100_000
    assert node_budget(8 * MIN_NODES + 7) == MIN_NODES
    assert node_budget(8 * MIN_NODES + 8) == MIN_NODES + 1
    assert node_budget(8 * MAX_NODES) == MAX_NODES == 5_000_000
    assert node_budget(8 * MAX_NODES + 8) == MAX_NODES


class Mod:
    """Pickles as a module would (``torch.save(model)``): its tables in ``__dict__``; read back as a placeholder."""

    def __init__(self, parameters: dict, buffers: dict, modules: dict, **attributes: object) -> None:
        self.__dict__.update(_parameters=parameters, _buffers=buffers, _modules=modules, **attributes)


def view(n: int = 4) -> Tensor:
    return Tensor(Storage("0", 4), 0, (n,), (1,))


def test_a_module_attribute_tensor_is_a_value_not_a_name(tmp_path: Path) -> None:
    child = Mod({"cw": view(2)}, {}, {})
    model = Mod({"w": view(), "nobias": None}, {"rm": view(3), "tmp": view(1)}, {"child": child, "gone": None},
                _non_persistent_buffers_set={"tmp"}, extra=view(1), in_features=3, _hidden=7)
    with open_store(zip_checkpoint(tmp_path / "m.pt", {"model": model}, {"0": FOUR})) as store:
        assert store.names == ["model.w", "model.rm", "model.child.cw"]
        cls = f"{__name__}.Mod"
        assert store.values == {"model": {"__class__": cls, "extra": "<tensor model.extra, not in the module's state_dict>",
                                          "in_features": 3, "child": {"__class__": cls}}}


def test_non_persistent_buffers_may_be_listed_as_a_list(tmp_path: Path) -> None:
    model = Mod({}, {"rm": view(3), "tmp": view(1)}, {}, _non_persistent_buffers_set=["tmp"])
    with open_store(zip_checkpoint(tmp_path / "m.pt", model, {"0": FOUR})) as store:
        assert store.names == ["rm"]
    model = Mod({}, {"rm": view(3), "tmp": view(1)}, {}, _non_persistent_buffers_set="tmp")  # not a collection
    with open_store(zip_checkpoint(tmp_path / "s.pt", model, {"0": FOUR})) as store:
        assert store.names == ["rm", "tmp"]


def test_a_child_module_entry_holding_only_tensors_shows_as_an_empty_branch(tmp_path: Path) -> None:
    """A ``_modules`` entry that is a tensor, or a dict of tensors, not a module: its tensors are listed under its
    key and the module's values keep the key, as an empty branch."""
    model = Mod({"w": view()}, {}, {"t": view(2), "d": {"a": view(1)}})
    with open_store(zip_checkpoint(tmp_path / "m.pt", {"m": model}, {"0": FOUR})) as store:
        assert store.names == ["m.w", "m.t", "m.d.a"]
        assert store.values == {"m": {"__class__": f"{__name__}.Mod", "t": {}, "d": {}}}


def test_a_module_table_entry_that_is_not_a_tensor_is_refused(tmp_path: Path) -> None:
    cls = f"{__name__}.Mod"
    path = zip_checkpoint(tmp_path / "p.pt", {"m": Mod({"w": 5}, {}, {})}, {"0": FOUR})
    assert refusal(path) == f"p.pt: parameter m.w of module {cls} is an int, not a tensor"
    path = zip_checkpoint(tmp_path / "b.pt", {"m": Mod({}, {"rm": "x"}, {})}, {"0": FOUR})
    assert refusal(path) == f"b.pt: buffer m.rm of module {cls} is a str, not a tensor"


class Thing:
    """An object of a class the reader does not know, with a ``__class__`` key in its state."""

    def __init__(self, **state: object) -> None:
        self.__dict__.update(state)


def test_a_placeholder_shows_its_class_then_its_state(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "p.pt", {"t": Thing(__class__="forged", a=1, w=view())}, {"0": FOUR})
    with open_store(path) as store:
        assert store.names == ["t.w"]
        assert store.values == {"t": {"__class__": f"{__name__}.Thing", "a": 1}}


class SlottedBase:
    __slots__ = ("lr", "w")


class SlotsAndDict(SlottedBase):
    """A subclass without ``__slots__`` has a ``__dict__`` too: protocol 2 pickles its state as (dict, slots)."""


def test_an_object_with_slots_and_a_dict_shows_both(tmp_path: Path) -> None:
    import torch
    obj = SlotsAndDict()
    obj.lr, obj.w, obj.name, obj.b = 0.5, torch.ones(2), "run", torch.zeros(1)
    path = tmp_path / "both.pt"
    torch.save({"opt": obj}, path)
    with open_store(path) as store:
        assert store.names == ["opt.b", "opt.w"]  # the __dict__'s, then the slots'
        assert store.read("opt.b").tolist() == [0.0] and store.read("opt.w").tolist() == [1.0, 1.0]
        assert store.values == {"opt": {"__class__": f"{__name__}.SlotsAndDict", "name": "run", "lr": 0.5}}


def test_a_loop_without_tensors_shows_where_it_points_back(tmp_path: Path) -> None:
    loop: list = [1]
    loop.append({"back": loop})
    with open_store(plain(tmp_path / "c.pt", {"a": loop})) as store:
        assert store.values == {"a": [1, {"back": {"$ref": "a"}}]}
    root: list = []
    root.append(root)
    with open_store(plain(tmp_path / "r.pt", root)) as store:
        assert store.values == [{"$ref": ""}]
