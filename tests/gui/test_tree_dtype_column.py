"""The tree's DType column shows a quantized tensor's whole dtype at 1024x640: ``QFLOAT``, not
``QF…AT``, and its tooltip names the scheme in words, so a user can tell quantized tensors apart at a glance.

Promises (README "The window"): the DType column fits the store's longest dtype name ->
test_a_quantized_dtype_shows_whole_at_1024x640; its tooltip holds the whole dtype and a quantized tensor's
scheme -> test_the_dtype_tooltip_holds_the_whole_dtype_and_the_scheme.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QStyle, QStyleOptionViewItem

from gui.main_window import MainWindow
from gui.models.tree_model import Column

from tests.helpers.formats_quantized_files import f32, gen2, i8, write


@pytest.fixture
def quantized_model(tmp_path) -> Path:
    """Three layers, each a Q8S weight in blocks of 4, an F32 bias and a native bool mask (a Burnpack)."""
    tensors = {}
    for layer in range(3):
        prefix = f"encoder.layers.{layer}"
        tensors[f"{prefix}.query.weight"] = ({"QFloat": gen2(store="Native", blocks=(4,))}, [2, 4],
                                             i8(-7, -3, 0, 5, 7, 1, -1, 2) + f32(0.5, 0.25))
        tensors[f"{prefix}.query.bias"] = ("F32", [4], f32(1, 2, 3, 4))
        tensors[f"{prefix}.mask"] = ({"Bool": "Native"}, [2], bytes([1, 0]))
    return write(tmp_path, tensors)


def _dtype_cell(view, path: str) -> QModelIndex:
    assert view.select(path)
    return view.tree_view.currentIndex().siblingAtColumn(Column.DTYPE)


def _drawn_text(view, index: QModelIndex) -> str:
    """The text the view draws in a cell at its current width (elided as Qt's item painting elides it)."""
    tree = view.tree_view
    option = QStyleOptionViewItem()
    option.rect = tree.visualRect(index)
    option.widget = tree
    tree.itemDelegateForIndex(index).initStyleOption(option, index)
    style = tree.style()
    rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, option, tree)
    margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, tree) + 1
    return option.fontMetrics.elidedText(option.text, Qt.TextElideMode.ElideRight, rect.width() - 2 * margin)


def test_a_quantized_dtype_shows_whole_at_1024x640(window: MainWindow, open_view, quantized_model, qtbot):
    window.resize(1024, 640)
    view = open_view(quantized_model)
    qtbot.waitUntil(lambda: view.tree_view.viewport().width() < 700)  # the smaller window has laid out
    assert not view.tree_view.isColumnHidden(Column.DTYPE)
    cell = _dtype_cell(view, "encoder.layers.1.query.weight")
    assert cell.data() == "QFLOAT"
    assert _drawn_text(view, cell) == "QFLOAT"
    assert _drawn_text(view, _dtype_cell(view, "encoder.layers.1.mask")) == "BOOL"


def test_the_dtype_tooltip_holds_the_whole_dtype_and_the_scheme(window: MainWindow, open_view, quantized_model):
    view = open_view(quantized_model)
    tip = _dtype_cell(view, "encoder.layers.0.query.weight").data(Qt.ItemDataRole.ToolTipRole)
    assert tip == "QFLOAT: Q8S, blocks of 4, F32 block scales"
    assert _dtype_cell(view, "encoder.layers.0.query.bias").data(Qt.ItemDataRole.ToolTipRole) == "F32"
