"""The tree's Name cell, carrying the columns a narrow tree hides: ``weight      F32 [16, 1, 3, 3]``.

When the workbench docks squeeze the tree, its DType and Shape columns give way so Name keeps its share;
what they said is then drawn at the right of the Name cell, dimmed, so name, dtype and shape stay readable.
The name elides in the middle; the suffix takes what it needs up to SUFFIX_SHARE of the cell.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from gui.models.tree_model import Column

GAP = 12  # pixels between the name and the suffix
SUFFIX_SHARE = 55  # percent of the cell the suffix may take; the name keeps the rest
Index = QModelIndex | QPersistentModelIndex


class NameDelegate(QStyledItemDelegate):
    """Paints a tensor row's name with the text of ``collapsed`` columns after it (groups draw as usual)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.collapsed: tuple[Column, ...] = ()

    def suffix(self, index: Index) -> str:
        """``F32 [16]``: what the hidden columns say for this row ('' for groups, which have no dtype)."""
        parts = [index.siblingAtColumn(column).data() for column in self.collapsed]
        return "  ".join(str(p) for p in parts if p) if index.siblingAtColumn(Column.DTYPE).data() else ""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        suffix = self.suffix(index) if self.collapsed else ""
        if not suffix:
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        name, opt.text = opt.text, ""
        style = opt.widget.style() if opt.widget is not None else None
        if style is None:
            super().paint(painter, option, index)
            return
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        text = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, opt.widget).adjusted(2, 0, -2, 0)
        metrics = opt.fontMetrics
        suffix_width = min(metrics.horizontalAdvance(suffix), max(0, text.width() * SUFFIX_SHARE // 100 - GAP))
        name_rect = QRect(text.left(), text.top(), max(0, text.width() - suffix_width - GAP), text.height())
        suffix_rect = QRect(text.right() - suffix_width + 1, text.top(), suffix_width, text.height())
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        painter.save()
        painter.setFont(opt.font)
        painter.setPen(opt.palette.color(role))
        align = Qt.AlignmentFlag.AlignVCenter
        painter.drawText(name_rect, align | Qt.AlignmentFlag.AlignLeft,
                         metrics.elidedText(name, Qt.TextElideMode.ElideMiddle, name_rect.width()))
        dim = opt.palette.color(QPalette.ColorGroup.Normal, role)
        if not selected:
            dim = opt.palette.color(QPalette.ColorRole.PlaceholderText)
        painter.setPen(dim)
        painter.drawText(suffix_rect, align | Qt.AlignmentFlag.AlignRight,
                         metrics.elidedText(suffix, Qt.TextElideMode.ElideRight, suffix_rect.width()))
        painter.restore()
