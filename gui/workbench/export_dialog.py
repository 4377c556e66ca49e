"""File › Export…: write the recipe's result to Burnpack or SafeTensors, with metadata, progress and a real Cancel.

The engine writes beside the destination and renames only at the end, so a cancel or a failure leaves
the old file exactly as it was; this dialog gathers the choices, confirms an overwrite, runs the export
in a worker and reports. Afterwards the result can be diffed against the source in the diff dock.
"""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QDialog, QFileDialog, QFormLayout, QGroupBox,
                               QHBoxLayout, QHeaderView, QLabel, QLineEdit, QMainWindow, QMessageBox, QProgressDialog,
                               QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout)

from engine import BURN_VERSIONS, BurnVersion, RemoteLocation, humanize, parse_burn_version
from engine.dtypes import writable_to
from engine.export import PRODUCER
from engine.formats import burnpack, format_for_path, safetensors, writer
from engine.surgery import Plan, ShapeMismatch, carried_metadata, validate
from engine.surgery.plan import RECIPE_METADATA_KEY
from gui.dialogs import show_error
from gui.models.diff_model import TONE_COLOURS
from gui.workbench.diff_panel import show_diff_dock
from gui.workbench.document import RecipeDocument
from gui.workers import Failure, ProgressRelay, Task, TaskRunner

FORMATS = ((burnpack.NAME, "Burnpack"), (safetensors.NAME, "SafeTensors"))
SAVE_FILTER = "Burnpack (*.bpk);;SafeTensors (*.safetensors);;All files (*)"
SOURCE_FILES_KEY = "source_files"
PROGRESS_STEPS = 1000  # QProgressDialog counts in int; bytes of a large file do not fit
OVERWRITE_QUESTION = "overwriteQuestion"  # object names, so tests and scripts can find the dialogs
EXPORT_PROGRESS = "exportProgress"
MISMATCH_QUESTION = "mismatchQuestion"
MISMATCHES_NAMED = 12  # the confirmation lists this many mismatches, then counts the rest


def mismatch_text(mismatch: ShapeMismatch) -> str:
    """``fc.weight: here [2, 4], template [5, 4]``: one line of the mismatch list, as the CLI words it."""
    hint = " (matches if transposed)" if mismatch.matches_if_transposed else ""
    return f"{mismatch.name}: here {list(mismatch.source_shape)}, template {list(mismatch.template_shape)}{hint}"


class ExportDialog(QDialog):
    """``exported(Path)`` once a file is written; the dialog stays open to offer a diff of the result."""

    exported = Signal(object)

    def __init__(self, document: RecipeDocument, window: QMainWindow | None = None) -> None:
        super().__init__(window)
        self.setObjectName("exportDialog")
        self.setWindowTitle("Export")
        self.document = document
        self.main_window = window
        self.exported_path: Path | None = None
        self.progress_dialog: QProgressDialog | None = None
        self.progress_relay = ProgressRelay(self)
        self.progress_relay.changed.connect(self._progress)
        self._runner = TaskRunner(self)
        self._task: Task | None = None
        self._started = 0.0
        self._dest_name = ""
        self._build()
        document.planReady.connect(self._plan_changed)
        document.planFailed.connect(self._plan_changed)
        document.busyChanged.connect(self._plan_changed)  # no export of a plan an edit just made stale
        for changed in (self.format_combo.currentIndexChanged, self.burn_combo.currentIndexChanged,
                        self.path_edit.textChanged, self.dequantize.toggled):  # what the file can hold depends on its format and Burn version
            changed.connect(self._plan_changed)
        self._plan_changed()

    # --- building -------------------------------------------------------------------------------------
    def _build(self) -> None:
        self._confirmed: Path | None = None  # a destination the file chooser already asked to replace
        self.exists_note = QLabel()
        self.exists_note.setObjectName("exportExists")
        self.exists_note.setProperty("role", "problem")
        self.exists_note.setWordWrap(True)
        self.path_edit = QLineEdit(str(self._default_path()))
        self.path_edit.setObjectName("exportPath")
        self.path_edit.setMinimumWidth(300)
        self.path_edit.textChanged.connect(self._path_edited)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self.choose_path)
        where = QHBoxLayout()
        where.addWidget(self.path_edit, 1)
        where.addWidget(browse)
        self.format_combo = QComboBox()
        self.format_combo.setObjectName("exportFormat")
        for name, label in FORMATS:
            self.format_combo.addItem(f"{label} ({writer(name).EXTENSIONS[0]})", name)
        self.format_combo.currentIndexChanged.connect(self._format_chosen)
        self.burn_combo = QComboBox()
        self.burn_combo.setObjectName("exportBurnVersion")
        self.burn_combo.setToolTip("The Burn release the Burnpack must load in: it decides how bools and "
                                   "quantization schemes are spelled")
        for version in BURN_VERSIONS:
            self.burn_combo.addItem(f"Burn {version}", version)
        self.burn_combo.setCurrentIndex(self.burn_combo.findData(self.document.recipe.burn_version.value))
        self.burn_label = QLabel("for")
        self.dequantize = QCheckBox("Dequantize")
        self.dequantize.setObjectName("exportDequantize")
        self.dequantize.setToolTip("Write quantized tensors as their F32 values (SafeTensors has no quantized dtype)")
        self.dequantize.setVisible(any(e.dtype.kind == "quantized" for s in self.document.stores for e in s.entries))
        kind = QHBoxLayout()
        kind.addWidget(self.format_combo, 1)
        kind.addWidget(self.dequantize)
        kind.addWidget(self.burn_label)
        kind.addWidget(self.burn_combo)
        self._path_edited(self.path_edit.text())
        self.summary = QLabel()
        self.summary.setObjectName("exportSummary")
        self.summary.setWordWrap(True)
        self.problem = QLabel()
        self.problem.setObjectName("exportProblem")
        self.problem.setProperty("role", "problem")
        self.problem.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Save as:", where)
        form.addRow("", self.exists_note)
        form.addRow("Format:", kind)
        form.addRow("Contents:", self.summary)
        form.addRow("", self.problem)

        self.metadata_table = QTableWidget(0, 2)
        self.metadata_table.setObjectName("exportMetadata")
        self.metadata_table.setHorizontalHeaderLabels(["Key", "Value"])
        self.metadata_table.verticalHeader().hide()
        self.metadata_table.verticalHeader().setDefaultSectionSize(self.metadata_table.fontMetrics().height() + 10)
        self.metadata_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.metadata_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.metadata_table.horizontalHeader().setStretchLastSection(True)
        for key, value in self._default_metadata().items():
            self.add_metadata_row(key, value)
        self.add_button = QPushButton("Add Row")
        self.add_button.clicked.connect(lambda: self.add_metadata_row("", "", edit=True))
        self.remove_button = QPushButton("Remove Row")
        self.remove_button.clicked.connect(self.remove_selected_metadata)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        hint = QLabel("Text stored in the file's header. The producer and, when the recipe changes tensors, "
                      "its digest are always recorded; edit their values here.")
        hint.setProperty("role", "hint")
        hint.setWordWrap(True)
        group = QGroupBox("Metadata")
        column = QVBoxLayout(group)
        column.addWidget(self.metadata_table)
        column.addLayout(buttons)
        column.addWidget(hint)

        self.result = QLabel()
        self.result.setObjectName("exportResult")
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.diff_button = QPushButton("Diff Result Against Source")
        self.diff_button.setObjectName("diffResult")
        self.diff_button.setToolTip("Compare the written file with the recipe's result, tensor by tensor and "
                                    "value by value")
        self.diff_button.setEnabled(False)
        self.diff_button.clicked.connect(self.diff_result)
        self.export_button = QPushButton("Export")
        self.export_button.setObjectName("exportButton")
        self.export_button.setDefault(True)
        self.export_button.clicked.connect(self.start_export)
        self.close_button = QPushButton("Close")
        self.close_button.clicked.connect(self.reject)
        actions = QHBoxLayout()
        actions.addWidget(self.diff_button)
        actions.addStretch(1)
        actions.addWidget(self.close_button)
        actions.addWidget(self.export_button)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(group, 1)
        layout.addWidget(self.result)
        layout.addLayout(actions)
        self.resize(660, 440)

    def _default_path(self) -> Path:
        """Beside the source (a remote one: in the home folder), never a file that exists: ``model.bpk``, else
        ``model-export.bpk``, ``-export-2``…"""
        source = self.document.store.path
        if isinstance(source, RemoteLocation):
            source = Path.home() / source.name
        ext = burnpack.EXTENSIONS[0]
        candidates = [source.with_suffix(ext)] + [
            source.with_name(f"{source.stem}-export{f'-{n}' if n > 1 else ''}{ext}") for n in range(1, 1000)]
        return next(path for path in candidates if not path.exists())

    def _default_metadata(self) -> dict[str, str]:
        """The sources' own metadata (as ``convert`` carries it, unless the recipe clears it), then ours."""
        recipe = self.document.recipe
        carried, _ = carried_metadata(self.document.planned_stores(), recipe, None)
        ours = {"producer": PRODUCER, SOURCE_FILES_KEY: ", ".join(s.path.name for s in self.document.stores),
                RECIPE_METADATA_KEY: recipe.digest()}
        return {**ours, **{k: v for k, v in carried.items() if k not in ours}, **recipe.metadata}

    # --- choices ----------------------------------------------------------------------------------------
    def destination(self) -> Path | None:
        text = self.path_edit.text().strip()
        return Path(text).expanduser() if text else None

    def format(self) -> str:
        return self.format_combo.currentData()

    def burn_version(self) -> BurnVersion:
        """The Burn release chosen (the recipe's until changed here)."""
        return parse_burn_version(self.burn_combo.currentData())

    def choose_path(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export to", self.path_edit.text(), SAVE_FILTER)
        if path:  # the chooser asked already if it exists: Export will not ask again
            self._confirmed = Path(path)
            self.path_edit.setText(path)

    def _path_edited(self, text: str) -> None:
        """The format follows the extension typed or chosen; an existing file is pointed out right away."""
        path = Path(text.strip()).expanduser() if text.strip() else None
        exists = path is not None and path.exists()
        self.exists_note.setText(f"⚠ {path.name} exists: exporting replaces it (the old file stays until the new "
                                 f"one is complete)." if exists and path is not None else "")
        self.exists_note.setVisible(exists)
        fmt = format_for_path(text) if text.strip() else None
        index = self.format_combo.findData(fmt)
        if index >= 0 and index != self.format_combo.currentIndex():
            self.format_combo.blockSignals(True)
            self.format_combo.setCurrentIndex(index)
            self.format_combo.blockSignals(False)
        self._show_burn_choice()

    def _show_burn_choice(self) -> None:
        """The Burn version only means something for a Burnpack."""
        burnpack_chosen = self.format() == burnpack.NAME
        self.burn_combo.setVisible(burnpack_chosen)
        self.burn_label.setVisible(burnpack_chosen)

    def _format_chosen(self) -> None:
        """The extension follows the format chosen, unless the name has an extension of its own."""
        self._show_burn_choice()
        path = self.destination()
        if path is None:
            return
        current = format_for_path(path)
        if current != self.format() and (current is not None or not path.suffix):
            self.path_edit.setText(str(path.with_suffix(writer(self.format()).EXTENSIONS[0])))

    def metadata(self) -> dict[str, str]:
        """The table as text to text; rows without a key are ignored, a later key wins."""
        out = {}
        for row in range(self.metadata_table.rowCount()):
            key, value = (self.metadata_table.item(row, c) for c in (0, 1))
            name = key.text().strip() if key is not None else ""
            if name:
                out[name] = value.text() if value is not None else ""
        return out

    def add_metadata_row(self, key: str, value: str, edit: bool = False) -> int:
        row = self.metadata_table.rowCount()
        self.metadata_table.insertRow(row)
        self.metadata_table.setItem(row, 0, QTableWidgetItem(key))
        self.metadata_table.setItem(row, 1, QTableWidgetItem(value))
        if edit:
            self.metadata_table.setCurrentCell(row, 0)
            self.metadata_table.editItem(self.metadata_table.item(row, 0))
        return row

    def remove_selected_metadata(self) -> None:
        rows = sorted({index.row() for index in self.metadata_table.selectedIndexes()}, reverse=True)
        for row in rows:
            self.metadata_table.removeRow(row)

    def _plan_changed(self, *_: object) -> None:
        plan = self.document.plan
        busy = self._task is not None or self.document.busy
        self.export_button.setEnabled(plan is not None and not busy)
        if plan is None:
            self.summary.setText("Planning the recipe…" if self.document.error is None else "")
            self._set_problem(f"The recipe cannot be planned: {self.document.error}" if self.document.error else "")
            return
        total = sum(t.nbytes for t in plan.tensors)
        changed = sum(1 for t in plan.tensors if t.ops)
        sources = ", ".join(s.path.name for s in self.document.stores)
        self.summary.setText(f"{len(plan.tensors):,} tensors · {humanize.size(total)} from {sources} · "
                             f"{changed:,} changed by recipe {self.document.recipe.digest()}")
        self.summary.setToolTip(f"{total:,} bytes of tensor data")
        mismatches = self._mismatches()
        if plan.conflicts:
            self._set_problem(f"⚠ {len(plan.conflicts):,} name conflict(s): the export will be refused until the "
                              f"recipe is fixed ({plan.conflicts[0]}).")
        elif mismatches:
            self._set_problem(f"⚠ {len(mismatches):,} tensor shape(s) differ from the template "
                              f"{self.document.template.path.name} ({mismatch_text(mismatches[0])}): the model "
                              f"cannot load them. Export asks before writing anyway.")
        elif self._unwritable(plan):
            self._set_problem(f"⚠ {self._unwritable(plan)}; the export will be refused.")
        elif self.document.error:
            self._set_problem(f"⚠ The latest recipe edit cannot be planned ({self.document.error}); the export "
                              f"writes the last good plan.")
        else:
            self._set_problem("")

    def _unwritable(self, plan: Plan) -> str:
        """The first tensor the chosen format (and Burn version) cannot hold, with the reason; "" if none."""
        fmt, version = self.format(), self.burn_version()
        for tensor in plan.tensors:
            if tensor.dtype.kind == "quantized" and self.dequantize.isChecked():
                continue  # written as F32
            reason = writable_to(tensor.dtype, fmt, version, tuple(tensor.shape))
            if reason:
                return f"{tensor.name}: {reason}"
        return ""

    def _set_problem(self, text: str) -> None:
        self.problem.setText(text)
        self.problem.setVisible(bool(text))

    def _mismatches(self) -> list[ShapeMismatch]:
        """The shapes the template wants otherwise: the CLI's validation; none without a template."""
        plan, template, alignment = self.document.plan, self.document.template, self.document.alignment
        if plan is None or template is None:
            return []
        # the worker aligned this plan with this template already; only a plan made before the template lacks it
        return list(alignment.shape_mismatches) if alignment is not None else validate(plan, template)

    # --- exporting --------------------------------------------------------------------------------------
    def start_export(self) -> None:
        """Refuse shape mismatches unless confirmed, ask before replacing a file, then export in a worker."""
        plan, dest = self.document.plan, self.destination()
        if plan is None or self._task is not None:
            return
        if dest is None:
            self._show_result("Choose where to save the file first.", problem=True)
            return
        mismatches = self._mismatches()
        if mismatches:
            self._confirm_mismatches(mismatches, lambda: self._replace_or_run(plan, dest))
            return
        self._replace_or_run(plan, dest)

    def _confirm_mismatches(self, mismatches: list[ShapeMismatch], proceed: Callable[[], None]) -> None:
        """Burn-store's ``validate``: shapes the model cannot load stop the export unless the user says otherwise."""
        template = self.document.template
        assert template is not None
        box = QMessageBox(QMessageBox.Icon.Warning, "Shapes differ from the template",
                          f"{len(mismatches):,} tensor(s) do not have the shape {template.path.name} wants; "
                          "the model cannot load them.", QMessageBox.StandardButton.Cancel, self)
        box.setObjectName(MISMATCH_QUESTION)
        named = [mismatch_text(m) for m in mismatches[:MISMATCHES_NAMED]]
        more = len(mismatches) - len(named)
        box.setInformativeText("\n".join(named + ([f"… and {more:,} more"] if more > 0 else []))
                               + "\n\nFix the recipe (see the diff view), or write the file anyway.")
        anyway = box.addButton("Export Anyway", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(lambda _: proceed() if box.clickedButton() is anyway else
                             self._show_result("Nothing exported: the shapes differ from the template."))
        box.open()

    def _replace_or_run(self, plan: Plan, dest: Path) -> None:
        if not dest.exists() or dest == self._confirmed:
            self._run(plan, dest, overwrite=dest.exists())
            return
        box = QMessageBox(QMessageBox.Icon.Question, "Replace file?", f"{dest.name} already exists.",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setObjectName(OVERWRITE_QUESTION)
        box.setInformativeText("Replace it with the export? The old file stays as it is until the new one is "
                               "completely written.")
        box.button(QMessageBox.StandardButton.Yes).setText("Replace")
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(lambda answer: self._run(plan, dest, overwrite=True)
                             if answer == QMessageBox.StandardButton.Yes else
                             self._show_result(f"Nothing exported; {dest.name} was left as it was."))
        box.open()

    def _run(self, plan: Plan, dest: Path, *, overwrite: bool) -> None:
        fmt, metadata, relay, version = self.format(), self.metadata(), self.progress_relay, self.burn_version()
        dequantize = self.dequantize.isChecked()
        _, scalars = carried_metadata(self.document.planned_stores(), self.document.recipe, fmt)  # as convert does

        def work(cancelled: Callable[[], bool]) -> Path:
            return plan.export(dest, fmt, metadata=metadata, scalars=scalars, overwrite=overwrite,
                               progress=relay.reporter(cancelled), cancel=cancelled, burn_version=version,
                               dequantize=dequantize)

        self._show_result("")
        self._started = time.monotonic()
        self._dest_name = dest.name
        progress = QProgressDialog(f"Writing {dest.name}…", "Cancel", 0, PROGRESS_STEPS, self)
        progress.setObjectName(EXPORT_PROGRESS)
        progress.setWindowTitle("Exporting")
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setAutoClose(False)
        progress.setAutoReset(False)
        progress.setMinimumDuration(0)
        progress.setMinimumWidth(420)
        progress.canceled.connect(self.cancel_export)
        progress.show()
        self.progress_dialog = progress
        self._task = self._runner.run(work, lambda path: self._done(plan, path),
                                      lambda failure: self._failed(dest, failure),
                                      lambda: self._cancelled(dest, overwrite))
        self._plan_changed()

    def cancel_export(self) -> None:
        """Stop the export at its next step; the engine removes its partial file."""
        if self._task is not None:
            self._task.cancel()
            if self.progress_dialog is not None:
                self.progress_dialog.setLabelText("Cancelling…")

    def is_exporting(self) -> bool:
        return self._task is not None

    def _progress(self, done: int, total: int) -> None:
        progress = self.progress_dialog
        if progress is None or self._task is None or self._task.is_cancelled():
            return
        progress.setValue(round(PROGRESS_STEPS * done / total) if total else PROGRESS_STEPS)
        elapsed = max(time.monotonic() - self._started, 1e-6)
        speed = done / elapsed
        left = f"about {humanize.duration((total - done) / speed)} left" if speed > 0 else "estimating time left"
        progress.setLabelText(f"Writing {self._dest_name}\n"
                              f"{humanize.size(done)} of {humanize.size(total)} · {humanize.size(round(speed))}/s · "
                              f"{left}")

    def _finish(self) -> None:
        self._task = None
        if self.progress_dialog is not None:
            self.progress_dialog.canceled.disconnect(self.cancel_export)  # closing it emits canceled too
            self.progress_dialog.close()
            self.progress_dialog.deleteLater()
            self.progress_dialog = None
        self._plan_changed()

    def _done(self, plan: Plan, path: Path) -> None:
        self._finish()
        self.exported_path = path
        seconds = time.monotonic() - self._started
        took = f"{seconds:.1f} s" if seconds >= 1 else "under a second"
        total = sum(t.nbytes for t in plan.tensors)
        mismatches = self._mismatches() if self.document.plan is plan else []
        anyway = (f" Written anyway with {len(mismatches):,} shape mismatch(es) against the template."
                  if mismatches else "")
        self._show_result(f"<span style='color:{TONE_COLOURS['ok']}'>✓</span> Exported {len(plan.tensors):,} tensors "
                          f"({humanize.size(total)}) to {html.escape(path.name)} in {took}.{anyway}")
        self.diff_button.setEnabled(True)
        self.exported.emit(path)

    def _failed(self, dest: Path, failure: Failure) -> None:
        self._finish()
        self._show_result(f"The export failed; {dest.name} was left as it was.", problem=True)
        show_error(self, f"Store Studio could not export {dest.name}.", failure.message, failure.details)

    def _cancelled(self, dest: Path, existed: bool) -> None:
        self._finish()
        self._show_result(f"Export cancelled; {dest.name} was left as it was." if existed else
                          f"Export cancelled; nothing was written to {dest.name}.")

    def _show_result(self, text: str, problem: bool = False) -> None:
        self.result.setText(text)
        self.result.setProperty("role", "problem" if problem else "")
        self.result.style().unpolish(self.result)
        self.result.style().polish(self.result)

    def diff_result(self) -> None:
        """Open the diff dock on the written file: every tensor should read identical to the recipe's result."""
        if self.exported_path is None or self.main_window is None:
            return
        panel = show_diff_dock(self.main_window, self.document)
        panel.compare_with_file(self.exported_path, role="exported file", values=True)
        self.accept()

    def reject(self) -> None:
        """Escape or Close: while exporting, cancel the export rather than hide it."""
        if self._task is not None:
            self.cancel_export()
            return
        super().reject()


def run_export(window: QMainWindow, document: RecipeDocument) -> ExportDialog:
    """File › Export… (Ctrl+E): the export dialog for ``document``, window-modal and non-blocking."""
    dialog = ExportDialog(document, window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog

