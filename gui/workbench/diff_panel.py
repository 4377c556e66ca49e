"""The diff view: the recipe's result beside a template or any other file, pair by pair.

Names, shapes, what is missing and what is unused come from engine ``align``; whole-file value comparison
from engine ``diff``; one pair's value difference and its histogram from ``value_difference``. All of it
runs in workers with progress, so the window never waits: the rows show as soon as they are compared, and the
suggestions (engine ``suggest``, a search over chains of changes) follow from a worker of their own. The panel
turns a suggestion, or a suggested name, into an edit of the document's recipe (one undoable step).
"""

from __future__ import annotations

import re
from typing import Callable

from PySide6.QtCore import QItemSelection, Qt, Signal
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QPushButton, QSplitter, QVBoxLayout, QWidget

from engine import Location, Store, location, open_template
from engine.surgery import (
    Plan,
    Recipe,
    Suggestion,
    ValueDifference,
    align,
    diff,
    remap_input_name,
    reopen_at_key,
    suggest,
    value_difference,
)
from gui.dialogs import show_error
from gui.model_picker import choose_model
from gui.models.diff_model import (
    STATUSES,
    TONE_COLOURS,
    Column,
    DiffFilterModel,
    DiffModel,
    DiffRow,
    build_rows,
    dropped_tensors,
)
from gui.numbers import format_number
from gui.resources import monospace
from gui.workbench.diff_bars import SummaryBar
from gui.workbench.diff_sections import DiffHeader, PairDetails, PairTable, StatusFilters
from gui.workbench.document import RecipeDocument, RecipeState
from gui.workbench.plan_result import PlanResult
from gui.workbench.suggestion_list import SuggestionList, WrappedLabel
from gui.workbench.template_picker import choose_template
from gui.workers import Failure, ProgressRelay, Task, TaskRunner

DIFF_DOCK = "diffDock"
SUGGESTIONS = 2  # chains of recipe changes offered above the rows, best first


class DiffPanel(QWidget):
    """``compared`` once rows for the current plan are shown; ``valuesShown`` with the selected pair's difference."""

    compared = Signal()
    valuesShown = Signal(object)

    def __init__(self, document: RecipeDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diffPanel")
        self.document = document
        self.other: Store | None = None
        self._owned: Store | None = None  # a file this panel opened (closed when replaced)
        self._follow_template = False
        self._waiting_for_plan = False
        self._generation = 0
        self._compare_task: Task | None = None
        self._suggest_task: Task | None = None
        self._value_task: Task | None = None
        self._fitted: Recipe | None = None  # the recipe Make It Load made, while the fit note speaks of it
        self._runner = TaskRunner(self)
        self._relay = ProgressRelay(self)
        self._relay.changed.connect(self._progress)
        self._result: PlanResult | None = document.result  # the latest plan's outcome this panel received
        self._state: RecipeState = document.state  # the latest sources, recipe and template it was handed
        self._build()
        document.recipeChanged.connect(self._state_changed)
        document.resultReady.connect(self._show_result)
        document.planFailed.connect(self._plan_failed)
        if self._state.template is not None:
            self.use_template()
        else:
            self._show_message("Compare the recipe's result with a template, or with any file: Compare with…")

    # --- building -------------------------------------------------------------------------------------
    def _build(self) -> None:
        """The sections (gui/workbench/diff_sections.py), wired here; their widgets keep their names on the panel."""
        self.header = DiffHeader()
        self.against, self.message, self.progress = self.header.against, self.header.message, self.header.progress
        self.values_box, self.cancel_button = self.header.values_box, self.header.cancel_button
        self.template_button, self.open_button = self.header.template_button, self.header.open_button
        self.template_button.clicked.connect(self._template_clicked)
        self.open_button.clicked.connect(self._choose_file)
        self.values_box.toggled.connect(lambda _: self.refresh())
        self.cancel_button.clicked.connect(self.cancel)
        self.model = DiffModel(self)
        self.proxy = DiffFilterModel(self)
        self.proxy.setSourceModel(self.model)
        self.filters = StatusFilters()
        self.status_boxes, self.filter_edit = self.filters.boxes, self.filters.edit
        self.filters.statusToggled.connect(self.proxy.set_status_visible)
        self.filters.textChanged.connect(self.proxy.set_text)
        self.summary_bar = SummaryBar()
        self.fit_note = WrappedLabel("")  # what Make It Load did and what still does not load
        self.fit_note.setObjectName("fitNote")
        self.fit_note.hide()
        self.bulk_box = SuggestionList()  # recipe changes proven by engine suggest, with the pairs they make
        self.bulk_box.applyRequested.connect(self.apply_suggestion)
        self.table = PairTable(self.proxy)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.details = PairDetails()
        self.pair_title, self.pair_note, self.suggestions = self.details.title, self.details.note, self.details.suggestions
        self.values_label, self.histogram = self.details.values_label, self.details.histogram
        self.histogram_caption = self.details.histogram_caption
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.details)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)  # a dock's own frame is margin enough: the rows go to the table
        layout.setSpacing(4)
        for widget in (self.header, self.summary_bar, self.filters, self.fit_note, self.bulk_box):
            layout.addWidget(widget)
        layout.addWidget(self.splitter, 1)
        self._show_pair(None)
        self._set_busy(False)
        self._update_controls()
        self._update_counts()

    # --- what to compare with -------------------------------------------------------------------------
    def use_template(self) -> None:
        """Compare with the document's template, and follow it when it changes; values off (untrained weights)."""
        if self._state.template is None:
            return
        self._follow_template = True
        self._set_other(self._state.template, "template", owned=False, values=False)

    def _template_clicked(self) -> None:
        """Compare with the template; with none yet, choose one first (it then stays the recipe's template)."""
        if self._state.template is not None:
            self.use_template()
        elif choose_template(self, self.document, self._runner, self._state.home.path):
            self._follow_template = True  # the next plan comes with the template: compare with it then

    def compare_with(self, store: Store, *, role: str = "file", values: bool = True, owned: bool = False) -> None:
        """Compare with ``store`` (the panel closes it later when ``owned``)."""
        self._follow_template = False
        self._set_other(store, role, owned=owned, values=values)

    def compare_with_file(self, path: str | Location, *, role: str = "file", values: bool = True) -> None:
        """Open ``path`` (a file or an address) in a worker, then compare with it."""
        path = location(path)
        if self._compare_task is not None:
            self._compare_task.cancel()
        self._generation += 1
        self._show_message(f"Opening {path.name}…")
        self._set_busy(True, determinate=False)
        version = self._state.recipe.burn_version  # a Rust source's modules as that release saves them
        self._runner.run(lambda cancelled: open_template(path, version),
                         lambda store: self.compare_with(store, role=role, values=values, owned=True),
                         lambda failure: self._open_failed(path, failure),
                         lambda: self._set_busy(False))

    def _choose_file(self) -> None:
        path = choose_model(self, "Compare with", self._state.home.path)
        if path:
            self.compare_with_file(path)

    def _open_failed(self, path: Location, failure: Failure) -> None:
        self._set_busy(False)
        self._show_message(f"Could not open {path.name}.", problem=True)
        show_error(self, f"Store Studio could not open {path.name}.", failure.message, failure.details)

    def _set_other(self, store: Store, role: str, *, owned: bool, values: bool) -> None:
        if self._owned is not None and self._owned is not store:
            self._owned.close()
        self._owned = store if owned else None
        self.other = store
        self.values_box.blockSignals(True)
        self.values_box.setChecked(values)
        self.values_box.blockSignals(False)
        self.against.setText(f"Recipe result  ⟷  {store.path.name} ({role})")
        self.against.setToolTip(f"{self.against.text()}\n{store.path}")
        self._update_controls()
        self.refresh()

    # --- comparing --------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Compare the document's latest plan with the other file again, in a worker."""
        if self.other is None:
            return
        if self._result is None:
            self._waiting_for_plan = True
            self._show_message("Waiting for the recipe's plan…")
            return
        self._waiting_for_plan = False
        for task in (self._compare_task, self._suggest_task):
            if task is not None:
                task.cancel()
        self._generation += 1
        generation, other, reporter = self._generation, self.other, self._relay
        values = self.values_box.isChecked() and other.has_values  # a model's Rust source has no values to compare
        plan, sources = self._result.plan, list(self._result.planned_stores)

        def work(cancelled: Callable[[], bool]) -> list[DiffRow]:
            report = align(plan, other)
            compared = diff(plan, other, values=True, progress=reporter.reporter(cancelled)) if values else None
            return build_rows(plan, other, report, compared, dropped_tensors(plan, sources))

        self._show_message(f"Comparing with {other.path.name}…")
        self._set_busy(True, determinate=values)
        self._compare_task = self._runner.run(work, lambda rows: self._compared(generation, plan, rows),
                                              lambda failure: self._compare_failed(generation, failure),
                                              lambda: self._compare_cancelled(generation))

    def cancel(self) -> None:
        """Stop the comparison (or opening) under way; the rows shown stay as they were."""
        self._runner.cancel_all()

    def is_idle(self) -> bool:
        return self._runner.active == 0 and not self._waiting_for_plan

    def _compared(self, generation: int, plan: Plan, rows: list[DiffRow]) -> None:
        if generation != self._generation:
            return
        self._compare_task = None
        self._set_busy(False)
        selected = self.selected_row()
        self.model.set_rows(rows)
        self._update_counts()
        self._show_message(self._summary(rows, plan))
        self._reselect(selected)
        self._suggest(generation, plan)
        self.compared.emit()

    def _suggest(self, generation: int, plan: Plan) -> None:
        """Search the recipe changes that make more of the other file load, in a worker; the rows stay usable."""
        assert self._result is not None and self.other is not None
        sources, template, other = list(self._result.planned_stores), self._result.template, self.other

        def work(cancelled: Callable[[], bool]) -> list[Suggestion]:
            return suggest(sources, plan.recipe, other, template=template, reopen=reopen_at_key, limit=SUGGESTIONS,
                           cancelled=cancelled)

        self._suggest_task = self._runner.run(work, lambda found: self._suggested(generation, found),
                                              lambda failure: self._suggest_failed(generation, failure),
                                              lambda: None)

    def _suggested(self, generation: int, found: list[Suggestion]) -> None:
        if generation == self._generation:
            self._suggest_task = None
            self.bulk_box.show_suggestions(found)

    def _suggest_failed(self, generation: int, failure: Failure) -> None:
        """No suggestions, said on the message line: the rows compared are still right."""
        if generation == self._generation:
            self._suggest_task = None
            self.bulk_box.show_suggestions([])
            self._show_message(f"{self.message.text()} · no suggestions: {failure.message}", problem=True)

    def show_fit(self, text: str, fitted: Recipe) -> None:
        """Say what Make It Load did (``text``) while the recipe is the one it made (``fitted``)."""
        self._fitted = fitted
        self.fit_note.set_text(text)
        self.fit_note.setVisible(self._state.recipe == fitted)

    def _compare_failed(self, generation: int, failure: Failure) -> None:
        if generation != self._generation:
            return
        self._compare_task = None
        self._set_busy(False)
        self._show_message(f"The comparison failed: {failure.message}", problem=True)
        show_error(self, "Store Studio could not compare the files.", failure.message, failure.details)

    def _compare_cancelled(self, generation: int) -> None:
        if generation == self._generation:
            self._compare_task = None
            self._set_busy(False)
            self._show_message("Comparison cancelled; the rows shown are from the last comparison.")

    def _state_changed(self, state: RecipeState) -> None:
        """An edit, undo or redo: keep what it handed over (the template's button follows it at once; the fit
        note shows while the recipe is the one Make It Load made)."""
        self._state = state
        self.fit_note.setVisible(self._fitted is not None and state.recipe == self._fitted)
        self._update_controls()

    def _show_result(self, result: PlanResult) -> None:
        self._result = result
        template = result.template
        if template is not None and template is not self.other and (self._follow_template or self.other is None):
            self.use_template()  # a new template, or the first thing to compare with
            return
        if template is None:
            self._follow_template = False
        self._update_controls()
        self.refresh()

    def _plan_failed(self, message: str) -> None:
        self._show_message(f"The recipe cannot be planned, so the rows are from its last good plan: {message}",
                           problem=True)

    def _progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, 1000)
        self.progress.setValue(int(1000 * done / total) if total else 1000)

    def _set_busy(self, busy: bool, determinate: bool = True) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if busy:
            self.progress.setRange(0, 1000 if determinate else 0)
            self.progress.setValue(0)

    def _update_controls(self) -> None:
        has = self._state.template is not None
        self.template_button.setText("Template" if has else "Template…")
        self.template_button.setToolTip("Compare with the recipe's template (what the target model expects)" if has
                                        else "Choose a template: a file saved from the target model; the recipe "
                                             "remembers it")
        self.values_box.setEnabled(self.other is not None and self.other.has_values)  # Rust source: no values

    def _update_counts(self) -> None:
        counts = self.model.counts()
        for key, box in self.status_boxes.items():
            box.setText(f"{STATUSES[key].word} {counts[key]:,}")
            box.setVisible(counts[key] > 0)
        self.summary_bar.set_groups(self.model.summary())
        self.summary_bar.setVisible(bool(self.model.rows))
        self.table.setColumnHidden(Column.DELTA, all(row.max_abs is None for row in self.model.rows))
        changed = any(row.relative_change is not None for row in self.model.rows)
        self.table.setColumnHidden(Column.CHANGE, not changed)
        if changed:  # what moved the most comes first: a merged adapter's or a fine-tune's largest changes
            self.table.sortByColumn(Column.CHANGE, Qt.SortOrder.DescendingOrder)

    def apply_suggestion(self, suggestion: Suggestion) -> None:
        """Make a suggested change to the recipe, as one undoable step."""
        self.document.push(suggestion.apply(self._state.recipe), f"Apply suggestion: {suggestion.description}")

    @staticmethod
    def _summary(rows: list[DiffRow], plan: Plan) -> str:
        pairs = sum(1 for r in rows if r.source is not None and r.other is not None)
        lone = {key: sum(1 for r in rows if r.status == key) for key in ("missing", "unused")}
        text = f"{len(plan.tensors):,} tensors after the recipe · {pairs:,} pairs · {lone['missing']:,} missing · " \
               f"{lone['unused']:,} unused"
        if rows and all(r.status in ("identical", "applied") for r in rows):
            text += " · everything matches"
        return text

    def _show_message(self, text: str, problem: bool = False) -> None:
        self.message.setText(text)
        self.message.setToolTip(text)
        self.message.setProperty("role", "problem" if problem else "hint")
        self.message.style().unpolish(self.message)
        self.message.style().polish(self.message)

    # --- the selected pair -------------------------------------------------------------------------------
    def selected_row(self) -> DiffRow | None:
        rows = self.table.selectionModel().selectedRows()
        return self.proxy.mapToSource(rows[0]).data(Qt.ItemDataRole.UserRole) if rows else None

    def select_name(self, name: str) -> bool:
        """Select the row of ``name`` (either side); False when no visible row has it."""
        for row in range(self.proxy.rowCount()):
            found: DiffRow = self.proxy.index(row, 0).data(Qt.ItemDataRole.UserRole)
            if any(item is not None and item.name == name for item in (found.source, found.other)):
                self.table.selectRow(row)
                return True
        return False

    def _reselect(self, previous: DiffRow | None) -> None:
        if previous is None or not self.select_name(previous.name):
            self._show_pair(None)

    def _selection_changed(self, _selected: QItemSelection, _deselected: QItemSelection) -> None:
        self._show_pair(self.selected_row())

    def _show_pair(self, row: DiffRow | None) -> None:
        if self._value_task is not None:
            self._value_task.cancel()
            self._value_task = None
        self._clear_suggestions()
        self.histogram.set_stats(None)
        self.histogram.hide()
        self.histogram_caption.hide()
        self.values_label.clear()
        self.values_label.hide()
        if row is None:
            self.pair_title.clear()
            self.pair_note.setText("Select a row to see how the pair differs.")
            return
        status = STATUSES[row.status]
        colour = TONE_COLOURS[status.tone]
        names = dict.fromkeys(item.name for item in (row.source, row.other) if item is not None)
        self.pair_title.setText(" ⟷ ".join(names))
        self.pair_note.setText(f"<span style='color:{colour}'><b>{status.word}</b></span>: "
                               f"{row.note or status.meaning}")
        if row.status == "missing":
            self._offer_suggestions(row)
        elif row.source is not None and row.other is not None and row.status != "shape_mismatch":
            self._compute_values(row)
        elif row.status == "shape_mismatch":
            self._show_values_text("Shapes differ, so the values cannot be compared.")

    def _offer_suggestions(self, row: DiffRow) -> None:
        assert row.other is not None
        target = row.other.name
        layout = self.suggestions.layout()
        plan = self._result.plan if self._result is not None else None
        by_name = {t.name: t for t in plan.tensors} if plan is not None else {}
        if not row.suggestions:
            none = QLabel("No source tensor has a close name; add a remap rule by hand.")
            none.setWordWrap(True)
            layout.addWidget(none)
            return
        prompt = QLabel("Closest source tensors; click one to add a remap rule:")
        prompt.setWordWrap(True)
        layout.addWidget(prompt)
        for name in row.suggestions:
            button = QPushButton(f"{name}  →  {target}")
            button.setObjectName("suggestion")
            button.setFont(monospace())
            button.setStyleSheet("text-align: left; padding: 3px 8px;")
            tensor = by_name.get(name)
            if tensor is None or len(tensor.inputs) != 1:
                button.setEnabled(False)
                button.setToolTip("This tensor is built from several inputs; remap those instead")
            else:
                pattern = f"^{re.escape(remap_input_name(tensor))}$"
                button.setToolTip(f"Add the remap rule {pattern} → {target} (undo with Ctrl+Z)")
                button.clicked.connect(lambda _=False, p=pattern: self.document.add_remap(p, target))
            layout.addWidget(button)

    def _clear_suggestions(self) -> None:
        layout = self.suggestions.layout()
        while layout.count():
            widget = layout.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()

    def _compute_values(self, row: DiffRow) -> None:
        source, other = row.source, row.other
        self._show_values_text("Comparing values…")
        self._value_task = self._runner.run(lambda cancelled: value_difference(source, other, cancel=cancelled),
                                            lambda result: self._values_done(row, result),
                                            lambda failure: self._show_values_text(
                                                f"The values cannot be compared: {failure.error}"))

    def _values_done(self, row: DiffRow, result: ValueDifference) -> None:
        if self.selected_row() != row:  # the user moved on while this was computed
            return
        self._value_task = None
        verdict = "yes" if result.allclose else "no"
        lines = [f"max |Δ| {format_number(result.max_abs)}", f"mean |Δ| {format_number(result.mean_abs)}",
                 f"allclose {verdict} · {result.count:,} values"]
        if result.transposed:
            lines[-1] += " · compared transposed"
        if result.nonfinite:
            lines.append(f"{result.nonfinite:,} NaN or infinite differences (not in the histogram)")
        self._show_values_text("\n".join(lines))
        self.histogram.set_stats(result)  # type: ignore[arg-type]  # same histogram/edges fields as TensorStats
        self.histogram.show()
        self.histogram_caption.show()
        self.valuesShown.emit(result)

    def _show_values_text(self, text: str) -> None:
        self.values_label.setText(text)
        self.values_label.show()

    def release(self) -> None:
        """Stop work and close the file this panel opened (the document owns its template)."""
        self.cancel()
        if self._owned is not None:
            self._owned.close()
            self._owned = None


def show_diff_dock(window: QMainWindow, document: RecipeDocument) -> DiffPanel:
    """The window's diff panel for ``document``, shown and raised.

    The app's main window keeps one Diff dock (Surgery › Diff…, ``show_diff``) for the current tab's
    document; a window without one gets a dock made here on first use.
    """
    show_diff = getattr(window, "show_diff", None)
    if callable(show_diff):
        show_diff()
    panel = next((p for p in window.findChildren(DiffPanel) if p.document is document), None)
    if panel is None:
        dock = QDockWidget("Diff", window)
        dock.setObjectName(DIFF_DOCK)
        panel = DiffPanel(document, dock)
        dock.setWidget(panel)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    dock = panel.parentWidget()
    if isinstance(dock, QDockWidget):
        dock.show()
        dock.raise_()
    return panel
