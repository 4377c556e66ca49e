"""What the recipe produces, tensor by tensor: kept, transformed (amber), dropped (grey, struck) and conflicts (red).

Each state carries a word in the Status column, so the table reads the same without colour. The model reads
the plan lazily: 10,000 rows cost only the rows on screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine import Store, humanize, natural_key
from engine.surgery import AlignmentReport, Dropped, Guess, Plan, PlannedTensor
from gui.models.tree_model import Index
from gui.resources import icon, monospace
from gui.visual import ERROR_TEXT_STYLE, brush, struck
from gui.widgets import breakable
from gui.workbench.marks import CONFLICT, DROPPED, MISMATCH, TRANSFORMED, op_words, template_fit
from gui.workbench.panels.base import DocumentPanel
from gui.workbench.plan_result import PlanResult
from gui.workbench.recipe_fit import misfit

STATUS, NAME, SHAPE, DTYPE, SOURCE, OPERATIONS, TEMPLATE = range(7)
HEADERS = ("Status", "Name", "Shape", "DType", "Source", "Operations", "Template")
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


def template_line(report: AlignmentReport, template: Store) -> str:
    """``Template target.bpk: 10 applied · 1 shape mismatch · 2 missing · 3 unused``: the CLI's alignment counts."""
    mismatches = len(report.shape_mismatches)
    runtime = f" ({len(report.runtime_shapes):,} with a shape set at run time)" if report.runtime_shapes else ""
    return (f"Template {template.path.name}: {len(report.applied):,} applied{runtime} · {mismatches:,} shape "
            f"mismatch{'es' if mismatches != 1 else ''} · {len(report.missing):,} missing · "
            f"{len(report.unused):,} unused")


GUESSED = "? guessed"  # the word a row rests on a guess with (never colour alone)


def guesses_line(plan: Plan) -> str:
    """``? 2 tensors rest on a guess ...``: the header's count of what the plan decided from names alone."""
    count = len({g.name for g in plan.guesses})
    if not count:
        return ""
    return (f"? {count:,} tensor{'s' if count != 1 else ''} rest{'s' if count == 1 else ''} on a guess from a name "
            f"alone: double-click a guessed row to settle its module type in Adapters")


def guess_tip(guess: Guess) -> str:
    """A guess in sentences: what was decided, why, and how to settle it here and on the command line."""
    if not guess.alternatives:  # not a module type (a fused module's layer placed by convention)
        return f"Guessed {guess.decision} ({guess.reason}).\nSettle it with {guess.settle}."
    kinds = " or ".join(guess.alternatives)
    return (f"Guessed {guess.decision} ({guess.reason}).\nSettle it: Adapters › Module types, set "
            f"{guess.module or '(top level)'} to {kinds}; on the command line {guess.settle}.")


@dataclass(frozen=True)
class Missing:
    """A row for a tensor the template wants and the recipe's result lacks."""

    name: str


class PreviewModel(QAbstractTableModel):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.plan: Plan | None = None
        self._conflicted: set[str] = set()
        self._stores: dict[str, Store] = {}
        self._template: Store | None = None
        self._fit: dict[str, tuple[str, str, str]] = {}
        self._missing: list[Missing] = []
        self.guesses: dict[str, list[Guess]] = {}  # output name -> what its outcome rests on
        self._font = monospace()
        self._struck = struck(self._font)

    def show(self, plan: Plan | None, stores: list[Store], report: AlignmentReport | None = None,
             template: Store | None = None) -> None:
        self.beginResetModel()
        self.plan = plan
        self._conflicted = {c.name for c in plan.conflicts} if plan is not None else set()
        self._stores = {str(s.path): s for s in stores}
        self._template = template if report is not None else None
        self._fit = template_fit(report) if report is not None else {}
        self._missing = [Missing(name) for name in report.missing] if report is not None else []
        self.guesses = {}
        for guess in plan.guesses if plan is not None else ():
            self.guesses.setdefault(guess.name, []).append(guess)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        if parent.isValid() or self.plan is None:
            return 0
        return len(self.plan.tensors) + len(self.plan.dropped) + len(self._missing)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return len(HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[section]
        return None

    def row(self, row: int) -> PlannedTensor | Dropped | Missing:
        assert self.plan is not None
        kept, dropped = self.plan.tensors, self.plan.dropped
        if row < len(kept):
            return kept[row]
        row -= len(kept)
        return dropped[row] if row < len(dropped) else self._missing[row - len(dropped)]

    def state(self, item: PlannedTensor | Dropped | Missing) -> str:
        if isinstance(item, Dropped):
            return DROPPED
        if isinstance(item, Missing):
            return MISMATCH  # red: the model will not get it
        if item.name in self._conflicted:
            return CONFLICT
        fit = self._fit.get(item.name)
        if fit is not None and fit[0]:
            return fit[0]  # a shape mismatch or an unused name outranks a transform
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
            if isinstance(item, Missing):
                return f"{item.name}: the template wants it, and no source tensor becomes it"
            if isinstance(item, Dropped):
                return f"{item.name}: {item.reason}"
            fit = self._fit.get(item.name)
            if column == TEMPLATE and fit is not None:
                return fit[2]
            if column == STATUS and item.name in self.guesses:
                return "\n\n".join(guess_tip(g) for g in self.guesses[item.name])
            return "\n".join([item.name, *item.operations]) if item.ops else item.name
        return None

    def _text(self, item: PlannedTensor | Dropped | Missing, state: str, column: int) -> str:
        if isinstance(item, Missing):
            entry = self._template.entry(item.name) if self._template is not None else None
            return {STATUS: "✕ missing", NAME: item.name, SHAPE: humanize.shape(entry.shape) if entry else "",
                    DTYPE: str(entry.dtype) if entry else "", TEMPLATE: "missing",
                    SOURCE: f"{self._template.path.name} (template)" if self._template is not None else "",
                    OPERATIONS: "the template wants it; no source tensor becomes it"}[column]
        if column == TEMPLATE:
            fit = self._fit.get(item.name) if not isinstance(item, Dropped) else None
            return fit[1] if fit is not None else ""
        if isinstance(item, Dropped):
            entry = self._entry(item)
            return {STATUS: "✕ dropped", NAME: item.name, OPERATIONS: item.reason,
                    SHAPE: humanize.shape(entry.shape) if entry else "", DTYPE: str(entry.dtype) if entry else "",
                    SOURCE: Path(item.source).name}[column]
        if column == STATUS:
            if state not in (CONFLICT, TRANSFORMED, ""):
                state = TRANSFORMED if item.ops else ""  # the template's verdict has its own column
            word = {CONFLICT: "⚠ conflict", TRANSFORMED: f"◆ {op_words(item)}"}.get(state, "✓ unchanged")
            return f"{word} · {GUESSED}" if item.name in self.guesses else word
        if column == NAME:
            return item.name
        if column == SHAPE:
            return humanize.shape(item.shape)
        if column == DTYPE:
            return str(item.dtype)
        if column == OPERATIONS:
            return "; ".join(item.operations)
        # one source: its tensor's name alone (the file is the tab's); several: which file, then the name
        return item.source_name if len(self._stores) <= 1 else f"{Path(item.source).name}: {item.source_name}"

    def _entry(self, dropped: Dropped) -> Any:
        store = self._stores.get(dropped.source)
        return store.entry(dropped.name) if store is not None and dropped.name in store else None


def operation_lines(item: PlannedTensor | Dropped | Missing) -> list[str]:
    """``name: operation`` lines for a row that has any: the whole chain, one line each, as the detail line shows it."""
    if isinstance(item, PlannedTensor) and item.ops:
        return [f"{item.name} ← {item.source_name}:", *(f"  {op}" for op in item.operations)]
    if isinstance(item, Dropped):
        return [f"{item.name}: {item.reason}"]
    return []


class PreviewPanel(DocumentPanel):
    """``settle_requested(module path)`` when the user double-clicks a guessed row."""

    settle_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.counts = QLabel("Planning…")
        self.counts.setObjectName("previewCounts")
        self.counts.setProperty("role", "heading")
        self.counts.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # never widens the dock
        self.rerun = QPushButton("Re-run (F5)")
        self.rerun.setToolTip("Plan the recipe again now")
        self.rerun.clicked.connect(lambda: self.document.replan() if self.document is not None else None)
        self.name_filter = QLineEdit()
        self.name_filter.setObjectName("previewFilter")
        self.name_filter.setPlaceholderText("Filter rows by name")
        self.name_filter.setToolTip("Show only rows whose name contains this text (case-insensitive)")
        self.name_filter.setClearButtonEnabled(True)
        self.name_filter.addAction(icon("search"), QLineEdit.ActionPosition.LeadingPosition)
        self.name_filter.setMinimumWidth(120)
        self.name_filter.textChanged.connect(self._filter_names)
        self.shown = QLabel()
        self.shown.setObjectName("previewShown")
        self.shown.setProperty("role", "hint")
        top = QHBoxLayout()
        top.addWidget(self.counts, 1)
        top.addWidget(self.shown)
        top.addWidget(self.name_filter)
        top.addWidget(self.rerun)
        self.model = PreviewModel(self)
        self.sorted = QSortFilterProxyModel(self)
        self.sorted.setSourceModel(self.model)
        self.sorted.setSortRole(SORT_ROLE)
        self.sorted.setFilterKeyColumn(NAME)
        self.sorted.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.sorted.rowsInserted.connect(self._show_shown)
        self.sorted.modelReset.connect(self._show_shown)
        self.sorted.layoutChanged.connect(self._show_shown)
        self.table = QTableView()
        self.table.setObjectName("preview")
        self.table.setModel(self.sorted)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # plan order until a header is clicked
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self.table.doubleClicked.connect(self._double_clicked)
        header = self.table.horizontalHeader()
        for column, width in ((STATUS, 140), (NAME, 200), (SHAPE, 110), (DTYPE, 60), (SOURCE, 170), (TEMPLATE, 110)):
            header.resizeSection(column, width)
        header.setSectionResizeMode(OPERATIONS, QHeaderView.ResizeMode.Stretch)
        header.setStretchLastSection(False)
        header.moveSection(header.visualIndex(TEMPLATE), STATUS + 1)  # the template's verdict beside the status
        self.table.setColumnHidden(TEMPLATE, True)
        self.notes = QLabel()
        self.notes.setObjectName("previewNotes")
        self.notes.setWordWrap(True)
        self.notes.hide()
        self.operations = QLabel()
        self.operations.setObjectName("previewOperations")
        self.operations.setWordWrap(True)
        self.operations.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.operations.hide()
        self.table.selectionModel().currentRowChanged.connect(self._show_operations)
        self.sorted.modelReset.connect(self._show_operations)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.notes)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.operations)
        self.setEnabled(False)

    def _filter_names(self, text: str) -> None:
        """Narrow the rows as the user types: the proxy re-filters, the plan's model stays as it is."""
        self.sorted.setFilterFixedString(text)
        self._show_shown()

    def _show_shown(self, *_: object) -> None:
        total, shown = self.model.rowCount(), self.sorted.rowCount()
        self.shown.setText(f"{shown:,} of {total:,} rows" if self.name_filter.text() else "")
        self.shown.setVisible(bool(self.name_filter.text()))

    def recipe_changed(self) -> None:
        if self.state is None:
            self.model.show(None, [])
            self.counts.setText("")

    def busy_changed(self, busy: bool) -> None:
        """An edit was made: the rows stay until its plan arrives, and the count line says they are updating."""
        if busy and self.state is not None:
            self.counts.setText(self.counts.text().removesuffix("  (updating…)") + "  (updating…)")

    def show_result(self, result: PlanResult) -> None:
        plan, report, template = result.plan, result.alignment, result.template
        self.model.show(plan, list(result.planned_stores), report, template)
        self.counts.setText(count_line(plan))
        self.counts.setStyleSheet(ERROR_TEXT_STYLE if plan.conflicts else "")
        self.table.setColumnHidden(TEMPLATE, report is None)
        notes = [template_line(report, template)] if report is not None and template is not None else []
        guessed = guesses_line(plan)
        if guessed:
            notes.append(guessed)
        unfit = misfit(plan)
        if unfit:
            notes.append(f"⚠ Parts of the recipe find nothing here: {unfit}")
        self._show_notes(notes, problem=bool(unfit) or (report is not None and not report.ok))

    def _double_clicked(self, index: QModelIndex) -> None:
        item = self.model.row(self.sorted.mapToSource(index).row())
        guesses = self.model.guesses.get(item.name, []) if isinstance(item, PlannedTensor) else []
        guesses = [g for g in guesses if g.alternatives]  # module types: what Adapters can settle
        if guesses:
            self.settle_requested.emit(guesses[0].module)

    def _show_operations(self, *_: object) -> None:
        """The current row's operations in full, wrapped under the table: a cell can only elide a long chain."""
        index = self.table.currentIndex()
        item = self.model.row(self.sorted.mapToSource(index).row()) if index.isValid() else None
        lines = operation_lines(item) if item is not None else []
        self.operations.setText("\n".join(breakable(line) for line in lines))
        self.operations.setVisible(bool(lines))

    def _show_notes(self, lines: list[str], problem: bool) -> None:
        """The lines under the counts: how the result fits the template (more join later)."""
        self.notes.setText("\n".join(lines))
        self.notes.setStyleSheet(ERROR_TEXT_STYLE if problem else "")
        self.notes.setVisible(bool(lines))

    def plan_failed(self, message: str) -> None:
        self.counts.setText(f"⚠ {message}")
        self.counts.setStyleSheet(ERROR_TEXT_STYLE)
