"""Legacy storage views, the tar layout's storage tuples and placeholders' other states, read or refused
in words: engine/formats/pytorch/tensors.py ``storage_view``, tar_layout.py ``_by_tuple``, checkpoint.py
``select``, ``_fields``, ``_Walker.placeholder`` and ``_Walker.guessed_children``.

Promises (README, "PyTorch files", "Limits") -> tests:
- bad input is one line naming the file and what is wrong -> test_bad_legacy_view_metadata_is_one_line_naming_the_file,
  test_bad_storage_tuples_in_a_tar_file_are_one_line_naming_the_file
- an object of an unknown class is kept as its class path and the state it would have received; tensors inside
  are listed as usual -> test_a_placeholder_whose_state_is_not_attributes_keeps_it_as_state,
  test_a_placeholder_holding_only_tensors_shows_its_class
- ``--key`` keeps one branch, a top-level key as the checkpoint spells it -> test_a_key_that_only_looks_numeric_is_text
- anything nested past the limits is refused, counted where keys that are not text nest too
  -> test_nesting_through_keys_that_are_not_text_counts_each_level_once
"""

from __future__ import annotations

import io
import pickle
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
from tests.helpers.pytorch_checkpoints import (
    Storage,
    Tensor,
    checkpoint_pickle,
    legacy_head,
    zip_checkpoint,
)

from engine.formats import open_store
from engine.formats.pytorch.unpickler import MAX_DEPTH
from tests.helpers.pytorch_tar_rebuilds import write_tar
from tests.refusals import refusal

FOUR = bytes(16)


def legacy_view(path: Path, view: object) -> Path:
    """A legacy file whose one tensor sits on storage "0" through the view metadata ``view``."""
    obj = {"v": Tensor(Storage("0", 4, view=view), 0, (1,), (1,))}
    path.write_bytes(legacy_head() + checkpoint_pickle(obj, legacy=True) + pickle.dumps(["0"], protocol=2)
                     + (4).to_bytes(8, "little") + FOUR)
    return path


def test_bad_legacy_view_metadata_is_one_line_naming_the_file(tmp_path: Path) -> None:
    assert refusal(legacy_view(tmp_path / "two.pt", ("v", 0))) == "two.pt: storage 0 has invalid view metadata ('v', 0)"
    assert refusal(legacy_view(tmp_path / "int.pt", 5)) == "int.pt: storage 0 has invalid view metadata 5"
    assert refusal(legacy_view(tmp_path / "key.pt", (1.5, 0, 2))) == (
        "key.pt: storage 0 has invalid view metadata (1.5, 0, 2)")
    assert refusal(legacy_view(tmp_path / "size.pt", ("v", 0, -1))) == (
        "size.pt: view size -1 is not a non-negative whole number (of 64 bits at most)")
    assert refusal(legacy_view(tmp_path / "offset.pt", ("v", "1", 2))) == (
        "offset.pt: view offset '1' is not a non-negative whole number (of 64 bits at most)")
    with open_store(legacy_view(tmp_path / "ok.pt", ("v", 1, 2))) as store:  # elements 1..2 of the 4
        assert store.read("v").tobytes() == bytes(4)


class BadTuple:
    """Pickles as ``_rebuild_tensor_v2(pid, 0, (n,), (1,), ...)`` with any storage tuple ``pid``."""

    def __init__(self, pid: tuple, n: int) -> None:
        self.args = (pid, 0, (n,), (1,), False, OrderedDict())

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, self.args


def tar_with(path: Path, pid: tuple, n: int = 1) -> Path:
    """burn-store's tar layout holding storage 1000 (four F32 values); its one tensor refers to it by ``pid``."""
    write_tar(path, {"w": np.ones(4, "<f4")})
    import tarfile
    with tarfile.open(path) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    members["pickle"] = pickle.dumps(OrderedDict(w=BadTuple(pid, n)), protocol=2)
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_bad_storage_tuples_in_a_tar_file_are_one_line_naming_the_file(tmp_path: Path) -> None:
    fs = torch.FloatStorage
    with open_store(tar_with(tmp_path / "ok.tar", ("storage", fs, "1000", "cpu", 4), 4)) as store:
        assert store.read("w").tolist() == [1.0] * 4
    assert refusal(tar_with(tmp_path / "gone.tar", ("storage", fs, "9", "cpu", 4))) == (
        "gone.tar: the checkpoint refers to storage '9', which the archive does not hold")
    assert refusal(tar_with(tmp_path / "more.tar", ("storage", fs, "1000", "cpu", 5))) == (
        "more.tar: storage 1000 holds 16 bytes of F32 but the checkpoint says 20 bytes of F32")
    assert refusal(tar_with(tmp_path / "kind.tar", ("storage", torch.DoubleStorage, "1000", "cpu", 2))) == (
        "kind.tar: storage 1000 holds 16 bytes of F32 but the checkpoint says 16 bytes of F64")
    assert refusal(tar_with(tmp_path / "long.tar", ("storage", fs, "1000", "cpu", 4, None))) == (
        "long.tar: persistent id ('storage', torch.FloatStorage, '1000', 'cpu', 4, None) is not a storage reference")
    assert refusal(tar_with(tmp_path / "count.tar", ("storage", fs, "1000", "cpu", -4))) == (
        "count.tar: storage 1000 size -4 is not a non-negative whole number (of 64 bits at most)")


class Odd:
    """An object whose state is not attributes (what ``__setstate__`` would take): a list."""

    def __reduce__(self):
        return Odd, (), [1, "two"]


class Holder:
    """An object of a class the reader does not know, holding only tensors."""

    def __init__(self, **state: object) -> None:
        self.__dict__.update(state)


def view(n: int = 4) -> Tensor:
    return Tensor(Storage("0", 4), 0, (n,), (1,))


def test_a_placeholder_whose_state_is_not_attributes_keeps_it_as_state(tmp_path: Path) -> None:
    with open_store(zip_checkpoint(tmp_path / "o.pt", {"odd": Odd(), "w": view()}, {"0": FOUR})) as store:
        assert store.names == ["w"]
        assert store.values == {"odd": {"__class__": f"{__name__}.Odd", "__state__": [1, "two"]}}


def test_a_placeholder_holding_only_tensors_shows_its_class(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "h.pt", {"h": Holder(a=view(), b=view(2)), "epoch": 1}, {"0": FOUR})
    with open_store(path) as store:
        assert store.names == ["h.a", "h.b"]
        assert store.values == {"h": {"__class__": f"{__name__}.Holder"}, "epoch": 1}


def test_a_key_that_only_looks_numeric_is_text(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "x.pt", {"X1": {"w": view()}, "-2": {"v": view(1)}}, {"0": FOUR})
    with open_store(path, top_level_key="X1") as store:
        assert store.names == ["w"]
    with open_store(path, top_level_key="-2") as store:
        assert store.names == ["v"]
    assert refusal(path, top_level_key="X2") == "x.pt: has no top-level key 'X2'; its top-level keys are: 'X1', '-2'"


class Link:
    """One level of a chain: an unknown class called with a dict whose key is a tuple, holding the next level.
    The unpickler counts the dict and its tuple key; the walk counts the arguments, the dict and the object."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __reduce__(self):
        return Link, ({(0,): self.inner},)


def chain(path: Path, levels: int) -> Path:
    node: object = view()
    for _ in range(levels):
        node = Link(node)
    return zip_checkpoint(path, node, {"0": FOUR})


def test_nesting_through_keys_that_are_not_text_counts_each_level_once(tmp_path: Path) -> None:
    deepest = MAX_DEPTH // 3  # each link is three levels of the walk: its arguments, the dict, the next object
    with open_store(chain(tmp_path / "ok.pt", deepest)) as store:
        assert store.names == [".".join(["__args__", "0", "(0,)"] * deepest)]
        # each dict whose key is not text, innermost first: the walk records a key after its branch
        assert store.guessed_keys == tuple(".".join(["__args__", "0", "(0,)"] * n) for n in range(deepest, 0, -1))
    assert refusal(chain(tmp_path / "deep.pt", deepest + 1)) == (
        f"deep.pt: the checkpoint is nested deeper than {MAX_DEPTH} levels")
