"""Remap rules as an ordered table (each rule runs on the previous one's result) with hit counts and live examples.

Rules are checked before they reach the recipe: a bad regex or a replacement naming a missing group is marked
red where it was typed, with the engine's message, and never planned.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QByteArray,
    QMimeData,
    QModelIndex,
    QObject,
    Qt,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine import RecipeError
from engine.surgery import REMAP, Plan, RemapRule, Rename, compile_rules, remap_name
from gui.models.tree_model import Index
from gui.resources import monospace
from gui.visual import AMBER, ERROR_TEXT_STYLE, INVALID_STYLE
from gui.widgets import breakable
from gui.workbench.panels.base import DocumentPanel

EXAMPLES = 8  # old -> new pairs listed under the table
MIME = "application/x-store-studio-remap-row"
PATTERN, REPLACEMENT, HITS = 0, 1, 2


def check(rule: RemapRule, number: int) -> str | None:
    """The engine's complaint about one rule (numbered as the table shows it), or None; patterns read as typed."""
    try:
        compile_rules([rule])
    except RecipeError as exc:
        return str(exc).replace("remap rule 1", f"remap rule {number}", 1)
    return None


def remap_examples(plan: Plan) -> list[tuple[str, str]]:
    """Every (name in the file, name after the remap rules) pair the plan's remaps change, in plan order."""
    pairs = []
    for tensor in plan.tensors:
        renames = [op for op in tensor.ops if isinstance(op, Rename) and op.why == "remap"]
        if renames:
            pairs.append((renames[0].old, renames[-1].new))
    return pairs


def remapped_base(plan: Plan) -> list[str]:
    """Each kept tensor's name after the recipe's remaps (what a rule added at the end would see)."""
    names = []
    for tensor in plan.tensors:
        renames = [op for op in tensor.ops if isinstance(op, Rename) and op.why == "remap"]
        names.append(renames[-1].new if renames else tensor.inputs[0].name)
    return names


class RemapModel(QAbstractTableModel):
    """The document's remap rules; edits and drag-and-drop moves become undoable recipe edits."""

    def __init__(self, panel: "RemapPanel", parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._panel = panel
        self.rules: tuple[RemapRule, ...] = ()
        self.hits: list[int | None] = []
        self._font = monospace()

    def reset(self, rules: tuple[RemapRule, ...], hits: list[int | None]) -> None:
        self.beginResetModel()
        self.rules, self.hits = rules, hits
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rules)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 3

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Vertical:
            return str(section + 1)
        return ("Pattern (regex)", "Replacement", "Hits")[section]

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        rule, column = self.rules[index.row()], index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            if column == HITS:
                hits = self.hits[index.row()] if index.row() < len(self.hits) else None
                return "" if hits is None else f"{hits:,}"
            return rule.pattern if column == PATTERN else rule.replacement
        if role == Qt.ItemDataRole.FontRole and column != HITS:
            return self._font
        if role == Qt.ItemDataRole.TextAlignmentRole and column == HITS:
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        if role == Qt.ItemDataRole.ToolTipRole and column == HITS:
            return "How many tensor names this rule changes"
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        base = Qt.ItemFlag.ItemIsDropEnabled
        if not index.isValid():
            return base
        flags = base | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsDragEnabled
        return flags | Qt.ItemFlag.ItemIsEditable if index.column() != HITS else flags

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or not index.isValid() or index.column() == HITS:
            return False
        old = self.rules[index.row()]
        new = RemapRule(str(value), old.replacement) if index.column() == PATTERN else RemapRule(old.pattern, str(value))
        return self._panel.replace_rule(index.row(), new)

    # --- drag and drop: moving a row is a recipe edit ----------------------------------------------------
    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def mimeTypes(self) -> list[str]:
        return [MIME]

    def mimeData(self, indexes: list[QModelIndex]) -> QMimeData:
        data = QMimeData()
        rows = sorted({i.row() for i in indexes if i.isValid()})
        data.setData(MIME, QByteArray(str(rows[0] if rows else -1).encode()))
        return data

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: Index) -> bool:
        if action != Qt.DropAction.MoveAction or not data.hasFormat(MIME):
            return False
        source = int(bytes(data.data(MIME).data()).decode())
        target = parent.row() if row == -1 and parent.isValid() else (row if row != -1 else len(self.rules))
        destination = target - 1 if target > source else target
        self._panel.move_rule(source, min(destination, len(self.rules) - 1))
        return False  # the move happened in the recipe; the view must not remove the dragged row itself


class RemapPanel(DocumentPanel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message = QLabel()
        self.message.setObjectName("remapMessage")
        self.message.setWordWrap(True)
        self.message.setStyleSheet(ERROR_TEXT_STYLE)
        self.message.hide()
        order = QLabel("Rules run top to bottom, each on the previous result; drag a row or use the buttons "
                       "to reorder.")
        order.setWordWrap(True)
        order.setProperty("role", "hint")
        layout = QVBoxLayout(self)
        layout.addLayout(self._rule_form())
        layout.addWidget(self.message)
        layout.addWidget(self._rule_table(), 1)
        layout.addLayout(self._move_buttons())
        layout.addWidget(order)
        self._add_examples(layout)
        self.setEnabled(False)

    def _rule_form(self) -> QHBoxLayout:
        """Pattern → replacement, added with Enter or the button."""
        self.pattern = QLineEdit()
        self.pattern.setObjectName("remapPattern")
        self.pattern.setPlaceholderText("pattern, e.g. ^features\\.(\\d+)")
        self.replacement = QLineEdit()
        self.replacement.setObjectName("remapReplacement")
        self.replacement.setPlaceholderText("replacement, e.g. layers.$1")
        for edit in (self.pattern, self.replacement):
            edit.setFont(monospace())
            edit.textChanged.connect(self._show_examples)
            edit.returnPressed.connect(self.add_typed)
        self.add_button = QPushButton("Add rule")
        self.add_button.clicked.connect(self.add_typed)
        form = QHBoxLayout()
        form.addWidget(self.pattern, 3)
        form.addWidget(QLabel("→"))
        form.addWidget(self.replacement, 2)
        form.addWidget(self.add_button)
        return form

    def _rule_table(self) -> QTableView:
        """The recipe's rules in order; a row drags to a new place (a recipe edit)."""
        self.model = RemapModel(self, self)
        self.table = QTableView()
        self.table.setObjectName("remapRules")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.table.setDragDropOverwriteMode(False)
        self.table.setDropIndicatorShown(True)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(PATTERN, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(REPLACEMENT, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(HITS, QHeaderView.ResizeMode.ResizeToContents)
        return self.table

    def _move_buttons(self) -> QHBoxLayout:
        self.up = QPushButton("↑ Up")
        self.down = QPushButton("↓ Down")
        self.remove = QPushButton("Remove")
        self.up.clicked.connect(lambda: self._move_selected(-1))
        self.down.clicked.connect(lambda: self._move_selected(1))
        self.remove.clicked.connect(self._remove_selected)
        moves = QHBoxLayout()
        for button in (self.up, self.down, self.remove):
            moves.addWidget(button)
        moves.addStretch(1)
        return moves

    def _add_examples(self, layout: QVBoxLayout) -> None:
        """What the typed rule would do to a few of the file's names, before it is added."""
        self.examples_title = QLabel("Examples")
        self.examples_title.setProperty("role", "heading")
        self.examples_title.setWordWrap(True)
        self.examples = QListWidget()
        self.examples.setObjectName("remapExamples")
        self.examples.setFont(monospace())
        self.examples.setMaximumHeight(150)
        layout.addWidget(self.examples_title)
        layout.addWidget(self.examples)

    # --- edits -------------------------------------------------------------------------------------------
    def _problem(self, text: str | None, edit: QLineEdit | None = None) -> None:
        self.message.setText(breakable(f"⚠ {text}") if text else "")
        self.message.setVisible(bool(text))
        for widget in (self.pattern, self.replacement):
            widget.setStyleSheet(INVALID_STYLE if text and widget is (edit or self.pattern) else "")

    def add_typed(self) -> bool:
        """Add the rule typed in the form (Enter or "Add rule"); a broken one stays in the form, marked."""
        if self.state is None or not self.pattern.text():
            return False
        rule = RemapRule(self.pattern.text(), self.replacement.text())
        problem = check(rule, len(self.state.recipe.remaps) + 1)
        if problem:
            self._problem(problem)
            return False
        self.document.add_remap(rule.pattern, rule.replacement)
        self.pattern.clear()
        self.replacement.clear()
        return True

    def replace_rule(self, row: int, rule: RemapRule) -> bool:
        if self.state is None:
            return False
        problem = check(rule, row + 1)
        self._problem(problem)
        if problem:
            return False
        remaps = list(self.state.recipe.remaps)
        remaps[row] = rule
        return self.push(lambda recipe: recipe.with_changes(remaps=tuple(remaps)), f"Edit remap rule {row + 1}")

    def move_rule(self, row: int, new_row: int) -> None:
        if self.state is None or row == new_row or not 0 <= new_row < len(self.state.recipe.remaps):
            return
        remaps = list(self.state.recipe.remaps)
        remaps.insert(new_row, remaps.pop(row))
        self.push(lambda recipe: recipe.with_changes(remaps=tuple(remaps)), f"Move remap rule {row + 1}")
        self.table.selectRow(new_row)

    def _selected(self) -> int | None:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows else None

    def _move_selected(self, step: int) -> None:
        row = self._selected()
        if row is not None:
            self.move_rule(row, row + step)

    def _remove_selected(self) -> None:
        row = self._selected()
        if self.state is not None and row is not None:
            remaps = list(self.state.recipe.remaps)
            removed = remaps.pop(row)
            self.push(lambda recipe: recipe.with_changes(remaps=tuple(remaps)), f"Remove remap rule {removed.pattern}")

    # --- showing -----------------------------------------------------------------------------------------
    def recipe_changed(self) -> None:
        rules = self.state.recipe.remaps if self.state is not None else ()
        if rules != self.model.rules:
            selected = self._selected()
            self.model.reset(rules, [None] * len(rules))
            if selected is not None and selected < len(rules):
                self.table.selectRow(selected)

    def plan_ready(self, plan: Plan) -> None:
        hits = [h.count for h in plan.rule_hits if h.kind == REMAP]
        if hits and len(hits) == len(self.model.rules):
            self.model.hits = list(hits)
            self.model.dataChanged.emit(self.model.index(0, HITS), self.model.index(len(hits) - 1, HITS))
        self._show_examples()

    def _show_examples(self) -> None:
        """The typed rule's effect when one is being typed, else what the recipe's rules do."""
        self.examples.clear()
        plan = self.result.plan if self.result is not None else None
        if plan is None:
            return
        typed = RemapRule(self.pattern.text(), self.replacement.text())
        if typed.pattern:
            problem = check(typed, len(self.model.rules) + 1)
            self._problem(problem)
            if problem:
                return
            compiled = compile_rules([typed])
            pairs = [(old, new) for old in remapped_base(plan) if (new := remap_name(old, compiled)) != old]
            what = "the typed rule would rename"
        else:
            self._problem(None)
            pairs = remap_examples(plan)
            what = "the rules rename"
        self.examples_title.setText(breakable(f"Examples: {what} {len(pairs):,} tensor{'s' if len(pairs) != 1 else ''}"))
        for old, new in pairs[:EXAMPLES]:
            self.examples.addItem(f"{old}  →  {new}")
            self.examples.item(self.examples.count() - 1).setForeground(AMBER)
        if len(pairs) > EXAMPLES:
            self.examples.addItem(f"… and {len(pairs) - EXAMPLES:,} more")
