"""What the recipe produces, tensor by tensor: kept, transformed (amber), dropped (grey, struck) and conflicts (red).

Each state carries a word in the Status column, so the table reads the same without colour. The model reads
the plan lazily: 10,000 rows cost only the rows on screen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine import Store, humanize
from engine.surgery import Plan
from engine.surgery.plan import Dropped, PlannedTensor
from engine.tree import natural_key
from gui.models.tree_model import Index
from gui.resources import monospace
from gui.visual import ERROR_TEXT_STYLE, brush, struck
from gui.workbench.document import CONFLICT, DROPPED, TRANSFORMED, op_words
from gui.workbench.panels.base import DocumentPanel

STATUS, NAME, SHAPE, DTYPE, SOURCE, OPERATIONS = range(6)
HEADERS = ("Status", "Name", "Shape", "DType", "Source", "Operations")
SORT_ROLE = Qt.ItemDataRole.UserRole + 10


def count_line(plan: Plan) -> str:
    """``16 unchanged · 12 renamed or transformed · 2 dropped · 0 conflicts``: each tensor counted once."""
    conflicted = {c.name for c in plan.conflicts}
    clear = [t for t in plan.tensors if t.name not in conflicted]
    changed = sum(1 for t in clear if t.ops)
    parts = [f"{len(clear) - changed:,} unchanged", f"{changed:,} renamed or transformed",
             f"{len(plan.dropped):,} dropped",
             f"{len(plan.conflicts):,} conflict{'s' if len(plan.conflicts) != 1 else ''}"]
    if plan.overrides:
        parts.append(f"{len(plan.overrides):,} replaced by later sources")
    return " · ".join(parts)


class PreviewModel(QAbstractTableModel):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.plan: Plan | None = None
        self._conflicted: set[str] = set()
        self._stores: dict[str, Store] = {}
        self._font = monospace()
        self._struck = struck(self._font)

    def show(self, plan: Plan | None, stores: list[Store]) -> None:
        self.beginResetModel()
        self.plan = plan
        self._conflicted = {c.name for c in plan.conflicts} if plan is not None else set()
        self._stores = {str(s.path): s for s in stores}
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        if parent.isValid() or self.plan is None:
            return 0
        return len(self.plan.tensors) + len(self.plan.dropped)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return len(HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[section]
        return None

    def row(self, row: int) -> PlannedTensor | Dropped:
        assert self.plan is not None
        kept = self.plan.tensors
        return kept[row] if row < len(kept) else self.plan.dropped[row - len(kept)]

    def state(self, item: PlannedTensor | Dropped) -> str:
        if isinstance(item, Dropped):
            return DROPPED
        if item.name in self._conflicted:
            return CONFLICT
        return TRANSFORMED if item.ops else ""

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or self.plan is None:
            return None
        item, column = self.row(index.row()), index.column()
        state = self.state(item)
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(item, state, column)
        if role == SORT_ROLE:
            text = self._text(item, state, column)
            return natural_key(text) if column in (NAME, SOURCE) else text
        if role == Qt.ItemDataRole.ForegroundRole:
            return brush(state)
        if role == Qt.ItemDataRole.FontRole and column != STATUS:
            return self._struck if state == DROPPED else self._font
        if role == Qt.ItemDataRole.ToolTipRole:
            if isinstance(item, Dropped):
                return f"{item.name}: {item.reason}"
            return "\n".join([item.name, *item.operations]) if item.ops else item.name
        return None

    def _text(self, item: PlannedTensor | Dropped, state: str, column: int) -> str:
        if isinstance(item, Dropped):
            entry = self._entry(item)
            return {STATUS: "✕ dropped", NAME: item.name, OPERATIONS: item.reason,
                    SHAPE: humanize.shape(entry.shape) if entry else "", DTYPE: str(entry.dtype) if entry else "",
                    SOURCE: Path(item.source).name}[column]
        if column == STATUS:
            return {CONFLICT: "⚠ conflict", TRANSFORMED: f"◆ {op_words(item)}"}.get(state, "✓ unchanged")
        if column == NAME:
            return item.name
        if column == SHAPE:
            return humanize.shape(item.shape)
        if column == DTYPE:
            return str(item.dtype)
        if column == OPERATIONS:
            return "; ".join(item.operations)
        return f"{Path(item.source).name}: {item.source_name}"

    def _entry(self, dropped: Dropped) -> Any:
        store = self._stores.get(dropped.source)
        return store.entry(dropped.name) if store is not None and dropped.name in store else None


class PreviewPanel(DocumentPanel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.counts = QLabel("Planning…")
        self.counts.setObjectName("previewCounts")
        self.counts.setProperty("role", "heading")
        self.rerun = QPushButton("Re-run (F5)")
        self.rerun.setToolTip("Plan the recipe again now")
        self.rerun.clicked.connect(lambda: self.document.replan() if self.document is not None else None)
        top = QHBoxLayout()
        top.addWidget(self.counts, 1)
        top.addWidget(self.rerun)
        self.model = PreviewModel(self)
        self.sorted = QSortFilterProxyModel(self)
        self.sorted.setSourceModel(self.model)
        self.sorted.setSortRole(SORT_ROLE)
        self.table = QTableView()
        self.table.setObjectName("preview")
        self.table.setModel(self.sorted)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # plan order until a header is clicked
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        header = self.table.horizontalHeader()
        for column, width in ((STATUS, 170), (NAME, 240), (SHAPE, 120), (DTYPE, 60), (SOURCE, 260)):
            header.resizeSection(column, width)
        header.setSectionResizeMode(OPERATIONS, QHeaderView.ResizeMode.Stretch)
        header.setStretchLastSection(False)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        self.setEnabled(False)

    def recipe_changed(self) -> None:
        if self.document is not None and self.document.busy:
            self.counts.setText(self.counts.text().removesuffix("  (updating…)") + "  (updating…)")
        if self.document is None:
            self.model.show(None, [])
            self.counts.setText("")

    def plan_ready(self, plan: Plan) -> None:
        self.model.show(plan, self.document.stores if self.document is not None else [])
        self.counts.setText(count_line(plan))
        self.counts.setStyleSheet(ERROR_TEXT_STYLE if plan.conflicts else "")

    def plan_failed(self, message: str) -> None:
        self.counts.setText(f"⚠ {message}")
        self.counts.setStyleSheet(ERROR_TEXT_STYLE)
