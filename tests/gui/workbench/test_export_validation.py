"""GUI export runs the CLI's template validation, and keeps Burnpack scalars Burnpack to Burnpack."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from engine import ArrayStore, export, open_store
from gui.main_window import MainWindow
from gui.workbench.export_dialog import MISMATCH_QUESTION, run_export

from tests.helpers.gui_workbench import model_and_template, settle


def _question(qtbot) -> QMessageBox:
    def shown() -> list:
        return [w for w in QApplication.topLevelWidgets() if w.objectName() == MISMATCH_QUESTION and w.isVisible()]
    qtbot.waitUntil(lambda: bool(shown()), timeout=30_000)
    return shown()[0]


@pytest.fixture
def mismatched(window: MainWindow, surgery, qtbot, tmp_path: Path):
    """A document whose result has 2.weight [2, 4] where the template wants [5, 4]."""
    source, template = model_and_template(tmp_path)
    document = surgery(source)
    document.set_template(open_store(template))
    settle(qtbot, document)
    return document


def test_a_shape_mismatch_blocks_the_export_until_confirmed_and_cancel_writes_nothing(window, mismatched, qtbot,
                                                                                        tmp_path: Path):
    dest = tmp_path / "out.safetensors"
    dialog = run_export(window, mismatched)
    dialog.path_edit.setText(str(dest))
    assert "1 tensor shape(s) differ from the template target.safetensors" in dialog.problem.text()
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    box = _question(qtbot)
    assert "2.weight: here [2, 4], template [5, 4]" in box.informativeText()
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Nothing exported" in dialog.result.text(), timeout=30_000)
    assert not dest.exists() and dialog.exported_path is None


def test_export_anyway_writes_the_result_and_says_so(window, mismatched, qtbot, tmp_path: Path):
    dest = tmp_path / "out.safetensors"
    dialog = run_export(window, mismatched)
    dialog.path_edit.setText(str(dest))
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    box = _question(qtbot)
    anyway = next(b for b in box.buttons() if b.text() == "Export Anyway")
    qtbot.mouseClick(anyway, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)
    assert "anyway with 1 shape mismatch" in dialog.result.text()
    with open_store(dest) as written:
        expected = {t.name: t.read() for t in mismatched.plan.tensors}
        assert sorted(written.names) == sorted(expected)
        for name, values in expected.items():
            np.testing.assert_array_equal(written.read(name), values)


def test_without_mismatches_export_asks_nothing(window, surgery, qtbot, tmp_path: Path):
    source = tmp_path / "net.pt"
    torch.save(torch.nn.Linear(3, 2).state_dict(), source)
    template = tmp_path / "t.safetensors"
    export(ArrayStore({"weight": np.zeros((2, 3), np.float32), "bias": np.zeros(2, np.float32)}).entries, template)
    document = surgery(source)
    document.set_template(open_store(template))
    settle(qtbot, document)
    dialog = run_export(window, document)
    dialog.path_edit.setText(str(tmp_path / "ok.safetensors"))
    assert not dialog.problem.isVisible()
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)


def test_burnpack_scalars_survive_a_gui_export_burnpack_to_burnpack(window, surgery, qtbot, tmp_path: Path):
    source = tmp_path / "with_scalars.bpk"
    scalars = {"epoch": {"Int": 7}, "lr": {"Float": 0.5}}
    export(ArrayStore({"fc.weight": np.arange(6, dtype=np.float32).reshape(2, 3)}).entries, source, scalars=scalars)
    document = surgery(source)
    for dest, kept in ((tmp_path / "copy.bpk", scalars), (tmp_path / "copy.safetensors", {})):
        dialog = run_export(window, document)
        dialog.path_edit.setText(str(dest))
        qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)
        with open_store(dest) as written:
            assert written.scalars == kept
            np.testing.assert_array_equal(written.read("fc.weight"), np.arange(6, dtype=np.float32).reshape(2, 3))
        dialog.close()


def test_the_sources_metadata_is_offered_for_export_unless_the_recipe_clears_it(window, surgery, qtbot,
                                                                                 tmp_path: Path):
    source = tmp_path / "meta.safetensors"
    export(ArrayStore({"w": np.ones(2, np.float32)}).entries, source, metadata={"license": "MIT", "producer": "x"})
    document = surgery(source)
    dialog = run_export(window, document)
    assert dialog.metadata()["license"] == "MIT" and dialog.metadata()["producer"] == "store-studio"
    dialog.path_edit.setText(str(tmp_path / "out.bpk"))
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)
    with open_store(tmp_path / "out.bpk") as written:
        assert written.metadata["license"] == "MIT" and written.metadata["format"] == "burnpack"
    dialog.close()
    document.push(document.recipe.with_changes(clear_metadata=True), "Clear metadata")
    settle(qtbot, document)
    assert "license" not in run_export(window, document).metadata()
