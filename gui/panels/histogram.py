"""A histogram drawn from ``engine.stats.TensorStats`` counts: bars on a value axis with ticks and a zero line.

Counts can be shown on a log scale (``log_counts``), where a few outliers next to a million typical values
stay visible. A constant tensor (or a scalar) has no range: it is drawn as one bar labelled with its value.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from engine import TensorStats
from gui.numbers import DEFAULT_DIGITS, format_number

TICKS = 5  # about this many labelled ticks on the value axis


def nice_ticks(low: float, high: float, count: int = TICKS) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten) covering [low, high]; [low] when low == high."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / max(1, count - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return ticks


class HistogramWidget(QWidget):
    """Paints with the palette, so it follows light and dark themes and stays crisp at any scale."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("histogram")
        self._counts: tuple[int, ...] = ()
        self._edges: tuple[float, ...] = ()
        self._digits = DEFAULT_DIGITS
        self.log_counts = False
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(80)
        self.setMaximumHeight(170)

    def sizeHint(self) -> QSize:
        return QSize(320, 110)

    def set_stats(self, stats: TensorStats | None, digits: int = DEFAULT_DIGITS) -> None:
        self._counts = stats.histogram if stats is not None else ()
        self._edges = stats.edges if stats is not None else ()
        self._digits = digits
        if self.is_constant():
            self.setToolTip(f"Every finite value is {self._number(self._edges[0])} ({self._counts[0]:,} values)")
        elif self._counts:
            self.setToolTip(f"{len(self._counts)} bins from {self._number(self._low())} to "
                            f"{self._number(self._high())}; the tallest holds {max(self._counts):,} values")
        else:
            self.setToolTip("")
        self.update()

    def set_log_counts(self, on: bool) -> None:
        self.log_counts = on
        self.update()

    def value_range(self) -> tuple[float, float]:
        """The values the axis spans: (v, v) for a constant tensor, never an invented range around it."""
        return float(self._low()), float(self._high())

    def is_constant(self) -> bool:
        return len(self._edges) == 2 and self._edges[0] == self._edges[1]

    def _number(self, value: float | int) -> str:
        return format_number(value, self._digits)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        if not self._counts:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        palette = self.palette()
        metrics = self.fontMetrics()
        line = metrics.height()
        area = QRectF(self.rect()).adjusted(1, line + 2, -1, -(line + 6))
        painter.fillRect(area, palette.color(QPalette.ColorRole.Base))
        text = palette.color(QPalette.ColorRole.Text)
        bar = palette.color(QPalette.ColorRole.Highlight)
        tallest = max(self._counts) or 1
        scale = (lambda c: math.log1p(c) / math.log1p(tallest)) if self.log_counts else (lambda c: c / tallest)
        if self.is_constant():
            width = max(6.0, area.width() / 12)
            painter.fillRect(QRectF(area.center().x() - width / 2, area.top(), width, area.height()), bar)
            painter.setPen(text)
            painter.drawText(QRectF(area.left(), area.bottom() + 4, area.width(), line), Qt.AlignmentFlag.AlignHCenter,
                             self._number(self._edges[0]))
            painter.drawText(QRectF(area.left(), 0, area.width(), line), Qt.AlignmentFlag.AlignLeft,
                             f"all {self._counts[0]:,} values equal")
            painter.end()
            return
        width = area.width() / len(self._counts)
        for i, count in enumerate(self._counts):
            if count:
                height = max(1.0, area.height() * scale(count))
                painter.fillRect(QRectF(area.left() + i * width, area.bottom() - height, max(1.0, width - 1), height),
                                 bar)
        low, high = self._edges[0], self._edges[-1]
        to_x = lambda v: area.left() + (v - low) / (high - low) * area.width()  # noqa: E731
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.drawLine(area.bottomLeft(), area.bottomRight())
        if low < 0 < high:  # the zero marker: is the distribution centred?
            zero = QPen(text, 1, Qt.PenStyle.DashLine)
            painter.setPen(zero)
            painter.drawLine(QPointF(to_x(0.0), area.top()), QPointF(to_x(0.0), area.bottom()))
        painter.setPen(text)
        self._draw_ticks(painter, area, to_x, line)
        scale_word = "log count" if self.log_counts else "count"
        painter.drawText(QRectF(area.left(), 0, area.width(), line), Qt.AlignmentFlag.AlignLeft,
                         f"peak {tallest:,} ({scale_word})")
        painter.end()

    def _draw_ticks(self, painter: QPainter, area: QRectF, to_x, line: int) -> None:
        """Tick marks with labels under the axis; a label that would overlap its neighbour is skipped."""
        metrics = self.fontMetrics()
        last_right = -math.inf
        for value in nice_ticks(float(self._low()), float(self._high())):
            x = to_x(value)
            painter.drawLine(QPointF(x, area.bottom()), QPointF(x, area.bottom() + 3))
            label = self._number(int(round(value)) if self._integer_bins() else value)
            half = metrics.horizontalAdvance(label) / 2 + 3
            left = min(max(x - half, area.left()), area.right() - 2 * half)
            if left > last_right:
                painter.drawText(QRectF(left, area.bottom() + 4, 2 * half, line), Qt.AlignmentFlag.AlignHCenter, label)
                last_right = left + 2 * half

    def _low(self) -> float | int:
        low = self._edges[0]
        return int(low + 0.5) if self._integer_bins() else low

    def _high(self) -> float | int:
        high = self._edges[-1]
        return int(high - 0.5) if self._integer_bins() else high

    def _integer_bins(self) -> bool:
        """Integer tensors with a small range get one bin per value, centred on it (edges at .5)."""
        return not self.is_constant() and all(abs(e - round(e)) == 0.5 for e in self._edges)
