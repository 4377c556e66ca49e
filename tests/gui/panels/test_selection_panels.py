"""The details and values panels answer what a user asks of one tensor, in the terms of its dtype."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication, QLabel

from engine import ArrayStore
from engine.tree import build_tree
from gui.models.slice_model import SliceModel
from gui.numbers import digits_for, format_number
from gui.panels.details import DetailsPanel
from gui.panels.values import block_extremes
from gui.workers import TaskRunner


@pytest.fixture
def details(qtbot):
    panel = DetailsPanel(TaskRunner())
    qtbot.addWidget(panel)
    panel.resize(420, 600)
    panel.show()
    return panel


def _show(panel: DetailsPanel, qtbot, array: np.ndarray) -> dict[str, str]:
    """Select a one-tensor store's tensor in the panel; the statistics shown, by key."""
    store = ArrayStore({"t": array})
    panel.show_node(build_tree(store.entries).find("t"), None)
    qtbot.waitUntil(lambda: panel.stats is not None, timeout=30_000)
    return {label.objectName()[5:]: label.text() for label in panel.findChildren(QLabel)
            if label.objectName().startswith("stat_")}


def test_bool_statistics_are_a_count_and_the_share_true(details, qtbot):
    shown = _show(details, qtbot, np.array([True, False, True, True, False]))
    assert shown == {"count": "5", "true": "3 (60.0%)"}


def test_integer_statistics_have_no_nan_or_inf_rows(details, qtbot):
    shown = _show(details, qtbot, np.arange(-5, 20, dtype=np.int32))
    assert shown["min"] == "-5" and shown["max"] == "19" and shown["zeros"] == "4.0%"
    assert not {"nan", "pos_inf", "neg_inf", "abs_max", "l2"} & shown.keys()


def test_float_statistics_add_abs_max_l2_percentiles_and_signed_infinities(details, qtbot):
    shown = _show(details, qtbot, np.array([-4.0, 1.0, 2.0, np.inf, -np.inf, np.inf, np.nan], np.float32))
    assert (shown["abs_max"], shown["l2"]) == ("4", format_number(float(np.sqrt(21.0))))
    assert (shown["pos_inf"], shown["neg_inf"], shown["nan"]) == ("2", "1", "1")
    assert {"p1", "p50", "p99"} <= shown.keys() and shown["p50"] == "1"
    assert "NaN or infinite" in details.stats_status.text()


def test_bf16_values_are_shown_with_the_digits_they_hold(details, qtbot):
    shown = _show(details, qtbot, np.array([0.0353553, -0.0353553], ml_dtypes.bfloat16))
    assert shown["max"] == "0.0354"  # 3 significant digits, not 0.0353516
    model = SliceModel()
    model.set_array(np.array([[0.0353553]], ml_dtypes.bfloat16))
    assert model.index(0, 0).data() == "0.0354"
    assert digits_for("float16") == 4 and digits_for("F32") == 6


def test_a_scalar_histogram_shows_its_value_not_an_invented_range(details, qtbot):
    _show(details, qtbot, np.array(3.5, np.float32))
    assert details.histogram.is_constant() and details.histogram.value_range() == (3.5, 3.5)
    assert "3.5" in details.histogram.toolTip()


def test_the_log_count_toggle_switches_the_histogram_scale(details, qtbot):
    _show(details, qtbot, np.random.default_rng(0).normal(size=1000).astype(np.float32))
    assert not details.histogram.log_counts
    details.log_counts.setChecked(True)
    assert details.histogram.log_counts


def test_nan_and_inf_cells_are_highlighted_in_the_table():
    model = SliceModel()
    model.set_array(np.array([[1.0, np.nan, np.inf]], np.float32))
    backgrounds = [model.index(0, c).data(Qt.ItemDataRole.BackgroundRole) for c in range(3)]
    assert backgrounds[0] is None and backgrounds[1] is not None and backgrounds[2] is not None
    assert [model.index(0, c).data() for c in range(3)] == ["1", "NaN", "+Inf"]


def test_downsampling_keeps_each_blocks_extreme_and_its_nan():
    cells = np.zeros((6, 6), np.float32)
    cells[1, 1], cells[4, 5], cells[0, 4] = -9.0, 7.0, np.nan
    np.testing.assert_array_equal(block_extremes(cells, (3, 3)), [[-9.0, np.nan], [0.0, 7.0]])


def test_hovering_the_heat_map_shows_the_cells_index_and_value(heat_map):
    array = np.arange(12, dtype=np.float32).reshape(3, 4) / 8
    heat = heat_map(array)
    area = heat.image_area()
    point = QPointF(area.left() + area.width() * 3.5 / 4, area.top() + area.height() * 1.5 / 3)  # row 1, col 3
    QApplication.sendEvent(heat, QMouseEvent(QEvent.Type.MouseMove, point, point, Qt.MouseButton.NoButton,
                                             Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier))
    assert heat.hover_text == f"[1, 3] = {format_number(array[1, 3])}"
    heat.zoom(2.0, point)  # zoomed around the pointer, the same cell stays under it
    assert heat.cell_at(point) == (1, 3)
