"""The tree as a user reads it: compacted chains, the file's own order, sorting by a header click, search."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
from PySide6.QtCore import QModelIndex, QPoint, Qt
from PySide6.QtTest import QTest
from safetensors.numpy import save_file

from gui.main_window import MainWindow
from gui.models.tree_model import Column
from gui.resources import icon

T5_NAMES = ["shared.weight"] + [f"encoder.block.0.layer.0.SelfAttention.{x}.weight" for x in "qkvo"] + [
    "encoder.block.0.layer.0.layer_norm.weight", "encoder.block.0.layer.1.DenseReluDense.wi.weight",
    "encoder.block.0.layer.1.DenseReluDense.wo.weight", "encoder.block.0.layer.1.layer_norm.weight"]


def _rows(model, parent=None) -> list[str]:
    """Every row the view can show, depth first, as its Name text."""
    parent = parent if parent is not None else QModelIndex()
    out = []
    for row in range(model.rowCount(parent)):
        index = model.index(row, 0, parent)
        out.append(index.data())
        out += _rows(model, index)
    return out


def _top(model) -> list[str]:
    return [model.index(r, 0).data() for r in range(model.rowCount())]


def _t5(tmp_path: Path) -> Path:
    path = tmp_path / "t5.safetensors"
    save_file({name: np.ones((2, 2), np.float32) for name in T5_NAMES}, str(path))
    return path


def _click_header(view, column: int) -> None:
    header = view.tree_view.header()
    x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
    QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, header.height() // 2))


def test_a_t5_like_file_shows_its_single_child_chain_as_one_row(window: MainWindow, open_view, tmp_path: Path):
    view = open_view(_t5(tmp_path))
    rows = _rows(view.model)
    assert len(rows) == 23  # 26 without compaction: encoder, block and 0 fold into one row
    assert "encoder.block.0.layer" in _top(view.model)
    assert view.select("encoder.block.0") and view.current_node().path == "encoder.block.0.layer"


def test_the_flat_list_shows_every_full_name_once(window: MainWindow, open_view, tmp_path: Path):
    view = open_view(_t5(tmp_path))
    view.flat.setChecked(True)
    assert sorted(_rows(view.model)) == sorted(T5_NAMES)
    view.flat.setChecked(False)
    assert len(_rows(view.model)) == 23


def test_a_checkpoint_opens_in_the_order_the_model_saved_its_tensors(window: MainWindow, open_view,
                                                                     tmp_path: Path):
    path = tmp_path / "model.pt"
    names = ["stem.weight", "blocks.10.weight", "blocks.2.weight", "head.weight", "head.bias"]
    torch.save(OrderedDict((name, torch.zeros(3)) for name in names), path)
    view = open_view(path)
    assert _top(view.model) == ["stem", "blocks", "head"]
    blocks = view.model.index(1, 0)
    assert [view.model.index(r, 0, blocks).data() for r in range(view.model.rowCount(blocks))] == ["10", "2"]
    view.order.setCurrentText("Name order")  # natural sort, as an option
    assert _top(view.model) == ["blocks", "head", "stem"]
    assert [view.model.index(r, 0, blocks).data() for r in range(view.model.rowCount(blocks))] == ["2", "10"]


def test_clicking_a_header_sorts_largest_first_then_smallest_then_file_order(window: MainWindow, open_view,
                                                                              tmp_path: Path):
    path = tmp_path / "sizes.safetensors"
    save_file({"a.weight": np.zeros(10, np.float32), "b.weight": np.zeros(1000, np.float32),
               "c.weight": np.zeros(100, np.float32)}, str(path))
    view = open_view(path)
    file_order = _top(view.model)
    current = view.select("c.weight")
    _click_header(view, Column.PARAMS)
    assert _top(view.model) == ["b", "c", "a"]  # largest first
    assert current and view.current_node().path == "c.weight"  # the selection follows its row
    _click_header(view, Column.PARAMS)
    assert _top(view.model) == ["a", "c", "b"]
    _click_header(view, Column.PARAMS)
    assert _top(view.model) == file_order


def test_a_large_file_opens_showing_its_first_levels(window: MainWindow, open_view, tmp_path: Path):
    path = tmp_path / "big.safetensors"
    save_file({f"model.layers.{i}.{p}": np.zeros(2, np.float32) for i in range(30) for p in ("q", "k", "v")},
              str(path))
    view = open_view(path)
    assert _top(view.model) == ["model.layers"]
    assert view.tree_view.isExpanded(view.model.index(0, 0))  # 90 tensors: not all open, but not one closed row
    assert not view.tree_view.isExpanded(view.model.index(0, 0, view.model.index(0, 0)))


def test_search_results_are_compacted_and_a_regex_searched_as_text_says_so(window: MainWindow, open_view, qtbot,
                                                                            tmp_path: Path):
    view = open_view(_t5(tmp_path))
    qtbot.keyClicks(window.search, "layer_norm")
    qtbot.waitUntil(lambda: view.filter_result.matches == 2, timeout=30_000)
    assert _top(view.model) == ["encoder.block.0.layer"]
    window.search.setText("^encoder")
    window.apply_filter()
    assert "searched as text" in window.match_label.text() and view.filter_result.matches == 0
    window.regex.setChecked(True)
    assert view.filter_result.matches == 8 and "searched as text" not in window.match_label.text()
    on_icon = window.regex.icon().pixmap(16, 16).toImage()
    assert on_icon == icon("regex-on").pixmap(16, 16).toImage() != icon("regex").pixmap(16, 16).toImage()
