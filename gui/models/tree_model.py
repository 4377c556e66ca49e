"""Adapter from ``engine.tree.TreeNode`` to ``QAbstractItemModel``: index/parent/data, nothing else.

Lazy by construction: a node's children exist only once a view asks for them (``hasChildren`` answers
without splitting a group), so 100,000 tensors cost nothing until their groups are opened.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
)

from engine import humanize
from engine.tree import TreeNode
from gui.resources import icon, monospace
from gui.visual import brush, struck
from gui.workbench.document import DROPPED, Mark

Index = QModelIndex | QPersistentModelIndex
NODE_ROLE = Qt.ItemDataRole.UserRole  # data(index, NODE_ROLE) is the TreeNode behind a row
MARK_ROLE = Qt.ItemDataRole.UserRole + 1  # data(index, MARK_ROLE): what the latest recipe plan does to a tensor


class Column(IntEnum):
    NAME = 0
    DTYPE = 1
    SHAPE = 2
    PARAMS = 3
    SIZE = 4


HEADERS = {Column.NAME: "Name", Column.DTYPE: "DType", Column.SHAPE: "Shape", Column.PARAMS: "Parameters",
           Column.SIZE: "Size"}
NUMERIC = (Column.PARAMS, Column.SIZE)
MONOSPACE = (Column.NAME, Column.DTYPE, Column.SHAPE)
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


class TreeModel(QAbstractItemModel):
    """Rows are tree nodes in natural order; groups show the totals of everything below them."""

    def __init__(self, root: TreeNode, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._root = root
        self._font = monospace()
        self._struck = struck(self._font)
        self._marks: dict[str, Mark] = {}

    @property
    def root(self) -> TreeNode:
        return self._root

    def set_root(self, root: TreeNode) -> None:
        """Show another tree (a filtered one, say); views keep their settings, not their expansion."""
        self.beginResetModel()
        self._root = root
        self.endResetModel()

    def set_marks(self, marks: dict[str, Mark]) -> None:
        """Mark tensors (by full name) as the recipe's plan treats them; an empty dict clears the marks."""
        if not marks and not self._marks:
            return
        self.layoutAboutToBeChanged.emit()
        self._marks = marks
        self.layoutChanged.emit()  # nothing moved, but every visible row repaints with its mark

    def node(self, index: Index) -> TreeNode:
        return index.internalPointer() if index.isValid() else self._root

    def index_of(self, node: TreeNode, column: int = 0) -> QModelIndex:
        """The index of a node of the current tree (its ancestors' children get made on the way)."""
        if node is self._root or node.parent is None:
            return QModelIndex()
        node.parent.children  # noqa: B018 - sorting the siblings assigns node.row
        return self.createIndex(node.row, column, node)

    # --- QAbstractItemModel ------------------------------------------------------------------------
    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:
        children = self.node(parent).children
        if not (0 <= row < len(children) and 0 <= column < len(Column)):
            return QModelIndex()
        return self.createIndex(row, column, children[row])

    def parent(self, child: Index | None = None) -> Any:  # type: ignore[override]
        if child is None:  # QObject.parent(), which shares the name
            return super().parent()
        if not child.isValid():
            return QModelIndex()
        return self.index_of(self.node(child).parent)

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self.node(parent).children)

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:
        if parent.isValid() and parent.column() != 0:
            return False
        return self.node(parent).has_children

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return len(Column)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[Column(section)]
        if role == Qt.ItemDataRole.TextAlignmentRole and section in NUMERIC:
            return RIGHT
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        node: TreeNode = index.internalPointer()
        column = index.column()
        mark = self._marks.get(node.entry.name) if node.entry is not None and self._marks else None
        if role == Qt.ItemDataRole.DisplayRole:
            text = self._text(node, column)
            return f"{text}  ({mark.word})" if mark is not None and column == Column.NAME else text
        if role == NODE_ROLE:
            return node
        if role == MARK_ROLE:
            return mark
        if role == Qt.ItemDataRole.ForegroundRole and mark is not None:
            return brush(mark.state)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in NUMERIC:
            return RIGHT
        if role == Qt.ItemDataRole.FontRole and (column in MONOSPACE or mark is not None):
            return self._struck if mark is not None and mark.state == DROPPED else self._font
        if role == Qt.ItemDataRole.DecorationRole and column == Column.NAME:
            return icon("tensor" if node.is_tensor else "group")
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == Column.SIZE:
                return f"{node.nbytes:,} bytes"
            if column == Column.NAME:
                return f"{node.path}\n{mark.word}: {mark.detail}" if mark is not None else node.path
        return None

    @staticmethod
    def _text(node: TreeNode, column: int) -> str:
        entry = node.entry
        if column == Column.NAME:
            return node.name
        if column == Column.DTYPE:
            return str(entry.dtype) if entry is not None else ""
        if column == Column.SHAPE:
            if entry is not None:
                return humanize.shape(entry.shape)
            return f"{node.tensors:,} tensor{'s' if node.tensors != 1 else ''}"
        if column == Column.PARAMS:
            return humanize.count(node.params)
        return humanize.size(node.nbytes)
