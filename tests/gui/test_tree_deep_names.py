"""Names of any depth or length in the window: at most MAX_DEPTH levels, the name elided in the middle in the
tree, whole in the tooltip (up to TOOLTIP_CHARS), copied whole, found by search; a hostile name must
neither freeze the window nor hide what the tensor is called."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QGuiApplication
from safetensors.numpy import save_file

from engine.tree import MAX_DEPTH
from gui.main_window import MainWindow
from gui.widgets import LINE_CHARS, TOOLTIP_CHARS

SEGMENTS = ["abcdefghij"[i % 10] for i in range(50_000)]
DEEP = ".".join(SEGMENTS)  # a hostile name: 50,000 segments, 99,999 characters
LONG = ".".join(f"{i:02d}" * 12_000 for i in range(MAX_DEPTH + 2))  # 66 segments of 24,000 characters
TOOLTIP = Qt.ItemDataRole.ToolTipRole


def _save(path: Path, *names: str) -> Path:
    save_file({name: np.full(2, i, np.float32) for i, name in enumerate(names)}, str(path))
    return path


def _children(model, parent: QModelIndex) -> list[QModelIndex]:
    return [model.index(row, 0, parent) for row in range(model.rowCount(parent))]


def test_the_deepest_name_shows_as_its_first_levels_over_its_tail(window: MainWindow, open_view, tmp_path):
    view = open_view(_save(tmp_path / "deep.safetensors", DEEP, "head.weight"))
    model = view.model
    chain = next(index for index in _children(model, QModelIndex()) if index.data() != "head")
    assert chain.data() == ".".join(SEGMENTS[:MAX_DEPTH - 1])  # one row for 63 levels of single groups
    (leaf,) = _children(model, chain)
    tail = ".".join(SEGMENTS[MAX_DEPTH - 1:])
    shown = leaf.data()
    assert len(shown) == LINE_CHARS and shown.startswith(tail[:500]) and shown.endswith(tail[-500:]) and "…" in shown
    assert leaf.data(TOOLTIP) == DEEP and model.rowCount(leaf) == 0
    assert view.tree_view.isExpanded(chain)  # a small store opens fully: two levels, not 50,000
    assert view.tree_view.textElideMode() == Qt.TextElideMode.ElideMiddle


def test_copy_name_and_the_details_title_hold_the_whole_deep_name(window: MainWindow, open_view, tmp_path):
    view = open_view(_save(tmp_path / "deep.safetensors", DEEP, "head.weight"))
    assert view.select(DEEP) and view.current_node().entry.name == DEEP
    window.copy_current_path()
    assert QGuiApplication.clipboard().text() == DEEP
    assert view.details.title.full_text == DEEP


def test_search_finds_the_deep_name_by_its_end_and_selects_it(window: MainWindow, open_view, tmp_path):
    view = open_view(_save(tmp_path / "deep.safetensors", DEEP, "head.weight"))
    result = view.apply_filter(DEEP[-40:], regex=False)
    assert (result.matches, result.error) == (1, None)
    assert view.select(DEEP) and view.current_node().path == DEEP


def test_a_name_of_megabytes_reaches_qt_clipped_and_is_copied_whole(window: MainWindow, open_view, tmp_path):
    """Qt lays out every character it is handed: a 3 MB tooltip took 1.2 GB and 5 s."""
    view = open_view(_save(tmp_path / "long.safetensors", LONG))
    assert view.select(LONG)
    index = view.tree_view.currentIndex()
    assert len(index.data()) == LINE_CHARS and index.data().endswith(LONG[-100:])
    tip = index.data(TOOLTIP)
    assert len(tip) == TOOLTIP_CHARS and tip.startswith(LONG[:1000]) and tip.endswith(LONG[-1000:])
    title = view.details.title
    assert title.full_text == LONG and len(title.text()) < LINE_CHARS and len(title.toolTip()) == TOOLTIP_CHARS
    window.copy_current_path()
    assert QGuiApplication.clipboard().text() == LONG
