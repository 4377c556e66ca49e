"""Objects of classes nothing imports: kept as their class path plus the state they would have received,
in every pickle protocol torch.save can write, with tensors inside read as usual."""

from __future__ import annotations

import collections
import dataclasses
import enum
from pathlib import Path

import pytest
import torch

from engine.formats import open_store


class Slotted:
    __slots__ = ("lr", "weights")

    def __init__(self) -> None:
        self.lr, self.weights = 0.5, torch.ones(2)


class Plain:
    def __init__(self) -> None:
        self.name, self.steps = "run", [1, 2]


class Table(dict):
    """A dict subclass: pickled as NEWOBJ, then SETITEMS into the object, then BUILD of its __dict__."""


class Rows(list):
    pass


@dataclasses.dataclass
class Config:
    width: int
    kind: enum.Enum


class Kind(enum.Enum):
    WIDE = "wide"


@pytest.mark.parametrize("protocol", [1, 2, 4])  # torch cannot write protocol 0 (text persistent ids)
def test_every_shape_of_state_is_kept_with_its_class(tmp_path: Path, protocol: int) -> None:
    table = Table(a=torch.zeros(3), b=1)
    table.note = "kept"
    obj = {**({"slotted": Slotted()} if protocol >= 2 else {}), "plain": Plain(), "table": table, "rows": Rows([torch.ones(1), 2]),
           "config": Config(4, Kind.WIDE), "counts": collections.defaultdict(int, {"x": 2})}
    path = tmp_path / f"objects_p{protocol}.pt"
    torch.save(obj, path, pickle_protocol=protocol)
    here = __name__
    with open_store(path) as store:
        assert store.names == ["slotted.weights"] * (protocol >= 2) + ["table.__items__.a", "rows.__list__.0"]
        assert store.read("table.__items__.a").tolist() == [0.0, 0.0, 0.0]
        values = store.values
        if protocol >= 2:  # __slots__ without __getstate__ needs protocol 2
            assert values["slotted"] == {"__class__": f"{here}.Slotted", "lr": 0.5}
        assert values["plain"] == {"__class__": f"{here}.Plain", "name": "run", "steps": [1, 2]}
        assert values["table"] == {"__class__": f"{here}.Table", "note": "kept", "__items__": {"b": 1}}
        assert values["rows"] == {"__class__": f"{here}.Rows", "__list__": ["<tensor rows.__list__.0>", 2]}
        assert values["config"] == {"__class__": f"{here}.Config", "width": 4,
                                    "kind": {"__class__": f"{here}.Kind", "__args__": ["wide"]}}
        assert values["counts"]["__class__"] == "collections.defaultdict"
        assert values["counts"]["__items__"] == {"x": 2}
        assert {f"{here}.Plain", f"{here}.Table", "collections.defaultdict"} <= set(store.foreign_classes)
