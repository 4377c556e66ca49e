"""File › Export… driven like a user: choose a path, edit metadata, confirm an overwrite, cancel, fail, diff."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton

from engine import ArrayStore, export, open_store
from tests.helpers.samples import SAMPLES
from engine.surgery import diff
from engine.surgery.plan import RECIPE_METADATA_KEY
from gui.dialogs import ERROR_DIALOG
from gui.main_window import MainWindow
from gui.workbench.diff_panel import DiffPanel
from gui.workbench.document import RecipeDocument
from gui.workbench.export_dialog import EXPORT_PROGRESS, OVERWRITE_QUESTION, ExportDialog, run_export


def _planned(document: RecipeDocument, qtbot) -> RecipeDocument:
    qtbot.waitUntil(lambda: not document.busy and document.plan is not None
                    and document.plan.recipe == document.recipe, timeout=30_000)
    return document


@pytest.fixture
def sample_document(window: MainWindow, qtbot):
    """The sample CNN (.pt) with the pytorch-to-burn adapter, planned."""
    store = open_store(SAMPLES / "sample_cnn.pt")
    document = RecipeDocument(store, window.work)
    document.push(document.recipe.with_changes(adapters=("pytorch-to-burn",)), "Add adapter")
    yield _planned(document, qtbot)
    document.close()
    store.close()


def _top_level(name: str):
    return [w for w in QApplication.topLevelWidgets() if w.objectName() == name and w.isVisible()]


def _dialog(window: MainWindow, document: RecipeDocument, dest: Path) -> ExportDialog:
    dialog = run_export(window, document)
    dialog.path_edit.setText(str(dest))
    return dialog


def _answer_overwrite(qtbot, button: QMessageBox.StandardButton) -> None:
    qtbot.waitUntil(lambda: bool(_top_level(OVERWRITE_QUESTION)), timeout=30_000)
    box = _top_level(OVERWRITE_QUESTION)[0]
    qtbot.mouseClick(box.button(button), Qt.MouseButton.LeftButton)


def test_exports_the_plan_to_burnpack_with_edited_metadata(window, sample_document, qtbot, tmp_path):
    dest = tmp_path / "model.bpk"
    dialog = _dialog(window, sample_document, dest)
    assert dialog.format() == "burnpack"
    assert dialog.metadata()["pytorch.archive_version"] == "3"  # the source's own field, under its meaning
    assert dialog.metadata()[RECIPE_METADATA_KEY] == sample_document.recipe.digest()

    qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)
    row = dialog.metadata_table.rowCount() - 1
    dialog.metadata_table.item(row, 0).setText("author")
    dialog.metadata_table.item(row, 1).setText("Ada")
    dialog.metadata_table.item(0, 1).setText("store-studio tests")  # producer
    keys = [dialog.metadata_table.item(r, 0).text() for r in range(dialog.metadata_table.rowCount())]
    dialog.metadata_table.selectRow(keys.index("pytorch.byteorder"))
    qtbot.mouseClick(dialog.remove_button, Qt.MouseButton.LeftButton)

    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)
    assert "Exported 18 tensors" in dialog.result.text()
    assert dialog.diff_button.isEnabled()
    with open_store(dest) as written:
        plan = sample_document.plan
        expected = [(t.name, t.dtype, t.shape) for t in plan.tensors]
        assert [(e.name, e.dtype, e.shape) for e in written.entries] == expected
        assert diff(plan, written).all_identical
        # independently: the Burn layout make_samples.py wrote by hand, plus the int buffers the adapter keeps
        with open_store(SAMPLES / "sample_cnn.bpk") as burn:
            assert sorted(written.names) == sorted(burn.names + ["norm1.num_batches_tracked", "norm2.num_batches_tracked"])
            for name in burn.names:
                assert np.ascontiguousarray(written.read(name)).tobytes() == burn.read(name).tobytes(), name
        assert written.metadata["author"] == "Ada"
        assert written.metadata["producer"] == "store-studio tests"
        assert "pytorch.byteorder" not in written.metadata and written.metadata["pytorch.archive_version"] == "3"
        assert written.metadata[RECIPE_METADATA_KEY] == sample_document.recipe.digest()


def test_the_format_follows_the_extension_and_the_extension_the_format(window, sample_document, tmp_path):
    dialog = _dialog(window, sample_document, tmp_path / "model.safetensors")
    assert dialog.format() == "safetensors"
    dialog.format_combo.setCurrentIndex(dialog.format_combo.findData("burnpack"))
    assert dialog.path_edit.text().endswith("model.bpk")
    dialog.path_edit.setText(str(tmp_path / "model"))
    dialog.format_combo.setCurrentIndex(dialog.format_combo.findData("safetensors"))
    assert dialog.path_edit.text().endswith("model.safetensors")


def test_no_to_the_overwrite_question_leaves_the_file_untouched(window, sample_document, qtbot, tmp_path):
    dest = tmp_path / "model.bpk"
    dest.write_bytes(b"precious")
    dialog = _dialog(window, sample_document, dest)
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    _answer_overwrite(qtbot, QMessageBox.StandardButton.No)
    qtbot.waitUntil(lambda: "left as it was" in dialog.result.text(), timeout=30_000)
    assert not dialog.is_exporting() and dialog.exported_path is None
    assert dest.read_bytes() == b"precious"

    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    _answer_overwrite(qtbot, QMessageBox.StandardButton.Yes)
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)
    with open_store(dest) as written:
        assert len(written.entries) == 18


def test_cancel_during_a_large_export_leaves_the_old_file_and_no_partial(window, qtbot, tmp_path):
    big = tmp_path / "big.safetensors"
    export(ArrayStore({f"layer.{i}.weight": np.full((3, 4 << 20), i, np.float32) for i in range(4)}).entries, big)
    dest = tmp_path / "out.safetensors"
    old = export(ArrayStore({"old": np.arange(10, dtype=np.float32)}).entries, dest).read_bytes()
    store = open_store(big)
    document = _planned(RecipeDocument(store, window.work), qtbot)
    dialog = _dialog(window, document, dest)
    # Hold the worker at its first progress report until Cancel has been clicked, so the export
    # cannot finish first however fast the disk is.
    clicked, first = threading.Event(), threading.Event()

    def hold(done: int, total: int) -> None:
        if not first.is_set():
            first.set()
            clicked.wait(20)

    dialog.progress_relay.changed.connect(hold, Qt.ConnectionType.DirectConnection)
    try:
        qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
        _answer_overwrite(qtbot, QMessageBox.StandardButton.Yes)
        qtbot.waitUntil(lambda: first.is_set() and dialog.progress_dialog is not None
                        and dialog.progress_dialog.value() > 0, timeout=30_000)
        progress = dialog.progress_dialog
        assert progress.objectName() == EXPORT_PROGRESS and progress.isVisible()
        assert " of 192 MiB" in progress.labelText() and "/s" in progress.labelText() and "left" in progress.labelText()
        qtbot.mouseClick(progress.findChild(QPushButton), Qt.MouseButton.LeftButton)
    finally:
        clicked.set()
    qtbot.waitUntil(lambda: not dialog.is_exporting(), timeout=20_000)
    assert "cancelled" in dialog.result.text() and "left as it was" in dialog.result.text()
    assert dest.read_bytes() == old
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    assert dialog.exported_path is None and not dialog.diff_button.isEnabled()
    document.close()
    store.close()


def test_a_failing_export_shows_the_error_dialog_and_the_app_lives_on(window, sample_document, qtbot, tmp_path):
    sample_document.add_remap(r"^conv1\.bias$", "conv1.weight")  # two tensors land on one name
    _planned(sample_document, qtbot)
    assert sample_document.plan.conflicts
    dest = tmp_path / "model.bpk"
    dialog = _dialog(window, sample_document, dest)
    assert dialog.problem.isVisibleTo(dialog) and "conflict" in dialog.problem.text()
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(_top_level(ERROR_DIALOG)), timeout=30_000)
    box = _top_level(ERROR_DIALOG)[0]
    assert "could not export model.bpk" in box.text()
    assert "conv1.weight" in box.informativeText()
    assert not dest.exists()
    box.button(QMessageBox.StandardButton.Ok).click()

    sample_document.undo_stack.undo()  # fix the recipe; the same dialog exports
    _planned(sample_document, qtbot)
    qtbot.waitUntil(lambda: not dialog.problem.isVisibleTo(dialog), timeout=30_000)
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)
    assert dest.exists() and window.isVisible()


def test_diff_result_against_source_shows_every_tensor_identical(window, sample_document, qtbot, tmp_path):
    dialog = _dialog(window, sample_document, tmp_path / "model.bpk")
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.diff_button.isEnabled(), timeout=30_000)
    qtbot.mouseClick(dialog.diff_button, Qt.MouseButton.LeftButton)
    panel = window.findChild(DiffPanel)
    assert panel is not None and panel.isVisible()
    qtbot.waitUntil(lambda: panel.is_idle() and panel.model.rowCount() == 18, timeout=30_000)
    assert {row.status for row in panel.model.rows} == {"identical"}
    assert "everything matches" in panel.message.text()
    renamed = next(row for row in panel.model.rows if row.name == "norm1.gamma")
    assert "renamed from norm1.weight" in renamed.note  # the recipe's own operation, noted beside "identical"


def test_file_export_opens_the_dialog_for_the_current_tab_and_the_diff_lands_in_the_diff_dock(
        window, open_view, qtbot, tmp_path):
    open_view(SAMPLES / "sample_cnn.pt")
    document = window.surgery()
    document.push(document.recipe.with_changes(adapters=("pytorch-to-burn",)), "Add adapter")
    _planned(document, qtbot)
    window.actions.export.trigger()
    dialog = window.findChild(ExportDialog)
    assert dialog is not None and dialog.isVisible() and dialog.document is document
    dialog.path_edit.setText(str(tmp_path / "model.safetensors"))
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.diff_button.isEnabled(), timeout=30_000)
    qtbot.mouseClick(dialog.diff_button, Qt.MouseButton.LeftButton)
    panel = window.diff_dock.widget()
    assert isinstance(panel, DiffPanel) and panel.document is document and window.diff_dock.isVisible()
    qtbot.waitUntil(lambda: panel.is_idle() and panel.model.rowCount() == 18, timeout=30_000)
    assert {row.status for row in panel.model.rows} == {"identical"}


def test_the_default_destination_never_names_an_existing_file_and_an_existing_one_is_flagged_at_once(
        window: MainWindow, qtbot, tmp_path: Path):
    source = tmp_path / "model.safetensors"
    export(ArrayStore({"w": np.ones(3, np.float32)}).entries, source)
    for taken in ("model.bpk", "model-export.bpk"):
        (tmp_path / taken).write_bytes(b"someone else's file")
    with open_store(source) as store:
        document = _planned(RecipeDocument(store, window.work), qtbot)
        dialog = ExportDialog(document, window)
        qtbot.addWidget(dialog)
        dialog.show()
        assert dialog.destination() == tmp_path / "model-export-2.bpk"
        assert dialog.exists_note.isHidden()
        dialog.path_edit.setText(str(tmp_path / "model.bpk"))  # typed: the warning comes now, not on Export
        assert dialog.exists_note.isVisible() and "model.bpk exists" in dialog.exists_note.text()
        dialog.close()
        document.close()
