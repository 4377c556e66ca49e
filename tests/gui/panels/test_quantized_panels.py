"""Quantized Burnpack tensors in the window: the scheme in words, statistics and values of the dequantized
values, the stored integers one click away, the Burn releases a file loads in, and the export's Burn version."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QMessageBox

from engine import open_store
from engine.tree import build_tree
from gui.main_window import MainWindow
from gui.panels.details import DetailsPanel
from gui.panels.values import ValuesPanel
from gui.workbench.document import RecipeDocument
from gui.workbench.export_dialog import run_export
from gui.workers import TaskRunner

from tests.helpers.formats_quantized_files import f32, gen2, i8, read_meta, write

INTS = [-7, -3, 0, 5, 7, 1, -1, 2]
SCALES = [0.5, 0.25]


@pytest.fixture
def quantized_file(tmp_path) -> Path:
    """Q8S, blocks of 4 over [2, 4] (one block a row), F32 block scales; and a native bool."""
    return write(tmp_path, {"w": ({"QFloat": gen2(store="Native", blocks=(4,))}, [2, 4], i8(*INTS) + f32(*SCALES)),
                            "mask": ({"Bool": "Native"}, [2], bytes([1, 0]))})


def dequantized() -> list[list[float]]:
    return [[v * SCALES[0] for v in INTS[:4]], [v * SCALES[1] for v in INTS[4:]]]


def test_details_name_the_scheme_and_compute_statistics_of_the_dequantized_values(qtbot, quantized_file):
    panel = DetailsPanel(TaskRunner())
    qtbot.addWidget(panel)
    panel.show()
    with open_store(quantized_file) as store:
        panel.show_node(build_tree(store.entries).find("w"), None)
        qtbot.waitUntil(lambda: panel.stats is not None, timeout=10_000)
        texts = [label.text() for label in panel.findChildren(QLabel) if label.isVisible()]
        assert "Q8S, blocks of 4, F32 block scales" in texts
        assert panel.stats.min == -3.5 and panel.stats.max == 2.5
        assert panel.stats_status.text() == "Of the dequantized values."


def test_the_stored_integers_are_one_click_from_the_dequantized_values(qtbot, quantized_file):
    panel = ValuesPanel(TaskRunner())
    qtbot.addWidget(panel)
    panel.resize(500, 400)
    panel.show()
    with open_store(quantized_file) as store:
        panel.show_entry(store.entry("w"))
        qtbot.waitUntil(lambda: panel.current is not None, timeout=10_000)
        assert panel.stored.isVisible() and not panel.stored.isChecked()
        assert panel.current.cells.tolist() == dequantized()
        qtbot.mouseClick(panel.stored, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: panel.current is not None and panel.current.cells.dtype == np.int8, timeout=10_000)
        assert panel.current.cells.tolist() == [INTS[:4], INTS[4:]]
        assert panel.caption.text().endswith("stored integers")
        panel.show_entry(store.entry("mask"))
        assert not panel.stored.isVisible() and not panel.stored.isChecked()


def test_values_burn_does_not_decode_say_why(qtbot, tmp_path):
    panel = ValuesPanel(TaskRunner())
    qtbot.addWidget(panel)
    panel.show()
    path = write(tmp_path, {"w": ({"QFloat": gen2("E4M3", store="Native")}, [4], i8(1, 2, 3, 4) + f32(1.0))})
    with open_store(path) as store:
        panel.show_entry(store.entry("w"))
    assert panel.message.text().startswith("E4M3 values are not decoded by Burn's QuantizedBytes")
    assert not panel.stored.isVisible()


def test_the_file_panel_says_which_burn_releases_load_the_file(open_view, quantized_file):
    view = open_view(quantized_file)
    texts = [label.text() for label in view.file_info.findChildren(QLabel)]
    assert view.file_info.burn_label.text() == "Burn 0.22"
    assert any("its quantization scheme is #5262's" in t for t in texts)
    assert any("are from Burn 0.21 (#4649)" in t for t in texts)
    assert "Q8S, blocks of 4, F32 block scales (1 tensor)" in texts


@pytest.fixture
def bool_document(window: MainWindow, qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(MainWindow, "ask_save", lambda self, view: QMessageBox.StandardButton.Discard)
    store = open_store(write(tmp_path, {"mask": ({"Bool": "Native"}, [3], bytes([1, 0, 1]))}, "bools.bpk"))
    document = RecipeDocument(store, window.work)
    qtbot.waitUntil(lambda: not document.busy and document.plan is not None, timeout=10_000)
    yield document
    document.close()
    store.close()


def test_the_export_dialog_writes_for_the_burn_version_chosen(window, bool_document, qtbot, tmp_path):
    dialog = run_export(window, bool_document)
    assert dialog.burn_combo.currentData() == "0.22" and dialog.burn_combo.isVisible()
    assert not dialog.dequantize.isVisible()  # nothing quantized to dequantize
    dialog.format_combo.setCurrentIndex(dialog.format_combo.findData("safetensors"))
    assert not dialog.burn_combo.isVisible()
    dialog.path_edit.setText(str(tmp_path / "old.bpk"))
    assert dialog.burn_combo.isVisible()
    dialog.burn_combo.setCurrentIndex(dialog.burn_combo.findData("0.20"))
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=10_000)
    assert read_meta(tmp_path / "old.bpk")["tensors"]["mask"]["dtype"] == "Bool"
    with open_store(tmp_path / "old.bpk") as written:
        assert [v.value for v in written.burn.loads_in] == ["0.20"]


def test_the_export_dialog_warns_before_writing_what_the_choice_cannot_hold(window, qtbot, tmp_path):
    store = open_store(write(tmp_path, {"w": ({"QFloat": gen2(store="Native", tensor="F32", blocks=(4,),
                                                              block_dtype="F16")}, [8], i8(*[1] * 8) + bytes(4) + f32(1.0))},
                             "two_level.bpk"))
    document = RecipeDocument(store, window.work)
    qtbot.waitUntil(lambda: not document.busy and document.plan is not None, timeout=10_000)
    try:
        dialog = run_export(window, document)
        assert not dialog.problem.isVisibleTo(dialog)
        dialog.burn_combo.setCurrentIndex(dialog.burn_combo.findData("0.21"))
        assert "Burn 0.21 has no two-level scales" in dialog.problem.text() and dialog.problem.isVisibleTo(dialog)
        dialog.path_edit.setText(str(tmp_path / "out.safetensors"))
        assert "SafeTensors has no quantized dtype" in dialog.problem.text()
        assert dialog.dequantize.isVisibleTo(dialog)
        qtbot.mouseClick(dialog.dequantize, Qt.MouseButton.LeftButton)
        assert not dialog.problem.isVisibleTo(dialog)
        qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=10_000)
        with open_store(tmp_path / "out.safetensors") as written:
            assert written.read("w").tobytes() == store.read("w").tobytes()  # F32, zero scales read as 0.1
            assert written.read("w").tolist() == pytest.approx([0.1] * 8)
        dialog.reject()
    finally:
        document.close()
        store.close()
