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
from PySide6.QtWidgets import (
    QDialog,
    QFormLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressDialog,
    QVBoxLayout,
)

from engine import (
    WRITABLE_FORMATS,
    BurnVersion,
    RemoteLocation,
    format_for_path,
    gguf_conversions,
    humanize,
    quantized_choices,
    writable_format,
    writable_to,
)
from engine.surgery import Plan, ShapeMismatch, carried_metadata, export_metadata, validate
from gui import settings
from gui.dialogs import choose_paths, show_error
from gui.models.diff_model import TONE_COLOURS
from gui.samples import SAMPLES
from gui.workbench.diff_panel import show_diff_dock
from gui.workbench.document import RecipeDocument, RecipeState
from gui.workbench.export.destination import DestinationRow
from gui.workbench.export.footer import ExportFooter
from gui.workbench.export.format_row import FormatRow
from gui.workbench.export.metadata_section import MetadataSection
from gui.workbench.plan_result import PlanResult
from gui.workers import Failure, ProgressRelay, Task, TaskRunner

SAVE_FILTER = "Burnpack (*.bpk);;SafeTensors (*.safetensors);;All files (*)"
PROGRESS_STEPS = 1000  # QProgressDialog counts in int; bytes of a large file do not fit
OVERWRITE_QUESTION = "overwriteQuestion"  # object names, so tests and scripts can find the dialogs
EXPORT_PROGRESS = "exportProgress"
MISMATCH_QUESTION = "mismatchQuestion"
MISMATCHES_NAMED = 12  # the confirmation lists this many mismatches, then counts the rest


def mismatch_text(mismatch: ShapeMismatch) -> str:
    """``fc.weight: here [2, 4], template [5, 4]``: one line of the mismatch list, as the CLI words it."""
    hint = " (matches if transposed)" if mismatch.matches_if_transposed else ""
    return (f"{mismatch.name}: here {list(mismatch.source_shape)}, template {humanize.shape(mismatch.template_shape)}"
            f"{hint}")


class ExportDialog(QDialog):
    """``exported(Path)`` once a file is written; the dialog stays open to offer a diff of the result.

    It renders what the document's signals hand it (the RecipeState, the latest PlanResult, the busy flag
    and the planning error) and sends the document nothing but the diff request.
    """

    exported = Signal(object)

    def __init__(self, document: RecipeDocument, window: QMainWindow | None = None) -> None:
        super().__init__(window)
        self.setObjectName("exportDialog")
        self.setWindowTitle("Export")
        self.document = document
        self.main_window = window
        self._state: RecipeState = document.state
        self._planned: PlanResult | None = document.result
        self._busy, self._error = document.busy, document.error
        self.exported_path: Path | None = None
        self.progress_dialog: QProgressDialog | None = None
        self.progress_relay = ProgressRelay(self)
        self.progress_relay.changed.connect(self._progress)
        self._runner = TaskRunner(self)
        self._task: Task | None = None
        self._started = 0.0
        self._dest_name = ""
        self._confirmed: Path | None = None  # a destination the file chooser already asked to replace
        self._build()
        self._listen(document)
        self._path_edited(self.path_edit.text())
        self._derive_metadata()
        self._plan_changed()

    # --- building -------------------------------------------------------------------------------------
    def _build(self) -> None:
        """The sections (gui/workbench/export/), placed here; their widgets keep their names on the dialog."""
        quantized = any(e.dtype.kind == "quantized" for s in self._state.stores for e in s.entries)
        self.where = DestinationRow(self._default_path())
        self.path_edit, self.exists_note = self.where.path_edit, self.where.exists_note
        self.kind = FormatRow(self._state.recipe.burn_version, quantized)
        self.format_combo, self.burn_combo = self.kind.format_combo, self.kind.burn_combo
        self.burn_label, self.dequantize = self.kind.burn_label, self.kind.dequantize
        self.quantize = self.kind.quantize
        self.summary, self.problem = QLabel(), QLabel()
        self.summary.setObjectName("exportSummary")
        self.problem.setObjectName("exportProblem")
        self.problem.setProperty("role", "problem")
        for label in (self.summary, self.problem):
            label.setWordWrap(True)
        self.fields = MetadataSection()
        self.metadata_table, self.add_button, self.remove_button = (self.fields.metadata_table, self.fields.add_button,
                                                                    self.fields.remove_button)
        self.footer = ExportFooter()
        self.result, self.diff_button = self.footer.result, self.footer.diff_button
        self.export_button, self.close_button = self.footer.export_button, self.footer.close_button
        form = QFormLayout()
        for label, widget in (("Save as:", self.where), ("Format:", self.kind), ("Contents:", self.summary),
                              ("", self.problem)):
            form.addRow(label, widget)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.fields, 1)
        layout.addWidget(self.footer)
        self.resize(660, 440)

    def _listen(self, document: RecipeDocument) -> None:
        """Wire the sections to the dialog and the dialog to what the document hands out."""
        self.where.browse.clicked.connect(self.choose_path)
        self.path_edit.textChanged.connect(self._path_edited)
        self.format_combo.currentIndexChanged.connect(self._format_chosen)
        self.diff_button.clicked.connect(self.diff_result)
        self.export_button.clicked.connect(self.start_export)
        self.close_button.clicked.connect(self.reject)
        document.recipeChanged.connect(self._state_changed)
        document.resultReady.connect(self._result_arrived)
        document.planFailed.connect(self._plan_failed)
        document.busyChanged.connect(self._busy_changed)  # no export of a plan an edit just made stale
        for changed in (self.format_combo.currentIndexChanged, self.burn_combo.currentIndexChanged,
                        self.path_edit.textChanged, self.dequantize.toggled,
                        self.quantize.currentIndexChanged):  # what the file can hold depends on its format and Burn version
            changed.connect(self._plan_changed)

    def _default_path(self) -> Path:
        """In the folder the last export went to, else beside the source; never in the application's own
        bundled samples, nor beside a remote file (then the home folder); never a file that exists:
        ``model.bpk``, else ``model-export.bpk``, ``-export-2``…"""
        source = self._state.home.path
        folder = settings.export_folder()
        if folder is None and (isinstance(source, RemoteLocation) or _within(Path(source), SAMPLES)):
            folder = Path.home()
        if folder is not None:
            source = folder / source.name
        ext = WRITABLE_FORMATS[0].extensions[0]  # Burnpack's: the format a Burn user exports to
        candidates = [source.with_suffix(ext)] + [
            source.with_name(f"{source.stem}-export{f'-{n}' if n > 1 else ''}{ext}") for n in range(1, 1000)]
        return next(path for path in candidates if not path.exists())

    # --- what the document hands over ---------------------------------------------------------------------
    def _state_changed(self, state: RecipeState) -> None:
        self._state = state

    def _result_arrived(self, result: PlanResult) -> None:
        self._planned, self._error = result, None
        self._derive_metadata()
        self._plan_changed()

    def _plan_failed(self, message: str) -> None:
        self._error = message
        self._plan_changed()

    def _busy_changed(self, busy: bool) -> None:
        self._busy = busy
        self._plan_changed()

    def _derive_metadata(self) -> None:
        """What ``convert`` writes for the chosen format, from the plan's own sources and recipe (the user's
        edits kept); before the first plan, from the sources as they are."""
        planned = self._planned
        stores, recipe = (planned.planned_stores, planned.recipe) if planned is not None else (self._state.stores,
                                                                                            self._state.recipe)
        self.fields.derive(export_metadata(stores, recipe, self.format()))

    # --- choices ----------------------------------------------------------------------------------------
    def destination(self) -> Path | None:
        return self.where.path()

    def format(self) -> str:
        return self.kind.format()

    def burn_version(self) -> BurnVersion:
        """The Burn release chosen (the recipe's until changed here)."""
        return self.kind.burn_version()

    def choose_path(self) -> None:
        path = next(iter(choose_paths(self, "Export to", self.path_edit.text(), SAVE_FILTER, save=True)), "")
        if path:  # the chooser asked already if it exists: Export will not ask again
            self._confirmed = Path(path)
            self.path_edit.setText(path)

    def _path_edited(self, text: str) -> None:
        """The format follows the extension typed or chosen; an existing file is pointed out right away."""
        self.where.show_exists()
        if self.kind.follow_extension(format_for_path(text) if text.strip() else None):
            self._derive_metadata()
        self.kind.show_burn_choice()

    def _format_chosen(self) -> None:
        """The extension follows the format chosen, unless the name has an extension of its own; the metadata
        follows the format."""
        self._derive_metadata()
        path = self.destination()
        if path is None:
            return
        current = format_for_path(path)
        if current != self.format() and (current is not None or not path.suffix):
            self.path_edit.setText(str(path.with_suffix(writable_format(self.format()).extensions[0])))

    def metadata(self) -> dict[str, str]:
        """The table as text to text; rows without a key are ignored, a later key wins."""
        return self.fields.metadata()

    def add_metadata_row(self, key: str, value: str, edit: bool = False) -> int:
        return self.fields.add_row(key, value, edit)

    def remove_selected_metadata(self) -> None:
        self.fields.remove_selected()

    def _plan_changed(self, *_: object) -> None:
        plan = self._planned.plan if self._planned is not None else None
        self.export_button.setEnabled(plan is not None and self._task is None and not self._busy)
        if plan is None:
            self.summary.setText("Planning the recipe…" if self._error is None else "")
            self._set_problem(f"The recipe cannot be planned: {self._error}" if self._error else "")
            return
        total = sum(t.nbytes for t in plan.tensors)
        changed = sum(1 for t in plan.tensors if t.ops)
        sources = ", ".join(s.path.name for s in self._planned.planned_stores)
        lines, quantized = self._written_as(plan)
        self.summary.setText("\n".join([f"{len(plan.tensors):,} tensors · {humanize.size(total)} from {sources} · "
                                        f"{changed:,} changed by recipe {plan.recipe.digest()}", *lines]))
        self.summary.setToolTip(f"{total:,} bytes of tensor data" + (
            f"\nQuantized: {', '.join(quantized[:50])}{' …' if len(quantized) > 50 else ''}" if quantized else ""))
        mismatches = self._mismatches()
        if plan.conflicts:
            self._set_problem(f"⚠ {len(plan.conflicts):,} name conflict(s): the export will be refused until the "
                              f"recipe is fixed ({plan.conflicts[0]}).")
        elif mismatches and self._planned.template is not None:
            self._set_problem(f"⚠ {len(mismatches):,} tensor shape(s) differ from the template "
                              f"{self._planned.template.path.name} ({mismatch_text(mismatches[0])}): the model "
                              f"cannot load them. Export asks before writing anyway.")
        elif self._unwritable(plan):
            self._set_problem(f"⚠ {self._unwritable(plan)}; the export will be refused.")
        elif self._error:
            self._set_problem(f"⚠ The latest recipe edit cannot be planned ({self._error}); the export "
                              f"writes the last good plan.")
        else:
            self._set_problem("")

    def _written_as(self, plan: Plan) -> tuple[list[str], list[str]]:
        """What the export does to tensors whose bytes change on the way, as ``convert`` says it: GGUF block types
        kept or dequantized, float weights quantized (and the chosen ones left float, by reason); and the names
        of the tensors it quantizes (the tooltip lists them: the choice rests on module kinds read from names)."""
        fmt, version, dequantize = self.format(), self.burn_version(), self.dequantize.isChecked()
        lines = [c.line() for c in gguf_conversions(plan.tensors, fmt, version, dequantize)]
        spec, chosen = self.kind.quantize_spec(), []
        if spec is not None:
            chosen, refused = quantized_choices(plan.tensors, spec)
            lines.append(f"{humanize.plural(len(chosen), 'tensor')} quantized as Burn's {spec.describe(version)}")
            lines += [f"left float: {', '.join(names[:3])}{' …' if len(names) > 3 else ''} ({reason})"
                      for reason, names in refused.items()]
        return lines, chosen

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
        planned = self._planned
        if planned is None or planned.template is None:
            return []
        plan, template, alignment = planned.plan, planned.template, planned.alignment
        # the worker aligned this plan with this template already; only a plan made before the template lacks it
        return list(alignment.shape_mismatches) if alignment is not None else validate(plan, template)

    # --- exporting --------------------------------------------------------------------------------------
    def start_export(self) -> None:
        """Refuse shape mismatches unless confirmed, ask before replacing a file, then export in a worker."""
        plan, dest = self._planned.plan if self._planned is not None else None, self.destination()
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
        template = self._planned.template if self._planned is not None else None
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
        dequantize, quantize = self.dequantize.isChecked(), self.kind.quantize_spec()
        _, scalars = carried_metadata(self._planned.planned_stores, plan.recipe, fmt)  # as convert does

        def work(cancelled: Callable[[], bool]) -> Path:
            return plan.export(dest, fmt, metadata=metadata, scalars=scalars, overwrite=overwrite,
                               progress=relay.reporter(cancelled), cancel=cancelled, burn_version=version,
                               dequantize=dequantize, quantize=quantize)

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
        settings.remember_export_folder(path.parent)
        seconds = time.monotonic() - self._started
        took = f"{seconds:.1f} s" if seconds >= 1 else "under a second"
        total = sum(t.nbytes for t in plan.tensors)
        mismatches = self._mismatches() if self._planned is not None and self._planned.plan is plan else []
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
        self.footer.show_result(text, problem)

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


def _within(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def run_export(window: QMainWindow, document: RecipeDocument) -> ExportDialog:
    """File › Export… (Ctrl+E): the export dialog for ``document``, window-modal and non-blocking."""
    dialog = ExportDialog(document, window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog

