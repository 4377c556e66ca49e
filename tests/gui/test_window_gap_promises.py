"""README "The window" promises about what the widgets paint and elide, each with the test that fails when it breaks
(the section's other pairs: test_window_promises.py). Real widgets, offscreen, through pytest-qt; the painted ones
are read from their pixels.

Promise -> test:
- the search box's `.*` toggle is filled blue when on ->
  here::test_the_regex_toggle_is_filled_blue_only_when_on (checked: the outline icon kept when on fails it)
- the histogram has a value axis with ticks and a zero line ->
  here::test_the_histogram_draws_a_zero_line_only_when_its_range_spans_zero (checked: no zero line fails it),
  here::test_the_histogram_axis_has_tick_marks_at_round_values (checked: no tick marks fails it); the log-count
  toggle raises the small bars -> here::test_the_log_count_toggle_raises_the_small_bars (checked: a linear scale
  under the toggle fails it)
- long names elide in the middle, the full name in the tooltip ->
  here::test_a_long_name_elides_in_the_middle_with_the_whole_name_in_its_tooltip (checked: the group's last
  segment as the tooltip fails it)
- a `.gz` record's temporary copy is removed when its tab closes (README "Remote files", what is cached where:
  "as for local records") -> here::test_closing_the_tab_of_a_gz_record_removes_its_temporary_copy (checked:
  keeping the copy on close fails it)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage, QPalette
from safetensors.numpy import save_file

from engine.stats import compute_stats
from gui.panels.histogram import HistogramWidget, nice_ticks

from tests.helpers.formats_burn_record_writers import Settings, model_item, write_record

WIDTH, HEIGHT = 401, 150


def painted(qtbot, values: np.ndarray, log_counts: bool = False) -> tuple[HistogramWidget, QImage]:
    widget = HistogramWidget()
    qtbot.addWidget(widget)
    widget.resize(WIDTH, HEIGHT)
    widget.set_stats(compute_stats(values))
    widget.set_log_counts(log_counts)
    return widget, widget.grab().toImage()


def plot_area(widget: HistogramWidget) -> tuple[int, int, int, int]:
    """left, top, right, bottom of the bars' area, as paintEvent lays it out."""
    line = widget.fontMetrics().height()
    return 1, line + 2, WIDTH - 1, HEIGHT - (line + 6)


def column_hits(image: QImage, x: int, top: int, bottom: int, colour: QColor) -> int:
    return sum(image.pixelColor(x, y).rgb() == colour.rgb() for y in range(top, bottom))


def test_the_histogram_draws_a_zero_line_only_when_its_range_spans_zero(qtbot):
    around_zero = np.linspace(-1.0, 3.0, 4001, dtype=np.float32)  # zero a quarter of the way along
    widget, image = painted(qtbot, around_zero)
    left, top, right, bottom = plot_area(widget)
    text = widget.palette().color(QPalette.ColorRole.Text)
    zero_x = round(left + 0.25 * (right - left))
    dashes = max(column_hits(image, x, top, bottom, text) for x in range(zero_x - 1, zero_x + 2))
    assert dashes >= (bottom - top) // 4  # a dashed line down the whole area
    widget, image = painted(qtbot, around_zero + 2.0)  # 1 .. 5: no zero to mark
    assert max(column_hits(image, x, top, bottom, text) for x in range(left, right)) == 0


def test_the_histogram_axis_has_tick_marks_at_round_values(qtbot):
    values = np.linspace(0.0, 4.0, 4001, dtype=np.float32)
    assert nice_ticks(0.0, 4.0) == [0.0, 1.0, 2.0, 3.0, 4.0]
    widget, image = painted(qtbot, values)
    left, _, right, bottom = plot_area(widget)
    text = widget.palette().color(QPalette.ColorRole.Text)
    below = [x for x in range(WIDTH) if image.pixelColor(x, bottom + 2).rgb() == text.rgb()]
    marks = [x for i, x in enumerate(below) if i == 0 or x != below[i - 1] + 1]  # one per run of pixels
    expected = [round(left + v / 4.0 * (right - left)) for v in (0, 1, 2, 3, 4)]
    assert len(marks) == 5 and all(abs(a - b) <= 1 for a, b in zip(marks, expected)), (marks, expected)


def test_the_log_count_toggle_raises_the_small_bars(qtbot):
    values = np.concatenate([np.zeros(10_000, np.float32), np.linspace(0.5, 1.0, 64, dtype=np.float32)])
    heights = []
    for log_counts in (False, True):
        widget, image = painted(qtbot, values, log_counts)
        left, top, right, bottom = plot_area(widget)
        bar = widget.palette().color(QPalette.ColorRole.Highlight)
        x = round(left + 0.75 * (right - left))  # a bin of one or two values
        heights.append(column_hits(image, x, top, bottom, bar))
    linear, log = heights
    assert linear <= 2 and log > 10 * max(linear, 1)


def icon_pixels(action) -> QImage:
    return action.icon().pixmap(16, 16).toImage()


def blue_share(image: QImage) -> float:
    pixels = [image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())]
    blue = [c for c in pixels if c.alpha() > 200 and c.blue() > 150 and c.blue() > c.red() + 60]
    return len(blue) / len(pixels)


def test_the_regex_toggle_is_filled_blue_only_when_on(window, open_view):
    open_view(Path(__file__).resolve().parents[2] / "resources" / "samples" / "sample_cnn.bpk")
    assert not window.regex.isChecked() and blue_share(icon_pixels(window.regex)) == 0
    window.regex.setChecked(True)
    assert blue_share(icon_pixels(window.regex)) > 0.5  # filled, not an outline
    window.regex.setChecked(False)
    assert blue_share(icon_pixels(window.regex)) == 0


def test_closing_the_tab_of_a_gz_record_removes_its_temporary_copy(window, open_view, qtbot, tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    item, _ = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="NamedMpkGz"))
    view = open_view(path)
    assert len(list(scratch.iterdir())) == 1
    window.close_tab(window.tabs.indexOf(view))
    qtbot.waitUntil(lambda: window.work.active == 0)
    assert list(scratch.iterdir()) == []


def test_a_long_name_elides_in_the_middle_with_the_whole_name_in_its_tooltip(window, open_view, tmp_path):
    long_name = "model.encoder.block.0.layer.0.SelfAttention.relative_attention_bias_of_a_very_long_name.weight"
    arrays = {long_name: np.ones(3, np.float32), "other.weight": np.ones(2, np.float32)}
    save_file(arrays, str(tmp_path / "m.safetensors"))
    view = open_view(tmp_path / "m.safetensors")
    view.flat.setChecked(True)
    model = view.model
    index = next(model.index(r, 0) for r in range(model.rowCount()) if model.index(r, 0).data() == long_name)
    assert index.data(Qt.ItemDataRole.ToolTipRole) == long_name
    assert view.tree_view.textElideMode() == Qt.TextElideMode.ElideMiddle  # a row keeps both its ends
    view.flat.setChecked(False)  # compacted: the row reads a part of the name, the tooltip the whole of it
    leaf = view.model.index(0, 0)
    while view.model.rowCount(leaf):
        leaf = view.model.index(0, 0, leaf)
    assert leaf.data(Qt.ItemDataRole.ToolTipRole) in (long_name, "other.weight")
    assert leaf.data(Qt.ItemDataRole.ToolTipRole).endswith(leaf.data())
