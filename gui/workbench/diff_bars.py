"""Bars that let a comparison be read at a glance: the summary of all pairs, and each pair's max |Δ|."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRectF, QSize
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QStyledItemDelegate, QStyleOptionViewItem, QWidget

from gui.models.diff_model import SHARE_ROLE, TONE_COLOURS

BAR_HEIGHT = 8


class SummaryBar(QWidget):
    """One stacked bar: identical / transposed / changed / missing / unused, each as wide as its share.

    Colour is not the only signal: the counts are spelled out in the tooltip and in the status filters.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diffSummaryBar")
        self.groups: list[tuple[str, int, str]] = []
        self.setFixedHeight(BAR_HEIGHT + 4)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(200, BAR_HEIGHT + 4)

    def set_groups(self, groups: list[tuple[str, int, str]]) -> None:
        self.groups = groups
        self.setToolTip(" · ".join(f"{count:,} {word}" for word, count, _ in groups))
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        total = sum(count for _, count, _ in self.groups)
        painter = QPainter(self)
        area = QRectF(self.rect()).adjusted(0, 2, 0, -2)
        painter.fillRect(area, self.palette().color(QPalette.ColorRole.Mid))
        left = area.left()
        for _, count, tone in self.groups:
            if count and total:
                width = area.width() * count / total
                painter.fillRect(QRectF(left, area.top(), width, area.height()), QColor(TONE_COLOURS[tone]))
                left += width
        painter.end()


class DeltaBarDelegate(QStyledItemDelegate):
    """The max |Δ| cell with a bar behind the number, as long as its share of the largest difference."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        share = index.data(SHARE_ROLE)
        if share:
            rect = QRectF(option.rect).adjusted(2, 3, -2, -3)
            colour = QColor(TONE_COLOURS["transformed"])
            colour.setAlpha(90)
            painter.fillRect(QRectF(rect.left(), rect.top(), max(2.0, rect.width() * share), rect.height()), colour)
        super().paint(painter, option, index)
