"""A 2-D numpy array (a slice of a tensor, often a memory-mapped view) as a table; cells are read on demand."""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from gui.numbers import digits_for, format_number
from gui.resources import monospace

Index = QModelIndex | QPersistentModelIndex
RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


NON_FINITE = QColor(214, 69, 69, 70)  # behind NaN and Inf cells: readable on light and dark bases


class SliceModel(QAbstractTableModel):
    """Only the cells a view shows are ever read, so a [151936, 4096] slice costs nothing to open."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._array = np.zeros((0, 0))
        self._digits = digits_for(self._array.dtype)
        self._font = monospace()
        self._non_finite = QBrush(NON_FINITE)

    def set_array(self, array: np.ndarray) -> None:
        self.beginResetModel()
        self._array = array
        self._digits = digits_for(array.dtype)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._array.shape[0]

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._array.shape[1]

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole, Qt.ItemDataRole.BackgroundRole):
            value = self._array[index.row(), index.column()]
            if role == Qt.ItemDataRole.BackgroundRole:  # NaN and Inf stand out in the table
                return self._non_finite if self._array.dtype.kind not in "biu" and not np.isfinite(value) else None
            return format_number(value, self._digits) if role == Qt.ItemDataRole.DisplayRole else repr(value.item())
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return RIGHT
        if role == Qt.ItemDataRole.FontRole:
            return self._font
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            return str(section)
        return None
