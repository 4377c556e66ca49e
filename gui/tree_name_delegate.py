"""The tree's Name cell, carrying the columns a narrow tree hides: ``weight      F32 [16, 1, 3, 3]``.

When the workbench docks squeeze the tree, its DType and Shape columns give way so Name keeps its share;
what they said is then drawn at the right of the Name cell, dimmed, so name, dtype and shape stay readable.
A name that does not fit loses the middle of its path, never its last segment (``gamma``, ``running_var``:
what tells tensors apart); the suffix takes what it needs up to SUFFIX_SHARE of the cell.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, Qt
from PySide6.QtGui import QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from gui.models.tree_model import Column

GAP = 12  # pixels between the name and the suffix
SUFFIX_SHARE = 55  # percent of the cell the suffix may take; the name keeps the rest
Index = QModelIndex | QPersistentModelIndex


def elided_name(metrics: QFontMetrics, name: str, width: int) -> str:
    """``name`` in ``width`` pixels: whole if it fits, else its path elided in the middle before the last
    segment, which stays whole as long as it fits by itself (only then is it elided, at its end)."""
    if metrics.horizontalAdvance(name) <= width:
        return name
    head, dot, leaf = name.rpartition(".")
    room = width - metrics.horizontalAdvance(dot + leaf)
    if not dot or room < 0:  # no path to shorten, or the leaf alone is too wide: it elides at its end
        return metrics.elidedText(leaf, Qt.TextElideMode.ElideRight, width)
    if room < metrics.horizontalAdvance("…"):
        return leaf
    return metrics.elidedText(head, Qt.TextElideMode.ElideMiddle, room) + dot + leaf


def leaf_width(metrics: QFontMetrics, name: str) -> int:
    """The pixels a name's last segment needs (what the dimmed suffix yields to)."""
    return metrics.horizontalAdvance(name.rpartition(".")[2])


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
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        style = opt.widget.style() if opt.widget is not None else None
        if style is None:
            super().paint(painter, option, index)
            return
        text = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, opt.widget).adjusted(2, 0, -2, 0)
        metrics = opt.fontMetrics
        if not suffix:  # the style draws the row; the name comes to it already fitted
            opt.text = elided_name(metrics, opt.text, text.width())
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
            return
        name, opt.text = opt.text, ""
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        share = max(0, text.width() * SUFFIX_SHARE // 100 - GAP)
        leaf_room = max(0, text.width() - leaf_width(metrics, name) - GAP)  # the suffix yields to the leaf
        suffix_width = min(metrics.horizontalAdvance(suffix), share, leaf_room)
        name_rect = QRect(text.left(), text.top(), max(0, text.width() - suffix_width - GAP), text.height())
        suffix_rect = QRect(text.right() - suffix_width + 1, text.top(), suffix_width, text.height())
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        painter.save()
        painter.setFont(opt.font)
        painter.setPen(opt.palette.color(role))
        align = Qt.AlignmentFlag.AlignVCenter
        painter.drawText(name_rect, align | Qt.AlignmentFlag.AlignLeft,
                         elided_name(metrics, name, name_rect.width()))
        dim = opt.palette.color(QPalette.ColorGroup.Normal, role)
        if not selected:
            dim = opt.palette.color(QPalette.ColorRole.PlaceholderText)
        painter.setPen(dim)
        painter.drawText(suffix_rect, align | Qt.AlignmentFlag.AlignRight,
                         metrics.elidedText(suffix, Qt.TextElideMode.ElideRight, suffix_rect.width()))
        painter.restore()
