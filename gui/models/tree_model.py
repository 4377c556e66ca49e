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
from PySide6.QtGui import QFont

from engine import ORDERS, DType, TreeNode, humanize, is_buffer
from gui.resources import icon, monospace
from gui.visual import brush, struck
from gui.widgets import TOOLTIP_CHARS, clipped
from gui.workbench.marks import DROPPED, Mark

Index = QModelIndex | QPersistentModelIndex
NODE_ROLE = Qt.ItemDataRole.UserRole  # data(index, NODE_ROLE) is the TreeNode behind a row
MARK_ROLE = Qt.ItemDataRole.UserRole + 1  # data(index, MARK_ROLE): what the latest recipe plan does to a tensor


class Column(IntEnum):
    NAME = 0
    DTYPE = 1
    SHAPE = 2
    PARAMS = 3
    SIZE = 4
    RECIPE = 5  # what the recipe does to the tensor, in a word: shown only during surgery


HEADERS = {Column.NAME: "Name", Column.DTYPE: "DType", Column.SHAPE: "Shape", Column.PARAMS: "Parameters",
           Column.SIZE: "Size", Column.RECIPE: "Recipe"}
NUMERIC = (Column.PARAMS, Column.SIZE)
MONOSPACE = (Column.NAME, Column.DTYPE, Column.SHAPE)
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
# What clicking a header sorts by; numbers start largest first ("which tensors are biggest?").
# Roles as plain ints, looked up once: ``data`` compares them for every cell painted.
_DISPLAY, _DECORATION, _TOOLTIP, _FONT, _ALIGNMENT, _FOREGROUND = (int(r) for r in (
    Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.DecorationRole, Qt.ItemDataRole.ToolTipRole,
    Qt.ItemDataRole.FontRole, Qt.ItemDataRole.TextAlignmentRole, Qt.ItemDataRole.ForegroundRole))
_NODE, _MARK = int(NODE_ROLE), int(MARK_ROLE)
_UNANSWERED = frozenset(int(r) for r in (Qt.ItemDataRole.CheckStateRole, Qt.ItemDataRole.BackgroundRole,
                                         Qt.ItemDataRole.SizeHintRole, Qt.ItemDataRole.StatusTipRole,
                                         Qt.ItemDataRole.WhatsThisRole, Qt.ItemDataRole.EditRole))
SORT_ORDERS = {Column.NAME: "natural", Column.DTYPE: "dtype", Column.SHAPE: "shape", Column.PARAMS: "params",
               Column.SIZE: "size"}


class TreeModel(QAbstractItemModel):
    """Rows are tree nodes in natural order; groups show the totals of everything below them."""

    def __init__(self, root: TreeNode, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._root = root
        self._font = monospace()
        self._struck = struck(self._font)
        self._italic = QFont()
        self._italic.setItalic(True)
        self._marks: dict[str, Mark] = {}
        self.base_order = "file"  # the order without a clicked header: "file" or "natural"

    @property
    def root(self) -> TreeNode:
        return self._root

    def set_root(self, root: TreeNode) -> None:
        """Show another tree (a filtered one, say); views keep their settings, not their expansion."""
        self.beginResetModel()
        self._root = root
        self.endResetModel()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort every opened level by a column (Qt calls this on a header click); column -1 is ``base_order``."""
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        nodes = [(index.internalPointer(), index.column()) if index.isValid() else None for index in persistent]
        self.sort_tree(self._root, column, order, self.base_order)
        moved = [self.createIndex(n[0].row, n[1], n[0]) if n is not None else QModelIndex() for n in nodes]
        self.changePersistentIndexList(persistent, moved)
        self.layoutChanged.emit()

    @staticmethod
    def sort_tree(tree: TreeNode, column: int, order: Qt.SortOrder, base_order: str = "file") -> None:
        """Sort ``tree`` as a click on ``column``'s header would (-1: the base order, file or natural)."""
        if column < 0:
            key, reverse = ORDERS[base_order]
        else:
            key, _ = ORDERS[SORT_ORDERS[Column(column)]]
            reverse = order == Qt.SortOrder.DescendingOrder
        tree.resort(key, reverse)

    @property
    def has_marks(self) -> bool:
        return bool(self._marks)

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
        if role == Qt.ItemDataRole.InitialSortOrderRole:
            return Qt.SortOrder.DescendingOrder if section in NUMERIC else Qt.SortOrder.AscendingOrder
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """One role of one cell. Hot: a paint asks seven roles of every visible cell, so roles are compared as
        plain ints (an enum lookup per role adds up over thousands of cells) and those never answered return first."""
        if role in _UNANSWERED or not index.isValid():
            return None
        node: TreeNode = index.internalPointer()
        column = index.column()
        mark = self._marks.get(node.entry.name) if node.entry is not None and self._marks else None
        if role == _DISPLAY:
            if column == Column.RECIPE:
                return _recipe_word(node, mark) if mark is not None else ""
            text = self._text(node, column)
            if column != Column.NAME:
                return text
            return clipped(_renamed(text, node, mark) if mark is not None else text)  # a name's tail may be long
        if role == _NODE:
            return node
        if role == _MARK:
            return mark
        if role == _FOREGROUND:
            return brush(mark.state) if mark is not None else None
        if role == _ALIGNMENT:
            return RIGHT if column in NUMERIC else None
        if role == _FONT:
            if column in MONOSPACE or mark is not None:
                return self._struck if mark is not None and mark.state == DROPPED else self._font
            if column == Column.PARAMS and node.entry is not None and is_buffer(node.entry):
                return self._italic
            return None
        if role == _DECORATION:
            return icon("tensor" if node.is_tensor else "group") if column == Column.NAME else None
        if role == _TOOLTIP:
            if column == Column.SIZE:
                return f"{node.nbytes:,} bytes"
            if column == Column.PARAMS:
                return _params_tip(node)
            if column == Column.DTYPE and node.entry is not None:
                return _dtype_tip(node.entry.dtype)
            if column in (Column.NAME, Column.RECIPE):
                path = clipped(node.path, TOOLTIP_CHARS)
                return f"{path}\n{mark.word}: {mark.detail}" if mark is not None else path
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
            return humanize.count(node.params if node.entry is not None else node.parameters)
        return humanize.size(node.nbytes)


def _new_name(node: TreeNode, mark: Mark) -> str | None:
    """The name a renamed row's tensor gets (None when it keeps its own or is dropped)."""
    new = mark.tensor.name if mark.tensor is not None and mark.state != DROPPED else None
    return new if new is not None and new != node.path else None


def _renamed(name: str, node: TreeNode, mark: Mark) -> str:
    """A renamed row shows its new name (``gamma``; the whole new path when it leaves this group); the old
    one is in the Recipe column and the tooltip."""
    new = _new_name(node, mark)
    if new is None:
        return name
    group = node.path[:len(node.path) - len(name)]  # the path above this row, with its dot
    return new[len(group):] if group and new.startswith(group) else new


def _recipe_word(node: TreeNode, mark: Mark) -> str:
    """``renamed from weight``: the Recipe column's word, with the old name a renamed row no longer shows."""
    return f"{mark.word} from {node.name}" if _new_name(node, mark) is not None else mark.word


def _dtype_tip(dtype: DType) -> str:
    """The whole dtype (a narrow column elides it) and, for a quantized one, its scheme in words."""
    return f"{dtype}: {dtype.quant_scheme.describe()}" if dtype.quant is not None else str(dtype)


def _params_tip(node: TreeNode) -> str:
    """Parameters and buffer values told apart: a BatchNorm's running statistics are not trained weights."""
    if node.entry is not None:
        kind = "buffer values (not trained parameters)" if is_buffer(node.entry) else "parameters"
        return f"{node.params:,} {kind}"
    if node.buffer_values:
        return f"{node.parameters:,} parameters + {node.buffer_values:,} buffer values"
    return f"{node.parameters:,} parameters"
