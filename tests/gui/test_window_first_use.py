"""The window as a first-time user meets it: a quick quit, details and histogram whole in the default window
and never left folded, leaf names whole, no dock scrolling sideways, shortcuts that do what their menu says, a
search box Escape clears, SafeTensors in name order, exports proposed where the user works, dialogs sized to
their content."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontMetrics
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QTextEdit

from gui import settings
from gui.dialogs import choose_paths, show_error
from gui.main_window import MainWindow
from gui.models.tree_model import Column
from gui.tree_name_delegate import elided_name
from gui.workbench.export_dialog import ExportDialog
from tests.helpers.samples import SAMPLES

REPO = Path(__file__).resolve().parents[2]
RECIPE = SAMPLES / "pytorch_to_burn.recipe.json"

QUIT_WITH_WORK_IN_FLIGHT = """
import os, sys, tempfile, threading
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QRunnable, QSettings, QThreadPool, QTimer
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp())
from gui.app import create_app, leave
from gui.main_window import MainWindow
app = create_app([sys.argv[0]])
window = MainWindow()
window.show()
never = threading.Event()

class Stuck(QRunnable):
    def run(self):
        print("working", flush=True)
        never.wait()  # a read that cannot notice a cancel (a whole tensor read for the heat map)

QThreadPool.globalInstance().start(Stuck())
QTimer.singleShot(0, window.close)
code = leave(app.exec())
print("unreachable: the exit waited for the stuck task", code)
"""


def test_quitting_ends_the_process_without_awaiting_work_in_flight():
    """Quit ends the process even while a worker cannot stop: no wait on the thread pool (a hang fails)."""
    done = subprocess.run([sys.executable, "-c", QUIT_WITH_WORK_IN_FLIGHT], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "working\n"


def test_quitting_with_nothing_in_flight_returns_the_code_for_an_ordinary_exit(qapp):
    from gui.app import leave
    assert leave(3) == 3


def selected(window: MainWindow, open_view, qtbot, path: Path, name: str):
    view = open_view(path)
    assert view.select(name)
    qtbot.waitUntil(lambda: view.details.stats is not None, timeout=30_000)
    QApplication.processEvents()
    return view


def test_the_details_and_histogram_fit_the_default_window_whole(window, open_view, qtbot):
    window.resize(1152, 720)
    view = selected(window, open_view, qtbot, SAMPLES / "sample_cnn.bpk", "fc1.weight")
    view.side.setCurrentIndex(0)
    qtbot.waitUntil(lambda: view.selection_split.sizes()[0] >= view.details.sizeHint().height() - 8, timeout=10_000)
    histogram = view.details.histogram
    bottom = histogram.mapTo(view.side, histogram.rect().bottomLeft()).y()
    scroll = view.side.findChild(type(view.selection_split.widget(0)), "detailsScroll")
    assert scroll.verticalScrollBar().maximum() <= 8  # at most a margin's worth hidden, never the histogram
    assert bottom < view.selection_split.widget(0).height() + view.selection_split.widget(0).y() + 8
    assert view.selection_split.sizes()[1] >= view.values.height_for_rows(2)  # the value table keeps its rows


def test_a_squeeze_folds_the_details_and_the_room_brings_them_back(window, open_view, qtbot):
    window.resize(1152, 720)
    view = selected(window, open_view, qtbot, SAMPLES / "sample_cnn.bpk", "fc1.weight")
    split = view.selection_split
    total = sum(split.sizes())
    split.resize(split.width(), view.values.height_for_rows(2) + 4)  # what the diff in front leaves at 640
    assert split.sizes()[0] == 0 and split.details_folded
    split.resize(split.width(), total)  # the diff closed
    qtbot.waitUntil(lambda: split.sizes()[0] >= min(view.details.sizeHint().height(),
                                                    total - view.values.height_for_rows(2)), timeout=10_000)
    assert not split.details_folded


def test_the_selection_split_is_not_carried_to_the_next_run(window, open_view, qtbot):
    """A fold saved by an earlier version (or any state) is not restored: the next run lays the details out anew."""
    settings.app_settings().setValue("splitters/selection", b"anything")
    window.resize(1152, 720)
    view = selected(window, open_view, qtbot, SAMPLES / "sample_cnn.bpk", "fc1.weight")
    assert "selection" not in view.splitters()
    window.close()
    assert settings.app_settings().value("splitters/selection") == b"anything"  # never written again


def test_a_leaf_name_stays_whole_and_the_path_gives_way(qapp):
    metrics = QFontMetrics(qapp.font())
    name = "encoder.layers.11.attention.output.dense.running_var"
    width = metrics.horizontalAdvance("encoder…running_var") + 4
    shown = elided_name(metrics, name, width)
    assert shown.endswith(".running_var") and "…" in shown and metrics.horizontalAdvance(shown) <= width
    leaf_only = elided_name(metrics, name, metrics.horizontalAdvance(".running_var") + 1)
    assert leaf_only == "running_var"
    assert elided_name(metrics, "weight", 1000) == "weight"
    tiny = elided_name(metrics, "running_var", metrics.horizontalAdvance("runn…"))
    assert tiny.startswith("runn") and tiny.endswith("…")  # only a leaf wider than the cell elides, at its end


def test_at_1024x640_a_renamed_row_shows_its_new_name_and_the_old_one_in_the_recipe_column(window, open_view, qtbot):
    window.resize(1024, 640)
    view = open_view(SAMPLES / "sample_cnn.pt")
    window.open_recipe(RECIPE)
    qtbot.waitUntil(lambda: view.model.has_marks, timeout=30_000)
    QApplication.processEvents()
    model = view.model
    norm1 = next(model.index(r, 0) for r in range(model.rowCount()) if model.index(r, 0).data() == "norm1")
    rows = {model.index(r, Column.NAME, norm1).data(): model.index(r, Column.RECIPE, norm1).data()
            for r in range(model.rowCount(norm1))}
    assert rows["bn1.gamma"] == "renamed from weight" and rows["bn1.running_var"] == "renamed from running_var"
    tip = model.index(0, Column.NAME, norm1).data(Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith("norm1.weight\n") and "bn1.gamma" in tip
    metrics = QFontMetrics(view.tree_view.font())
    need = metrics.horizontalAdvance("num_batches_tracked")
    assert view.tree_view.columnWidth(Column.NAME) >= need + 2 * view.tree_view.indentation()


@pytest.mark.parametrize("dock", ["filters", "remap", "adapters", "sources"])
def test_no_dock_scrolls_sideways_even_while_a_long_pattern_is_typed(window, open_view, qtbot, dock):
    window.resize(1024, 640)
    open_view(SAMPLES / "sample_cnn.pt")
    window.surgery()
    panel = window.workbench.show_panel(dock)
    area = window.docks[dock].widget()
    QApplication.processEvents()
    texts = ["", r"^features\.(\d+)\.(weight|bias|running_mean|running_var|num_batches_tracked)$", "(unclosed[",
             "a" * 300]
    for text in texts:
        if dock == "remap":
            panel.pattern.setText(text)
            panel.replacement.setText("layers.$1.and_a_rather_long_replacement_name_here")
        QApplication.processEvents()
        assert area.horizontalScrollBar().maximum() == 0, (dock, text[:20])


def test_ctrl_e_opens_the_export_dialog_and_not_the_workbench(window, open_view, qtbot):
    open_view(SAMPLES / "sample_cnn.pt")
    QTest.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.findChild(ExportDialog) is not None, timeout=10_000)
    assert window.findChild(ExportDialog).isVisible()
    assert not any(dock.isVisible() for dock in window.docks.values())
    window.findChild(ExportDialog).reject()


def test_a_tab_without_a_recipe_says_why_its_workbench_is_greyed_out(window, open_view, qtbot):
    open_view(SAMPLES / "sample_cnn.pt")
    window.surgery()
    assert window.docks["preview"].windowTitle() == "Preview"
    open_view(SAMPLES / "sample_cnn.bpk")
    assert not window.panels["filters"].isEnabled()
    assert window.docks["preview"].windowTitle() == ("Preview · this file has no recipe yet: Surgery › Start Surgery "
                                                     "(Ctrl+R) starts one")
    assert window.panels["remap"].toolTip().startswith("Greyed out: this file has no recipe yet")


def test_escape_clears_the_search_keeps_the_selection_and_the_tree_opens_again(window, open_view, qtbot):
    view = open_view(SAMPLES / "sample_cnn.bpk")
    assert view.select("fc1.weight")
    window.search.setText("fc")
    window.apply_filter()
    window.search.setFocus()
    QTest.keyClick(window.search, Qt.Key.Key_Escape)
    assert window.search.text() == ""
    qtbot.waitUntil(lambda: view.filter_text == "", timeout=10_000)
    assert view.current_node().path == "fc1.weight"
    model = view.model
    assert all(view.tree_view.isExpanded(model.index(r, 0)) for r in range(model.rowCount()))


def test_safetensors_opens_in_name_order_with_file_order_one_click_away(window, open_view, qtbot, tmp_path):
    from safetensors.numpy import save_file
    save_file({f"layers.{i}.w": np.ones(2, np.float32) for i in range(12)}, str(tmp_path / "m.safetensors"))
    view = open_view(tmp_path / "m.safetensors")
    layers = view.model.index(0, 0)
    names = [view.model.index(r, 0, layers).data() for r in range(view.model.rowCount(layers))]
    assert view.order.currentText() == "Name order" and names == [str(i) for i in range(12)]
    view.order.setCurrentText("File order")
    names = [view.model.index(r, 0, layers).data() for r in range(view.model.rowCount(layers))]
    assert names == sorted(str(i) for i in range(12))  # the library's own order: 0, 1, 10, 11, 2 ...
    other = open_view(SAMPLES / "sample_cnn.pt")
    assert other.order.currentText() == "File order"


def test_the_export_folder_is_never_the_bundled_samples_and_then_the_last_one_used(window, open_view, qtbot,
                                                                                   tmp_path, monkeypatch):
    monkeypatch.setattr(Path, "home", lambda: tmp_path / "home")
    (tmp_path / "home").mkdir()
    open_view(SAMPLES / "sample_cnn.pt")
    window.export_recipe()
    dialog = window.findChild(ExportDialog)
    assert Path(dialog.path_edit.text()).parent == tmp_path / "home"
    dialog.reject()
    (tmp_path / "work").mkdir()
    settings.remember_export_folder(tmp_path / "work")
    window.export_recipe()
    dialog = [d for d in window.findChildren(ExportDialog) if d.isVisible()][-1]
    assert Path(dialog.path_edit.text()) == tmp_path / "work" / "sample_cnn.bpk"
    dialog.reject()


def test_the_error_dialogs_details_are_as_wide_as_their_lines(qapp, qtbot):
    line = "File \"/some/long/path/to/engine/formats/pytorch/unpickler.py\", line 123, in run_in_memory " * 2
    box = show_error(None, "Could not open", "x.pt: broken", details=line)
    qtbot.addWidget(box)
    details = box.findChild(QTextEdit)
    widest = QFontMetrics(details.font()).horizontalAdvance(line)
    screen = box.screen().availableGeometry().width()
    assert details.minimumWidth() == min(widest + 40, int(screen * 0.8)) and details.minimumWidth() > 339
    box.close()


def test_a_file_dialog_opens_wide_enough_for_its_columns(qapp, qtbot, tmp_path):
    seen = {}

    def look():
        dialog = next(w for w in QApplication.topLevelWidgets() if isinstance(w, QFileDialog) and w.isVisible())
        seen["size"] = (dialog.width(), dialog.height())
        dialog.reject()

    QTimer.singleShot(200, look)
    assert choose_paths(None, "Open", str(tmp_path), "All files (*)") == []
    screen = qapp.primaryScreen().availableGeometry()
    assert seen["size"] == (min(900, int(screen.width() * 0.9)), min(560, int(screen.height() * 0.85)))


def test_at_1024x640_a_long_chain_of_operations_wraps_under_the_preview_in_full(window, open_view, qtbot):
    window.resize(1024, 640)
    open_view(SAMPLES / "sample_cnn.pt")
    window.open_recipe(RECIPE)
    panel = window.panels["preview"]
    qtbot.waitUntil(lambda: panel.model.plan is not None and any(t.ops for t in panel.model.plan.tensors),
                    timeout=30_000)
    QApplication.processEvents()
    assert panel.operations.isHidden()  # nothing chosen: no line
    sorted_rows = panel.sorted
    row = max(range(sorted_rows.rowCount()),
              key=lambda r: len(getattr(panel.model.row(sorted_rows.mapToSource(sorted_rows.index(r, 0)).row()),
                                        "ops", ())))
    panel.table.setCurrentIndex(sorted_rows.index(row, 0))
    QApplication.processEvents()
    item = panel.model.row(sorted_rows.mapToSource(sorted_rows.index(row, 0)).row())
    text = panel.operations.text().replace("\u200b", "")
    assert text.splitlines() == [f"{item.name} ← {item.source_name}:", *(f"  {op}" for op in item.operations)]
    assert panel.operations.isVisible() and panel.operations.wordWrap()
    assert panel.operations.width() <= panel.width()
    panel.table.clearSelection()
    panel.table.setCurrentIndex(panel.table.model().index(-1, -1))
    QApplication.processEvents()
    assert panel.operations.isHidden()
