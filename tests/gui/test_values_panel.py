"""The heat map as painted: each value a crisp block of its colour, in its place, NaN grey, and a scale bar.

Checked on the rendered pixels (``widget.grab()``), with colours taken from the colour stops, not
from the function that maps values to colours.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage

from gui.panels.values import DIVERGING, NAN_COLOUR, SEQUENTIAL, HeatMap, make_slice


def rendered(widget: HeatMap) -> np.ndarray:
    """The widget's pixels as rows x cols x RGB."""
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    width, height, stride = image.width(), image.height(), image.bytesPerLine()
    raw = np.frombuffer(image.constBits(), np.uint8, count=height * stride).reshape(height, stride)
    return raw[:, :width * 3].reshape(height, width, 3).copy()


def where(pixels: np.ndarray, colour, run: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the pixels that have exactly ``colour``, in rows holding at least ``run`` of them
    (blocks, not the grey of the hint text's glyphs)."""
    hits = (pixels == np.asarray(colour, np.uint8)).all(axis=2)
    hits &= (hits.sum(axis=1) >= run)[:, None]
    return np.nonzero(hits)


def heat_map(qtbot, array: np.ndarray) -> HeatMap:
    widget = HeatMap()
    qtbot.addWidget(widget)
    widget.resize(240, 300)
    widget.set_view(make_slice(array, ()))
    return widget


def test_signed_values_paint_blue_low_red_high_and_nan_grey_in_their_cells(qapp, qtbot):
    pixels = rendered(heat_map(qtbot, np.array([[-2.0, 2.0], [2.0, np.nan]], np.float32)))
    low, high = DIVERGING[0].astype(np.uint8), DIVERGING[-1].astype(np.uint8)
    low_rows, low_cols = where(pixels, low)
    high_rows, high_cols = where(pixels, high)
    nan_rows, nan_cols = where(pixels, NAN_COLOUR)
    cell = len(nan_rows)
    assert cell > 400  # a block of pixels per value, not a dot
    assert abs(len(low_rows) - cell) < cell * 0.1 and abs(len(high_rows) - 2 * cell) < cell * 0.2
    # the low value's block is above and left of the NaN block: no smoothing smeared them together
    assert low_rows.max() < nan_rows.min() and low_cols.max() < nan_cols.min()
    top_right = (high_rows < nan_rows.min()) & (high_cols > low_cols.max())
    bottom_left = (high_rows > low_rows.max()) & (high_cols < nan_cols.min())
    assert top_right.sum() + bottom_left.sum() >= len(high_rows) - 4  # the legend's gradient ends may match too
    assert abs(top_right.sum() - bottom_left.sum()) < cell * 0.1


def test_the_scale_bar_runs_from_the_lowest_to_the_highest_colour_below_the_image(qapp, qtbot):
    pixels = rendered(heat_map(qtbot, np.arange(6, dtype=np.float64).reshape(2, 3)))  # all >= 0: sequential
    first, last = SEQUENTIAL[0].astype(np.uint8), SEQUENTIAL[-1].astype(np.uint8)
    image_rows, _ = where(pixels, first)
    coloured = np.abs(pixels.astype(int) - pixels[0, 0].astype(int)).sum(axis=2) > 30
    wide = np.nonzero(coloured.sum(axis=1) > 0.9 * pixels.shape[1])[0]
    bar = wide[wide > wide[-1] - 5]  # the lowest band as wide as the widget: the scale bar
    assert bar.min() > image_rows.max() and len(bar) == 5, "no scale bar below the image"
    row = pixels[bar[2]]
    columns = np.nonzero(coloured[bar[2]])[0]
    left, right = row[columns.min()].astype(int), row[columns.max()].astype(int)
    assert np.abs(left - first).max() <= 8 and np.abs(right - last).max() <= 8


def test_no_finite_value_paints_no_colour(qapp, qtbot):
    pixels = rendered(heat_map(qtbot, np.full((3, 3), np.nan, np.float32)))
    for colour in (*DIVERGING, *SEQUENTIAL, NAN_COLOUR):
        assert len(where(pixels, np.asarray(colour, np.uint8))[0]) == 0


def test_large_slices_are_sampled_and_say_so(qapp, qtbot):
    view = make_slice(np.arange(1030 * 3, dtype=np.float32).reshape(1030, 3), ())
    assert view.step == (3, 1) and view.rgb.shape == (344, 3, 3)
    widget = HeatMap()
    qtbot.addWidget(widget)
    widget.resize(240, 300)
    widget.set_view(view)
    assert len(where(rendered(widget), SEQUENTIAL[-1].astype(np.uint8))[0]) > 0
