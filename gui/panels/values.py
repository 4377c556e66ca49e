"""A look at a tensor's values: a 2-D slice as a table and as a heat map.

Tensors above two dimensions are shown one 2-D slice at a time (the last two dimensions), chosen with
one spin box per leading dimension. Reading and colouring the slice happens in a worker.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QLinearGradient, QMouseEvent, QPainter, QPaintEvent, QPalette, QWheelEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSpinBox,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine import TensorEntry, humanize, stored_values, why_undecoded
from gui.models.slice_model import SliceModel
from gui.numbers import digits_for, format_number
from gui.workers import Failure, Task, TaskRunner

HEAT_MAX = 512  # heat maps show at most this many rows and columns (blocks of cells beyond that)
BAND_ELEMENTS = 1 << 22  # cells downsampled at a time
ZOOM_STEP = 1.25  # one wheel notch
MIN_WINDOW = 1 / 256  # the deepest zoom: 1/256 of the slice's height or width
# Diverging map for signed values (blue, white, red) and a sequential one (dark blue to yellow) otherwise.
DIVERGING = np.array([[33, 102, 172], [146, 197, 222], [247, 247, 247], [244, 165, 130], [178, 24, 43]], float)
SEQUENTIAL = np.array([[40, 30, 90], [40, 90, 140], [40, 150, 130], [120, 200, 80], [250, 230, 40]], float)
NAN_COLOUR = (128, 128, 128)


def _lut(stops: np.ndarray) -> np.ndarray:
    positions = np.linspace(0, 1, len(stops))
    grid = np.linspace(0, 1, 256)
    return np.stack([np.interp(grid, positions, stops[:, c]) for c in range(3)], axis=1).astype(np.uint8)


@dataclass(frozen=True)
class SliceView:
    """One 2-D slice, ready to show: the cells (a view, not a copy) and a coloured, downsampled image.

    Each image pixel stands for a ``step`` block of cells and shows the block's value of largest magnitude,
    grey when any cell of it is NaN: downsampling never hides the extremes or the NaN a warning reports.
    """

    leading: tuple[int, ...]
    cells: np.ndarray
    rgb: np.ndarray | None  # rows x cols x 3 uint8, None when there are no finite values
    low: float
    high: float
    diverging: bool
    step: tuple[int, int]


def as_2d(array: np.ndarray, leading: tuple[int, ...]) -> np.ndarray:
    """0-D as one cell, 1-D as one column, 2-D as is, higher ranks indexed down to their last two dims."""
    if array.ndim == 0:
        return array.reshape(1, 1)
    if array.ndim == 1:
        return array.reshape(-1, 1)
    return array[leading] if leading else array


def block_extremes(cells: np.ndarray, step: tuple[int, int]) -> np.ndarray:
    """Downsample by ``step`` blocks keeping, per block, the value of largest magnitude; NaN if any cell is NaN.

    Works a band of block rows at a time (about BAND_ELEMENTS cells), so a [151936, 4096] slice never
    needs a float copy of itself.
    """
    rows, cols = cells.shape
    out_rows, out_cols = -(-rows // step[0]), -(-cols // step[1])
    out = np.empty((out_rows, out_cols), np.float32)
    band = max(1, BAND_ELEMENTS // max(1, step[0] * cols))
    for first in range(0, out_rows, band):
        last = min(out_rows, first + band)
        block = np.asarray(cells[first * step[0]:last * step[0]], dtype=np.float32)
        pad = ((0, (last - first) * step[0] - block.shape[0]), (0, out_cols * step[1] - cols))
        block = np.pad(block, pad, mode="edge") if any(p for _, p in pad) else block
        grouped = block.reshape(last - first, step[0], out_cols, step[1]).transpose(0, 2, 1, 3)
        grouped = grouped.reshape(last - first, out_cols, step[0] * step[1])
        nan = np.isnan(grouped)
        filled = np.where(nan, 0, grouped)
        pick = np.abs(filled).argmax(axis=2)
        values = np.take_along_axis(filled, pick[..., None], axis=2)[..., 0]
        values[nan.any(axis=2)] = np.nan
        out[first:last] = values
    return out


def make_slice(array: np.ndarray, leading: tuple[int, ...]) -> SliceView:
    """Pick a slice and colour it; runs in a worker because it touches the tensor's pages."""
    cells = as_2d(array, leading)
    step = (max(1, -(-cells.shape[0] // HEAT_MAX)), max(1, -(-cells.shape[1] // HEAT_MAX)))
    if step == (1, 1) or cells.dtype.kind in "biu":
        sample = np.asarray(cells[::step[0], ::step[1]])
        sample = sample.astype(np.float32) if sample.dtype.kind != "f" or sample.dtype.itemsize < 4 else sample
    else:
        sample = block_extremes(cells, step)
    finite = np.isfinite(sample)
    if not sample.size or not finite.any():
        return SliceView(leading, cells, None, 0.0, 0.0, False, step)
    low, high = float(sample[finite].min()), float(sample[finite].max())
    diverging = low < 0 < high
    if diverging:
        bound = max(-low, high)
        scaled = (sample + bound) / (2 * bound)
    else:
        scaled = (sample - low) / (high - low) if high > low else np.full(sample.shape, 0.5)
    indices = np.clip(np.nan_to_num(scaled, nan=0.0, posinf=1.0, neginf=0.0) * 255, 0, 255).astype(np.uint8)
    rgb = _lut(DIVERGING if diverging else SEQUENTIAL)[indices]
    rgb[np.isnan(sample)] = NAN_COLOUR
    rgb[np.isposinf(sample)] = _lut(DIVERGING if diverging else SEQUENTIAL)[255]
    rgb[np.isneginf(sample)] = _lut(DIVERGING if diverging else SEQUENTIAL)[0]
    return SliceView(leading, cells, np.ascontiguousarray(rgb), low, high, diverging, step)


class HeatMap(QWidget):
    """The slice's image stretched over the whole area without smoothing (each value a crisp block).

    Hovering shows a cell's index and value; the wheel zooms around the pointer, dragging pans, and a
    double click shows the whole slice again. ``hover_text`` is what the legend line shows.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("heatMap")
        self._image: QImage | None = None
        self._view: SliceView | None = None
        self._window = QRectF(0, 0, 1, 1)  # the part of the slice on show, as fractions of its height and width
        self._drag: QPointF | None = None
        self.hover_text = ""
        self.setMinimumSize(80, 40)
        self.setMouseTracking(True)
        self.setCursor(Qt.CursorShape.CrossCursor)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(300, 300)

    def set_view(self, view: SliceView | None) -> None:
        self._view = view
        self._image = None
        self._window = QRectF(0, 0, 1, 1)
        self.hover_text = ""
        if view is not None and view.rgb is not None:
            rows, cols, _ = view.rgb.shape
            self._image = QImage(view.rgb.data, cols, rows, cols * 3, QImage.Format.Format_RGB888).copy()
        self.update()

    # --- geometry ---------------------------------------------------------------------------------
    def image_area(self) -> QRectF:
        legend_height = self.fontMetrics().height() * 3 + 12
        return QRectF(self.rect()).adjusted(4, 4, -4, -legend_height)

    def cell_at(self, pos: QPointF) -> tuple[int, int] | None:
        """The (row, column) of the slice's cell under a point of the widget, or None outside the image."""
        view, area = self._view, self.image_area()
        if view is None or self._image is None or not area.contains(pos):
            return None
        rows, cols = view.cells.shape
        fy = self._window.top() + (pos.y() - area.top()) / area.height() * self._window.height()
        fx = self._window.left() + (pos.x() - area.left()) / area.width() * self._window.width()
        return min(rows - 1, int(fy * rows)), min(cols - 1, int(fx * cols))

    def zoom(self, factor: float, around: QPointF | None = None) -> None:
        """Zoom by ``factor`` (>1 closer) keeping the point ``around`` (default: the centre) in place."""
        area = self.image_area()
        around = around if around is not None else area.center()
        ax = (around.x() - area.left()) / max(1.0, area.width())
        ay = (around.y() - area.top()) / max(1.0, area.height())
        window = self._window
        width = min(1.0, max(MIN_WINDOW, window.width() / factor))
        height = min(1.0, max(MIN_WINDOW, window.height() / factor))
        left = window.left() + ax * (window.width() - width)
        top = window.top() + ay * (window.height() - height)
        self._window = self._clamped(QRectF(left, top, width, height))
        self.update()

    def _clamped(self, window: QRectF) -> QRectF:
        window.moveLeft(min(max(0.0, window.left()), 1.0 - window.width()))
        window.moveTop(min(max(0.0, window.top()), 1.0 - window.height()))
        return window

    # --- events -----------------------------------------------------------------------------------
    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt's name
        steps = event.angleDelta().y() / 120
        if steps:
            self.zoom(ZOOM_STEP ** steps, event.position())
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        if event.button() == Qt.MouseButton.LeftButton:
            self._drag = event.position()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        self._drag = None

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        self._window = QRectF(0, 0, 1, 1)
        self.update()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        pos = event.position()
        if self._drag is not None:
            area = self.image_area()
            dx = (pos.x() - self._drag.x()) / max(1.0, area.width()) * self._window.width()
            dy = (pos.y() - self._drag.y()) / max(1.0, area.height()) * self._window.height()
            self._window = self._clamped(self._window.translated(-dx, -dy))
            self._drag = pos
        self.show_hover(pos)

    def leaveEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        self.hover_text = ""
        self.update()

    def show_hover(self, pos: QPointF) -> None:
        """Say which cell is under ``pos`` and its value (the real cell, not the downsampled block)."""
        cell = self.cell_at(pos)
        if cell is None or self._view is None:
            self.hover_text = ""
        else:
            value = self._view.cells[cell]
            self.hover_text = f"[{cell[0]:,}, {cell[1]:,}] = {format_number(value, digits_for(self._view.cells.dtype))}"
        self.setToolTip(self.hover_text)
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        painter = QPainter(self)
        metrics = self.fontMetrics()
        text = self.palette().color(QPalette.ColorRole.Text)
        view = self._view
        if self._image is None or view is None:
            painter.setPen(text)
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "No finite values to colour.")
            return
        area = self.image_area()
        size = self._image.size()
        source = QRectF(self._window.left() * size.width(), self._window.top() * size.height(),
                        self._window.width() * size.width(), self._window.height() * size.height())
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
        painter.drawImage(area, self._image, source)
        bar = QRectF(area.left(), area.bottom() + 6, area.width(), metrics.height() * 0.8)
        gradient = QLinearGradient(bar.topLeft(), bar.topRight())
        stops = DIVERGING if view.diverging else SEQUENTIAL
        for i, colour in enumerate(stops):
            gradient.setColorAt(i / (len(stops) - 1), QColor(*(int(c) for c in colour)))
        painter.fillRect(bar, gradient)
        painter.setPen(text)
        labels = QRectF(bar.left(), bar.bottom() + 2, bar.width(), metrics.height())
        low, high = (-max(-view.low, view.high), max(-view.low, view.high)) if view.diverging else (view.low, view.high)
        digits = digits_for(view.cells.dtype)
        painter.drawText(labels, Qt.AlignmentFlag.AlignLeft, format_number(low, digits))
        painter.drawText(labels, Qt.AlignmentFlag.AlignRight, format_number(high, digits))
        painter.drawText(labels, Qt.AlignmentFlag.AlignHCenter, "0" if view.diverging else "")
        note = self.hover_text
        if not note:
            zoomed = f"zoom {1 / self._window.width():.3g}× · " if self._window.width() < 1 else ""
            blocks = (f"each pixel the largest |value| of {view.step[0]}×{view.step[1]} cells · "
                      if view.step != (1, 1) else "")
            note = f"{zoomed}{blocks}wheel zooms, drag pans, hover reads a value"
        painter.drawText(QRectF(labels.left(), labels.bottom() + 2, labels.width(), metrics.height()),
                         Qt.AlignmentFlag.AlignLeft, metrics.elidedText(note, Qt.TextElideMode.ElideRight,
                                                                       int(labels.width())))
        painter.end()


class ValuesPanel(QWidget):
    """Table and heat map of one tensor's 2-D slice, read off the UI thread."""

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self._task: Task | None = None
        self._entry: TensorEntry | None = None
        self._array: np.ndarray | None = None
        self.current: SliceView | None = None

        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.index_row = QHBoxLayout()
        self.index_row.setContentsMargins(0, 0, 0, 0)
        self.spins: list[QSpinBox] = []
        index_box = QWidget()
        index_box.setLayout(self.index_row)
        self.index_box = index_box

        self.model = SliceModel(self)
        self.table = QTableView()
        self.table.setObjectName("valuesTable")
        self.table.setMinimumSize(60, 40)  # a table scrolls: it need not ask for rows it can scroll to
        self.table.setModel(self.model)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setDefaultSectionSize(self.fontMetrics().horizontalAdvance("-0.000000e+00") + 8)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.heat_map = HeatMap()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)  # no frame around the table: its rows are what a short window keeps
        self.tabs.addTab(self.table, "Table")
        self.tabs.addTab(self.heat_map, "Heat map")
        self.message = QLabel()
        self.message.setProperty("role", "hint")
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        self.stored = QCheckBox("Stored integers")
        self.stored.setObjectName("storedIntegers")
        self.stored.setToolTip("Show the quantized integers as the file stores them, instead of their dequantized "
                               "values")
        self.stored.toggled.connect(self._stored_toggled)
        top = QHBoxLayout()
        top.addWidget(self.caption, 1)
        top.addWidget(self.stored)
        top.addWidget(index_box)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.message, 1)
        self.show_entry(None)

    def height_for_rows(self, rows: int) -> int:
        """The panel's height with ``rows`` rows of the value table in view (a short window keeps these first)."""
        margins = self.layout().contentsMargins()
        table = self.table
        chrome = (margins.top() + margins.bottom() + self.layout().spacing() + self.caption.sizeHint().height()
                  + self.tabs.tabBar().sizeHint().height() + 2 * table.frameWidth() + 4
                  + table.horizontalHeader().sizeHint().height() + table.horizontalScrollBar().sizeHint().height())
        return chrome + rows * table.verticalHeader().defaultSectionSize()

    def show_entry(self, entry: TensorEntry | None) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._entry, self._array, self.current = entry, None, None
        self.model.set_array(np.zeros((0, 0)))
        self.heat_map.set_view(None)
        self._set_spins(())
        self.stored.blockSignals(True)
        self.stored.setChecked(False)
        self.stored.blockSignals(False)
        self.stored.setVisible(entry is not None and entry.dtype.kind == "quantized"
                               and entry.dtype.values_dtype is not None)
        if entry is None:
            self._show_message("Select a tensor to see its values.")
            return
        if entry.dtype.values_dtype is None or entry.dtype.kind == "complex":
            why = why_undecoded(entry.dtype) or f"{entry.dtype} values are not decoded"
            self._show_message(f"{why}, so there is nothing to preview.")
            return
        if entry.numel == 0:
            self._show_message(f"This tensor has no values (shape {humanize.shape(entry.shape)}).")
            return
        self._show_message(f"Reading {humanize.shape(entry.shape)}…")
        self._set_spins(entry.shape[:-2] if len(entry.shape) > 2 else ())
        self._load(tuple(0 for _ in entry.shape[:-2]))

    def _load(self, leading: tuple[int, ...]) -> None:
        entry, array = self._entry, self._array
        if entry is None:
            return
        if self._task is not None:
            self._task.cancel()
        task: Task | None = None
        stored = self.stored.isChecked()

        def work(cancelled) -> tuple[np.ndarray, SliceView]:
            if array is not None:
                data = array
            else:
                data = stored_values(entry).values if stored else entry.read()
            return data, make_slice(data, leading)

        def done(result: tuple[np.ndarray, SliceView]) -> None:
            if self._task is task:
                self._task = None
                self._array, self.current = result
                self._show(result[1])

        def failed(failure: Failure) -> None:
            if self._task is task:
                self._task = None
                self._show_message(failure.message)

        task = self._task = self._runner.run(work, done, failed)

    def _show(self, view: SliceView) -> None:
        self.message.hide()
        self.tabs.show()
        self.model.set_array(view.cells)
        self.heat_map.set_view(view)
        rows, cols = view.cells.shape
        where = "" if not view.leading else "[" + ", ".join(map(str, view.leading)) + ", :, :] · "
        stored = " · stored integers" if self.stored.isVisible() and self.stored.isChecked() else ""
        self.caption.setText(f"{where}{rows:,} × {cols:,} values{stored}")

    def _show_message(self, text: str) -> None:
        self.caption.setText("")
        self.tabs.hide()
        self.message.setText(text)
        self.message.show()

    def _set_spins(self, dims: tuple[int, ...]) -> None:
        self.spins = []
        while self.index_row.count():
            item = self.index_row.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        if dims:
            self.index_row.addWidget(QLabel("Slice"))
        for axis, size in enumerate(dims):
            spin = QSpinBox()
            spin.setRange(0, max(0, size - 1))
            spin.setToolTip(f"Index along dimension {axis} (0 to {size - 1})")
            spin.setKeyboardTracking(False)
            spin.valueChanged.connect(self._leading_changed)
            self.index_row.addWidget(spin)
            self.spins.append(spin)
        self.index_box.setVisible(bool(dims))

    def _stored_toggled(self) -> None:
        """Switch between a quantized tensor's dequantized values and its stored integers."""
        self._array = None
        self._load(tuple(spin.value() for spin in self.spins))

    def _leading_changed(self) -> None:
        self._load(tuple(spin.value() for spin in self.spins))
