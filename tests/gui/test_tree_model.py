"""The Qt adapter over engine.tree: a correct QAbstractItemModel that stays lazy for huge stores."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QModelIndex, Qt

from engine import ArrayStore, TensorEntry
from engine.dtypes import F32
from engine.tree import build_tree
from gui.models.tree_model import NODE_ROLE, Column, TreeModel
from gui.resources import monospace


def test_the_model_passes_qts_model_tester(qtmodeltester):
    store = ArrayStore({name: np.zeros((2, 3), np.float32) for name in
                        ("layer.10.w", "layer.2.w", "layer.2.b", "head", "a", "a.b")})
    model = TreeModel(build_tree(store.entries))
    qtmodeltester.check(model, force_py=True)
    layer = model.index(2, 0)
    assert layer.data() == "layer"
    assert [model.index(r, 0, layer).data() for r in range(model.rowCount(layer))] == ["2", "10"]
    assert model.index(0, Column.SHAPE, layer).data() == "2 tensors"
    leaf = model.index(0, 0, model.index(0, 0, layer))
    assert leaf.data(NODE_ROLE).path == "layer.2.b"
    assert model.parent(leaf) == model.index(0, 0, layer)
    assert model.index(0, Column.DTYPE, layer).data() == ""  # a group has no single dtype
    assert leaf.siblingAtColumn(Column.SHAPE).data() == "[2, 3]"
    assert leaf.data(Qt.ItemDataRole.FontRole).family() == monospace().family()
    assert leaf.siblingAtColumn(Column.PARAMS).data(Qt.ItemDataRole.FontRole) is None


def test_100000_tensors_cost_nothing_until_a_group_is_opened():
    entries = [TensorEntry(f"model.layers.{i // 100}.mlp.{i % 100}.weight", F32, (8, 8), 256)
               for i in range(100_000)]
    root = build_tree(entries)
    model = TreeModel(root)
    assert model.rowCount() == 1
    top = model.index(0, 0)
    assert model.hasChildren(top)
    assert top.siblingAtColumn(Column.PARAMS).data() == f"{100_000 * 64:,}"
    assert root.find("model")._children is None  # answered without splitting its 100,000 names
    layers = model.index(0, 0, top)
    assert model.rowCount(layers) == 1000
    assert [model.index(r, 0, layers).data() for r in (0, 1, 2, 999)] == ["0", "1", "2", "999"]
    assert model.parent(model.index(5, 0, layers)) == layers
    assert model.rowCount(QModelIndex()) == 1
