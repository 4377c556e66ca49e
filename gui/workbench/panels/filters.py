"""The recipe's filter as editable rows: include/exclude regexes, exact paths and predicates, each with its count.

A row being typed is applied as soon as it is valid; while it is not (a half-typed regex), it is marked
red in place with the engine's message and left out of the recipe, so the plan never sees it.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine import RecipeError
from engine.surgery import (
    EXCLUDE,
    FIELDS,
    INCLUDE,
    OPERATORS,
    PATH,
    WHERE,
    Filter,
    Plan,
    Predicate,
    PredicateGroup,
    Rule,
    compile_pattern,
)
from gui.resources import monospace
from gui.visual import ERROR_TEXT_STYLE, INVALID_STYLE
from gui.widgets import FlowLayout, breakable
from gui.workbench.panels.base import DocumentPanel

KIND_ORDER = (INCLUDE, PATH, WHERE, EXCLUDE)  # the order Filter.rule_hits counts them in
PLACEHOLDERS = {INCLUDE: "regex, e.g. ^encoder\\.", PATH: "exact name, e.g. fc.weight",
                EXCLUDE: "regex, e.g. num_batches_tracked$"}
EXAMPLES = 3  # matched names shown per rule (the tooltip lists more)
TOOLTIP_EXAMPLES = 20
_ids = itertools.count()


def filtered_names(plan: Plan) -> list[str]:
    """The names the recipe's filter saw: what it kept, and what it dropped (not the sources' own filters)."""
    return plan.names + [d.matched or d.name for d in plan.dropped if d.by_recipe_filter]


def matched_names(kind: str, rule: str | Rule, names: list[str]) -> list[str] | None:
    """The names a name rule matches (None for predicates, which match facts, not names)."""
    if kind in (INCLUDE, EXCLUDE) and isinstance(rule, str):
        search = compile_pattern(rule, f"{kind} rule").search
        return [name for name in names if search(name)]
    if kind == PATH and isinstance(rule, str):
        return [rule] if rule in names else []
    return None


def parse_value(text: str, op: str) -> Any:
    """``64`` is a number, ``[1, 3]`` a list, anything else text; ``in`` also takes ``a, b, c``."""
    try:
        value = json.loads(text)
    except ValueError:
        value = [_scalar(part.strip()) for part in text.split(",") if part.strip()] if op == "in" else text
    return tuple(value) if isinstance(value, list) and op == "in" else value


def _scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


class RuleRow:
    """The widgets of one filter rule; ``rule()`` is its engine value, or raises RecipeError when invalid."""

    def __init__(self, kind: str, value: str | Rule = "") -> None:
        self.id = next(_ids)
        self.kind = kind
        self.edit = QLineEdit()
        self.edit.setFont(monospace())
        self.field = QComboBox()
        self.op = QComboBox()
        self.group = value if isinstance(value, PredicateGroup) else None  # and/or groups: shown, kept, not edited
        self.editor = QWidget()
        layout = QHBoxLayout(self.editor)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        if self.group is not None:
            self.edit.setText(self.group.label)
            self.edit.setReadOnly(True)
            self.edit.setToolTip("A group of predicates from the recipe file; edit it there, or remove it here")
        elif kind == WHERE:
            self.field.addItems(FIELDS)
            self.op.addItems(OPERATORS)
            layout.addWidget(self.field)
            layout.addWidget(self.op)
            self.edit.setPlaceholderText("value, e.g. 2 or [64, 3] or Linear, Conv2d")
            if isinstance(value, Predicate):
                self.field.setCurrentText(value.field)
                self.op.setCurrentText(value.op)
                shown = list(value.value) if isinstance(value.value, tuple) else value.value
                self.edit.setText(shown if isinstance(shown, str) else json.dumps(shown))
        else:
            self.edit.setPlaceholderText(PLACEHOLDERS[kind])
            self.edit.setText(value if isinstance(value, str) else "")
        layout.addWidget(self.edit, 1)
        self.hits = QLabel("")
        self.hits.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.remove = QToolButton()
        self.remove.setText("✕")
        self.remove.setToolTip("Remove this rule")
        self.error: str | None = None

    @property
    def is_empty(self) -> bool:
        return not self.edit.text()

    def rule(self) -> str | Rule:
        if self.group is not None:
            return self.group
        text = self.edit.text()
        if self.kind in (INCLUDE, EXCLUDE):
            compile_pattern(text, f"{self.kind} rule")
            return text
        if self.kind == PATH:
            return text
        return Predicate(self.field.currentText(), self.op.currentText(), parse_value(text, self.op.currentText()))

    def show_error(self, error: str | None) -> None:
        self.error = error
        self.edit.setStyleSheet(INVALID_STYLE if error else "")
        self.edit.setToolTip(error or "")
        self.hits.setProperty("role", "problem" if error else "")
        self.hits.setStyleSheet(ERROR_TEXT_STYLE if error else "")
        if error:
            self.hits.setText("⚠ invalid")
            self.hits.setToolTip(error)


class FiltersPanel(DocumentPanel):
    """Rows grouped as the engine counts them: includes, exact paths, predicates, then excludes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[RuleRow] = []
        hint = QLabel("A tensor is kept when an include rule, path or predicate accepts it (or there are none) "
                      "and no exclude rule matches it. Rules match the names after remap, renumbering and "
                      "adapters (the Preview's names), as burn-store's filters match the model's own paths; a "
                      "source's own filter (Sources) matches that file's names.")
        hint.setObjectName("filterHint")
        hint.setWordWrap(True)
        hint.setProperty("role", "hint")
        self.table = QTableWidget(0, 4)
        self.table.setObjectName("filterRules")
        self.table.setHorizontalHeaderLabels(["Rule", "Pattern", "Matches", ""])
        self.table.verticalHeader().hide()
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Fixed)
        header.resizeSection(2, self.fontMetrics().horizontalAdvance("99,999 tensors") + 16)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        self.examples = QLabel()
        self.examples.setObjectName("filterExamples")
        self.examples.setFont(monospace())
        self.examples.setWordWrap(True)
        self.examples.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.examples.hide()
        self.message = QLabel()
        self.message.setObjectName("filterMessage")
        self.message.setWordWrap(True)
        self.message.setStyleSheet(ERROR_TEXT_STYLE)
        self.message.hide()
        buttons = FlowLayout()  # wraps in a narrow dock
        self.add_buttons: dict[str, QPushButton] = {}
        for kind, text, tip in ((INCLUDE, "+ Include", "Keep tensors whose name matches a regex"),
                                (EXCLUDE, "+ Exclude", "Drop tensors whose name matches a regex"),
                                (PATH, "+ Exact name", "Keep one tensor by its full name"),
                                (WHERE, "+ Predicate", "Keep tensors by dtype, ndim, shape, numel or module type")):
            button = QPushButton(text)
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, k=kind: self.add_row(k))
            buttons.addWidget(button)
            self.add_buttons[kind] = button
        layout = QVBoxLayout(self)
        layout.addWidget(hint)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.examples)
        layout.addWidget(self.message)
        self.setEnabled(False)

    # --- rows <-> filter ---------------------------------------------------------------------------------
    def add_row(self, kind: str, value: str | Rule = "") -> RuleRow:
        """A new rule at the end of its group; it joins the recipe once it has valid text."""
        row = RuleRow(kind, value)
        groups = [KIND_ORDER.index(r.kind) for r in self.rows]
        at = sum(1 for g in groups if g <= KIND_ORDER.index(kind))
        self.rows.insert(at, row)
        self.table.insertRow(at)
        label = QTableWidgetItem(kind)
        label.setFlags(Qt.ItemFlag.ItemIsEnabled)
        self.table.setItem(at, 0, label)
        self.table.setCellWidget(at, 1, row.editor)
        self.table.setCellWidget(at, 2, row.hits)
        self.table.setCellWidget(at, 3, row.remove)
        self.table.resizeRowToContents(at)
        row.edit.textEdited.connect(lambda _: self._edited(row))
        row.field.currentIndexChanged.connect(lambda _: self._edited(row))
        row.op.currentIndexChanged.connect(lambda _: self._edited(row))
        row.remove.clicked.connect(lambda: self._remove(row))
        if not value:
            row.edit.setFocus()
        return row

    def _remove(self, row: RuleRow) -> None:
        index = self.rows.index(row)
        self.rows.pop(index)
        self.table.removeRow(index)
        self._push("Remove filter rule", None)

    def _edited(self, row: RuleRow) -> None:
        self._push(f"Edit {row.kind} rule", f"filter-row-{row.id}")

    def built(self) -> Filter:
        """The filter the valid, non-empty rows make (and each row marked valid or not on the way)."""
        parts: dict[str, list[Any]] = {kind: [] for kind in KIND_ORDER}
        for row in self.rows:
            if row.is_empty:
                row.show_error(None)
                continue
            try:
                parts[row.kind].append(row.rule())
                row.show_error(None)
            except RecipeError as exc:
                row.show_error(str(exc))
        problems = [row.error for row in self.rows if row.error]
        self.message.setText(breakable("⚠ " + "\n⚠ ".join(problems) + "\n(not applied until fixed)") if problems else "")
        self.message.setVisible(bool(problems))
        return Filter(include=tuple(parts[INCLUDE]), full_paths=tuple(parts[PATH]), where=tuple(parts[WHERE]),
                      exclude=tuple(parts[EXCLUDE]))

    def _push(self, text: str, merge_key: str | None) -> None:
        built = self.built()
        self.push(lambda recipe: recipe.with_changes(filter=built), text, merge_key)

    def recipe_changed(self) -> None:
        wanted = self.state.recipe.filter if self.state is not None else Filter()
        if wanted == self.built():
            return  # our own edit (or nothing new): keep the rows, half-typed ones included
        self.rows.clear()
        self.table.setRowCount(0)
        for kind, values in ((INCLUDE, wanted.include), (PATH, wanted.full_paths), (WHERE, wanted.where),
                             (EXCLUDE, wanted.exclude)):
            for value in values:
                self.add_row(kind, value)
        self.built()

    def plan_ready(self, plan: Plan) -> None:
        hits = {(h.kind, h.index): h for h in plan.rule_hits}
        names = filtered_names(plan)
        lines = []
        places: dict[str, int] = {}  # valid rows so far per kind: a row's index among its kind's rules
        for row in self.rows:
            if row.error or row.is_empty:
                if not row.error:
                    row.hits.setText("")
                continue
            place = places[row.kind] = places.get(row.kind, -1) + 1
            found = hits.get((row.kind, place))
            count = found.count if found is not None else 0
            row.hits.setText(f"{count:,} tensor{'s' if count != 1 else ''}")
            matched = matched_names(row.kind, row.rule(), names)
            tip = f"{found.rule} matches {count:,} tensors" if found else ""
            if matched:
                shown = matched[:TOOLTIP_EXAMPLES]
                tip += ":\n" + "\n".join(shown) + (f"\n… and {len(matched) - len(shown):,} more"
                                                    if len(matched) > len(shown) else "")
                more = f"  (+{len(matched) - EXAMPLES:,} more)" if len(matched) > EXAMPLES else ""
                lines.append(f"{row.kind} {row.edit.text()}  →  {', '.join(matched[:EXAMPLES])}{more}")
            row.hits.setToolTip(tip)
        self.examples.setText("Matched (names after remap, renumbering and adapters):\n" + "\n".join(lines)
                              if lines else "")
        self.examples.setVisible(bool(lines))
