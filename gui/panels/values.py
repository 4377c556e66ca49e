"""A look at a tensor's values: a 2-D slice as a table and as a heat map.

Tensors above two dimensions are shown one 2-D slice at a time (the last two dimensions), chosen with
one spin box per leading dimension. Reading and colouring the slice happens in a worker.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QLinearGradient, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QSpinBox, QTableView, QTabWidget, QVBoxLayout,
                               QWidget)

from engine import humanize
from engine.store import TensorEntry
from gui.models.slice_model import SliceModel
from gui.panels.histogram import format_number
from gui.workers import Failure, Task, TaskRunner

HEAT_MAX = 512  # heat maps sample at most this many rows and columns
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
    """One 2-D slice, ready to show: the cells (a view, not a copy) and a coloured, downsampled image."""

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


def make_slice(array: np.ndarray, leading: tuple[int, ...]) -> SliceView:
    """Pick a slice and colour it; runs in a worker because it touches the tensor's pages."""
    cells = as_2d(array, leading)
    step = (max(1, -(-cells.shape[0] // HEAT_MAX)), max(1, -(-cells.shape[1] // HEAT_MAX)))
    sample = np.asarray(cells[::step[0], ::step[1]])
    sample = sample.astype(np.float32) if sample.dtype.kind != "f" or sample.dtype.itemsize < 4 else sample
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
    indices = np.clip(np.nan_to_num(scaled, nan=0.0) * 255, 0, 255).astype(np.uint8)
    rgb = _lut(DIVERGING if diverging else SEQUENTIAL)[indices]
    rgb[~finite] = NAN_COLOUR
    return SliceView(leading, cells, np.ascontiguousarray(rgb), low, high, diverging, step)


class HeatMap(QWidget):
    """The slice's image, scaled without smoothing so each value stays a crisp block, with a colour scale."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._image: QImage | None = None
        self._view: SliceView | None = None
        self.setMinimumSize(80, 60)

    def sizeHint(self) -> QSize:
        return QSize(300, 300)

    def set_view(self, view: SliceView | None) -> None:
        self._view = view
        self._image = None
        if view is not None and view.rgb is not None:
            rows, cols, _ = view.rgb.shape
            self._image = QImage(view.rgb.data, cols, rows, cols * 3, QImage.Format.Format_RGB888).copy()
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        metrics = self.fontMetrics()
        text = self.palette().color(QPalette.ColorRole.Text)
        view = self._view
        if self._image is None or view is None:
            painter.setPen(text)
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "No finite values to colour.")
            return
        legend_height = metrics.height() * 2 + 10
        area = QRectF(self.rect()).adjusted(4, 4, -4, -legend_height)
        image_size = self._image.size()
        scale = min(area.width() / image_size.width(), area.height() / image_size.height())
        target = QRectF(0, 0, image_size.width() * scale, image_size.height() * scale)
        target.moveCenter(area.center())
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
        painter.drawImage(target, self._image)
        bar = QRectF(area.left(), area.bottom() + 6, area.width(), metrics.height() * 0.8)
        gradient = QLinearGradient(bar.topLeft(), bar.topRight())
        stops = DIVERGING if view.diverging else SEQUENTIAL
        for i, colour in enumerate(stops):
            gradient.setColorAt(i / (len(stops) - 1), QColor(*(int(c) for c in colour)))
        painter.fillRect(bar, gradient)
        painter.setPen(text)
        labels = QRectF(bar.left(), bar.bottom() + 2, bar.width(), metrics.height())
        low, high = (-max(-view.low, view.high), max(-view.low, view.high)) if view.diverging else (view.low, view.high)
        painter.drawText(labels, Qt.AlignmentFlag.AlignLeft, format_number(low))
        painter.drawText(labels, Qt.AlignmentFlag.AlignRight, format_number(high))
        middle = "0" if view.diverging else ""
        if view.step != (1, 1):
            middle = f"{middle}   (every {view.step[0]}×{view.step[1]} value shown)".strip()
        painter.drawText(labels, Qt.AlignmentFlag.AlignHCenter, middle)
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
        self.table.setModel(self.model)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setDefaultSectionSize(self.fontMetrics().horizontalAdvance("-0.000000e+00") + 8)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.heat_map = HeatMap()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.table, "Table")
        self.tabs.addTab(self.heat_map, "Heat map")
        self.message = QLabel()
        self.message.setProperty("role", "hint")
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)

        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(self.caption, 1)
        top.addWidget(index_box)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.message, 1)
        self.show_entry(None)

    def show_entry(self, entry: TensorEntry | None) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._entry, self._array, self.current = entry, None, None
        self.model.set_array(np.zeros((0, 0)))
        self.heat_map.set_view(None)
        self._set_spins(())
        if entry is None:
            self._show_message("Select a tensor to see its values.")
            return
        if entry.dtype.numpy is None or entry.dtype.kind == "complex":
            self._show_message(f"{entry.dtype} values are not decoded, so there is nothing to preview.")
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

        def work(cancelled) -> tuple[np.ndarray, SliceView]:
            data = array if array is not None else entry.read()
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
        self.caption.setText(f"{where}{rows:,} × {cols:,} values")

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

    def _leading_changed(self) -> None:
        self._load(tuple(spin.value() for spin in self.spins))
