"""A histogram drawn from ``engine.stats.TensorStats`` counts: bars, the value range and the tallest count."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

from engine.stats import TensorStats


def format_number(value: float | int) -> str:
    """Integers with thousands separators, floats to six significant digits."""
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.6g}"


class HistogramWidget(QWidget):
    """Paints with the palette, so it follows light and dark themes and stays crisp at any scale."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._counts: tuple[int, ...] = ()
        self._edges: tuple[float, ...] = ()
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(90)
        self.setMaximumHeight(170)

    def sizeHint(self) -> QSize:
        return QSize(320, 120)

    def set_stats(self, stats: TensorStats | None) -> None:
        self._counts = stats.histogram if stats is not None else ()
        self._edges = stats.edges if stats is not None else ()
        if self._counts:
            tallest = max(self._counts)
            self.setToolTip(f"{len(self._counts)} bins from {format_number(self._edges[0])} to "
                            f"{format_number(self._edges[-1])}; the tallest holds {tallest:,} values")
        else:
            self.setToolTip("")
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        if not self._counts:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        palette = self.palette()
        metrics = self.fontMetrics()
        label_height = metrics.height() + 2
        area = QRectF(self.rect()).adjusted(1, metrics.height() + 2, -1, -label_height)
        painter.fillRect(area, palette.color(QPalette.ColorRole.Base))
        tallest = max(self._counts) or 1
        width = area.width() / len(self._counts)
        bar = palette.color(QPalette.ColorRole.Highlight)
        for i, count in enumerate(self._counts):
            if not count:
                continue
            height = max(1.0, area.height() * count / tallest)
            painter.fillRect(QRectF(area.left() + i * width, area.bottom() - height, max(1.0, width - 1), height), bar)
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.drawLine(area.bottomLeft(), area.bottomRight())
        painter.setPen(palette.color(QPalette.ColorRole.Text))
        bottom = QRectF(area.left(), area.bottom() + 2, area.width(), label_height)
        painter.drawText(bottom, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop, format_number(self._low()))
        painter.drawText(bottom, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop, format_number(self._high()))
        top = QRectF(area.left(), 0, area.width(), metrics.height())
        painter.drawText(top, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, f"peak {tallest:,}")
        painter.end()

    def _low(self) -> float | int:
        low = self._edges[0]
        return int(low + 0.5) if self._integer_bins() else low

    def _high(self) -> float | int:
        high = self._edges[-1]
        return int(high - 0.5) if self._integer_bins() else high

    def _integer_bins(self) -> bool:
        """Integer tensors with a small range get one bin per value, centred on it (edges at .5)."""
        return all(abs(e - round(e)) == 0.5 for e in self._edges)
