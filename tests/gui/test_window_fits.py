"""Every state of the window fits a 1024x640 screen, and the tree's Name column keeps its room."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication, QMessageBox
from safetensors.numpy import save_file

from tests.helpers.samples import SAMPLES
from gui.main_window import DEFAULT_SIZE, MainWindow, default_size
from gui.models.tree_model import Column

SCREEN = (1024, 640)
RECIPE = SAMPLES / "pytorch_to_burn.recipe.json"


@pytest.fixture(autouse=True)
def discard_on_close(monkeypatch) -> None:
    monkeypatch.setattr(MainWindow, "ask_save", lambda self, view: QMessageBox.StandardButton.Discard)


def _settle(window: MainWindow, qtbot) -> None:
    qtbot.waitUntil(window.is_idle, timeout=20_000)
    diff = window.diff_panel()
    if diff is not None:
        qtbot.waitUntil(diff.is_idle, timeout=20_000)
    QApplication.processEvents()


def _fits(window: MainWindow) -> tuple[int, int]:
    hint, minimum = window.minimumSizeHint(), window.minimumSize()
    return max(hint.width(), minimum.width()), max(hint.height(), minimum.height())


def _visible_rows(table) -> int:
    return table.viewport().height() // table.verticalHeader().defaultSectionSize()


def test_the_minimum_size_stays_within_1024x640_in_every_state(window: MainWindow, open_view, qtbot):
    window.resize(*SCREEN)
    view = open_view(SAMPLES / "sample_cnn.pt")
    _settle(window, qtbot)
    sizes = {"opened": _fits(window)}
    assert view.select("fc1.weight")
    _settle(window, qtbot)
    sizes["selected"] = _fits(window)
    window.open_recipe(RECIPE)
    _settle(window, qtbot)
    sizes["workbench"] = _fits(window)
    window.show_diff()
    window.diff_panel().compare_with_file(SAMPLES / "sample_cnn.bpk")
    _settle(window, qtbot)
    sizes["diff"] = _fits(window)
    assert all(w <= SCREEN[0] and h <= SCREEN[1] for w, h in sizes.values()), sizes
    assert window.size().toTuple() == SCREEN  # nothing made the window grow past the screen


def test_at_1024x640_the_preview_and_diff_tables_show_six_rows(window: MainWindow, open_view, qtbot):
    window.resize(*SCREEN)
    view = open_view(SAMPLES / "sample_cnn.pt")
    assert view.select("norm1.weight")  # the selection's details and values take their room above
    window.open_recipe(RECIPE)
    window.show_diff()
    window.diff_panel().compare_with_file(SAMPLES / "sample_cnn.bpk")
    _settle(window, qtbot)
    window.docks["preview"].raise_()
    QApplication.processEvents()
    assert _visible_rows(window.panels["preview"].table) >= 6
    window.diff_dock.raise_()
    QApplication.processEvents()
    assert _visible_rows(window.diff_panel().table) >= 6


@pytest.mark.parametrize("surgery", [False, True])
def test_the_name_column_keeps_at_least_40_percent_of_the_tree_at_1024(window: MainWindow, open_view, qtbot,
                                                                        surgery: bool):
    window.resize(*SCREEN)
    view = open_view(SAMPLES / "sample_cnn.pt")
    if surgery:
        window.open_recipe(RECIPE)
    _settle(window, qtbot)
    header = view.tree_view.header()
    width = view.tree_view.viewport().width()
    assert header.sectionSize(Column.NAME) >= 0.4 * width
    if surgery:  # the recipe's word keeps a column of its own, wide enough for one word ("transposed")
        assert not view.tree_view.isColumnHidden(Column.RECIPE)
        metrics = view.tree_view.fontMetrics()
        assert header.sectionSize(Column.RECIPE) > metrics.horizontalAdvance("transposed")


def test_a_long_name_elides_in_the_details_and_the_layout_does_not_jump(window: MainWindow, open_view, qtbot,
                                                                         tmp_path: Path):
    long_name = "model.encoder.block.0.layer.0.SelfAttention.relative_attention_bias_with_a_very_long_name.weight"
    path = tmp_path / "long.safetensors"
    save_file({long_name: np.ones((3, 4), np.float32), "short.weight": np.ones(2, np.float32)}, str(path))
    window.resize(*SCREEN)
    view = open_view(path)
    assert view.select("short.weight")
    _settle(window, qtbot)
    before = view.main_split.sizes()
    assert view.select(long_name)
    _settle(window, qtbot)
    title = view.details.title
    assert title.full_text == long_name and title.toolTip() == long_name
    assert "…" in title.text() and len(title.text()) < len(long_name)
    assert view.main_split.sizes() == before and window.size().toTuple() == SCREEN


def test_the_first_start_opens_within_a_small_screen():
    assert default_size((1024, 640)) == (921, 576)
    assert default_size((2560, 1440)) == DEFAULT_SIZE
