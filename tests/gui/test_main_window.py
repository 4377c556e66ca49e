"""The real window, driven like a user would: open each format, browse, filter, survive a broken file."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QMimeData, QPointF, Qt, QThreadPool, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox, QPushButton

from engine import open_store
from tests.helpers.samples import SAMPLES
from gui.dialogs import ERROR_DIALOG
from gui.panels import details as details_module
from gui.main_window import MainWindow
from gui.models.tree_model import NODE_ROLE, Column


FORMATS = ["bpk", "safetensors", "pt"]


CONFIG_PT = Path(__file__).resolve().parent.parent / "fixtures" / "burn-pytorch-tests" / "config" / "weights_with_config.pt"


def _sample(ext: str) -> Path:
    return SAMPLES / f"sample_cnn.{ext}"


@pytest.mark.parametrize("ext", FORMATS)
def test_each_format_opens_expands_and_shows_statistics(window: MainWindow, open_view, qtbot, ext: str):
    view = open_view(_sample(ext))
    model = view.model
    names = [model.index(row, 0).data() for row in range(model.rowCount())]
    assert "conv1" in names and "fc1" in names
    conv1 = model.index(names.index("conv1"), 0)
    view.tree_view.expand(conv1)
    children = [model.index(row, 0, conv1).data() for row in range(model.rowCount(conv1))]
    file_order = [e.name.split(".")[1] for e in view.store.entries if e.name.startswith("conv1.")]
    assert children == file_order  # the order the file holds them (module order), not sorted

    weight = model.index(children.index("weight"), 0, conv1)
    view.tree_view.setCurrentIndex(weight)
    qtbot.waitUntil(lambda: view.details.stats is not None, timeout=30_000)
    with open_store(_sample(ext)) as store:
        expected = store.read("conv1.weight").astype(np.float64)
    stats = view.details.stats
    assert stats.count == expected.size
    assert stats.min == pytest.approx(expected.min()) and stats.std == pytest.approx(expected.std(), rel=1e-5)
    assert view.details.title.text() == "conv1.weight"
    assert view.details.findChild(QLabel, "stat_min").text() == f"{expected.min():.6g}"
    assert view.side.currentIndex() == 0  # selecting a tensor brings its details forward
    assert window.summary.text().startswith(str(_sample(ext)))
    buffers = sum(e.numel for e in view.store.entries if e.dtype.kind != "float" or "running" in e.name)
    assert f"{view.store.total_params - buffers:,} parameters + {buffers:,} buffer values" in window.summary.text()


def test_groups_show_totals_with_right_aligned_numbers(window: MainWindow, open_view):
    view = open_view(_sample("bpk"))
    model = view.model
    row = [model.index(r, 0).data() for r in range(model.rowCount())].index("fc1")
    assert model.index(row, Column.SHAPE).data() == "2 tensors"
    assert model.index(row, Column.PARAMS).data() == f"{800 * 128 + 128:,}"
    alignment = model.index(row, Column.SIZE).data(Qt.ItemDataRole.TextAlignmentRole)
    assert alignment & Qt.AlignmentFlag.AlignRight
    assert model.index(row, Column.SIZE).data(Qt.ItemDataRole.ToolTipRole) == f"{(800 * 128 + 128) * 4:,} bytes"


def test_search_filters_live_and_counts_matches(window: MainWindow, open_view, qtbot):
    view = open_view(_sample("bpk"))
    total = len(view.store.entries)
    assert window.match_label.text() == f"{total} tensors"
    qtbot.keyClicks(window.search, "running")
    qtbot.waitUntil(lambda: window.match_label.text() == f"4 of {total} match", timeout=30_000)
    shown = [view.model.index(r, 0).data() for r in range(view.model.rowCount())]
    assert shown == ["norm1", "norm2"]
    norm1 = view.model.index(0, 0)
    assert view.tree_view.isExpanded(norm1)  # a small result opens up
    assert view.model.index(0, 0, norm1).data(NODE_ROLE).path == "norm1.running_mean"

    window.search.clear()
    qtbot.waitUntil(lambda: window.match_label.text() == f"{total} tensors", timeout=30_000)
    assert view.model.rowCount() == 6


def test_regex_search_and_an_invalid_regex_is_marked_not_fatal(window: MainWindow, open_view, qtbot):
    view = open_view(_sample("bpk"))
    total = len(view.store.entries)
    window.regex.setChecked(True)
    qtbot.keyClicks(window.search, r"^fc\d\.bias$")
    qtbot.waitUntil(lambda: window.match_label.text() == f"2 of {total} match", timeout=30_000)
    window.search.setText("conv[")
    qtbot.waitUntil(lambda: "Invalid regex" in window.match_label.text(), timeout=30_000)
    assert window.search.property("invalid") is True
    assert window.search.toolTip() == "invalid regex: unclosed class at position 4"
    assert view.model.rowCount() == 2  # the last good filter stays on show
    window.search.setText("(?<=conv)1")  # burn-store's regex has no look-behind: neither has the search box
    qtbot.waitUntil(lambda: "look-around" in window.search.toolTip(), timeout=30_000)
    assert window.search.property("invalid") is True and view.model.rowCount() == 2
    window.search.setText("conv[12]")
    qtbot.waitUntil(lambda: window.match_label.text() == f"4 of {total} match", timeout=30_000)
    assert window.search.property("invalid") is False


def test_ctrl_f_focuses_the_search_box(window: MainWindow, open_view, qtbot):
    open_view(_sample("bpk"))
    window.activateWindow()
    window.actions.find.trigger()
    assert window.actions.find.shortcut().matches(Qt.Modifier.CTRL | Qt.Key.Key_F).name == "ExactMatch"
    qtbot.waitUntil(window.search.hasFocus, timeout=30_000)


def _error_dialog(window: MainWindow) -> QMessageBox | None:
    box = window.findChild(QMessageBox, ERROR_DIALOG)
    return box if box is not None and box.isVisible() else None


def test_a_broken_file_shows_an_error_dialog_and_the_window_lives_on(window: MainWindow, open_view, qtbot, tmp_path):
    broken = tmp_path / "broken.bpk"
    broken.write_bytes(_sample("bpk").read_bytes()[:40])
    window.open_file(broken)
    qtbot.waitUntil(lambda: _error_dialog(window) is not None, timeout=30_000)
    box = _error_dialog(window)
    assert box.text() == "Store Studio could not open broken.bpk."
    assert "truncated" in box.informativeText().lower()
    assert box.informativeText()[0].isupper()
    assert "Traceback" in box.detailedText() and "FormatError" in box.detailedText()
    assert any("Details" in b.text() for b in box.buttons())
    box.close()
    assert window.tabs.count() == 0 and window.isVisible()

    view = open_view(_sample("safetensors"))
    assert window.tabs.count() == 1 and view.model.rowCount() > 0


def test_several_files_open_as_tabs_and_reopening_switches_tab(window: MainWindow, open_view, qtbot):
    bpk = open_view(_sample("bpk"))
    st = open_view(_sample("safetensors"))
    assert window.tabs.count() == 2 and window.current_view() is st
    window.open_file(_sample("bpk"))
    assert window.tabs.count() == 2 and window.current_view() is bpk
    window.close_current()
    assert window.tabs.count() == 1 and bpk.store.closed


def test_drop_opens_files(window: MainWindow, qtbot):
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(_sample("safetensors")))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=30_000)
    assert window.current_view().path == _sample("safetensors")


def test_recent_files_and_geometry_are_remembered(qapp, qtbot, open_view, window: MainWindow):
    open_view(_sample("bpk"))
    window.resize(640, 480)  # within the offscreen screen, which restoreGeometry clamps to
    recent = [a.text() for a in window.actions.recent.actions()]
    assert recent[0] == "sample_cnn.bpk"
    window.current_view().main_split.setSizes([300, 700])
    window.close()

    again = MainWindow()
    qtbot.addWidget(again)
    assert (again.width(), again.height()) == (640, 480)
    assert again.actions.recent.actions()[0].text() == "sample_cnn.bpk"
    again.actions.recent.actions()[0].trigger()
    qtbot.waitUntil(lambda: again.tabs.count() == 1, timeout=30_000)
    sizes = again.current_view().main_split.sizes()
    assert sizes[0] < sizes[1]


def test_values_preview_shows_a_slice_and_a_heat_map(window: MainWindow, open_view, qtbot):
    view = open_view(_sample("bpk"))
    assert view.select("conv2.weight")
    values = view.values
    qtbot.waitUntil(lambda: values.current is not None, timeout=30_000)
    assert len(values.spins) == 2  # [32, 16, 3, 3]: pick the first two, show the last two
    assert (values.model.rowCount(), values.model.columnCount()) == (3, 3)
    expected = view.store.read("conv2.weight")
    assert values.model.index(1, 2).data() == f"{expected[0, 0, 1, 2]:.6g}"
    values.spins[0].setValue(5)
    qtbot.waitUntil(lambda: values.current is not None and values.current.leading == (5, 0), timeout=30_000)
    assert values.model.index(0, 0).data() == f"{expected[5, 0, 0, 0]:.6g}"
    assert values.caption.text().startswith("[5, 0, :, :]")

    assert view.select("fc1.weight")
    qtbot.waitUntil(lambda: values.current is not None and values.current.cells.shape == (800, 128), timeout=30_000)
    assert not values.spins
    assert values.current.rgb is not None and values.current.rgb.shape == (400, 128, 3)  # every 2nd row of 800


def test_selecting_a_group_shows_its_totals_and_module(window: MainWindow, open_view, qtbot):
    view = open_view(_sample("bpk"))
    assert view.select("norm1")
    details = view.details
    assert details.summary.text().startswith("group · 4 tensors · 32 parameters + 32 buffer values")  # running stats
    assert details._fact_labels["module"].text().startswith("BatchNorm")
    assert details.stats_box.isHidden()


def test_statistics_that_arrive_after_the_selection_changed_are_ignored(window: MainWindow, open_view, qtbot,
                                                                       monkeypatch):
    """fc1.weight's statistics are computed and on their way (a queued signal) when conv1.bias is selected:
    they must not be shown, nor replace conv1.bias's, which the test releases only afterwards."""
    release = {"fc1.weight": threading.Event(), "conv1.bias": threading.Event()}
    release["fc1.weight"].set()
    real = details_module.stats_for

    def controlled(entry, cancel):
        assert release[entry.name].wait(60), "the test never released this worker"
        return real(entry, cancel=cancel)

    monkeypatch.setattr(details_module, "stats_for", controlled)
    view = open_view(_sample("bpk"))
    details = view.details
    view.select("fc1.weight")
    assert QThreadPool.globalInstance().waitForDone(60_000)  # fc1.weight's answer is queued, not yet delivered
    view.select("conv1.bias")
    QCoreApplication.processEvents()  # delivers the late answer for fc1.weight
    QCoreApplication.processEvents()
    assert details.stats is None
    assert details.stats_status.text() == "Computing statistics of 16 values…"
    assert details.progress.isVisibleTo(details)
    release["conv1.bias"].set()
    qtbot.waitUntil(lambda: details.stats is not None, timeout=30_000)
    with open_store(_sample("bpk")) as store:
        bias = store.read("conv1.bias").astype(np.float64)
    assert (details.stats.count, details.stats.min, details.stats.max) == (16, bias.min(), bias.max())


def test_copy_name_puts_the_full_path_on_the_clipboard(window: MainWindow, open_view):
    view = open_view(_sample("bpk"))
    view.select("norm2.running_var")
    window.actions.copy_path.trigger()
    assert QGuiApplication.clipboard().text() == "norm2.running_var"


def test_file_panel_shows_format_metadata_and_totals(window: MainWindow, open_view):
    view = open_view(_sample("bpk"))
    assert view.side.currentWidget() is view.file_info
    texts = [label.text() for label in view.file_info.findChildren(type(window.match_label))]
    assert "Burnpack v1" in texts
    buffers = view.loaded.tree.buffer_values
    assert buffers == 96 and f"{view.store.total_params - buffers:,}" in texts and f"{buffers:,}" in texts
    assert "SampleCnn" in texts  # metadata value
    assert any(t.startswith(f"{view.store.total_params:,}  (100.0%)") for t in texts)  # parameters by dtype


def test_pytorch_values_show_as_a_tree_and_copy_as_json(window: MainWindow, open_view, qtbot):
    view = open_view(CONFIG_PT)
    panel = view.file_info
    assert view.store.values["my_config"]["some_str"] == "hello"
    tree = panel.values_tree
    assert tree is not None and tree.topLevelItem(0).text(0) == "my_config"
    keys = {tree.topLevelItem(0).child(i).text(0): tree.topLevelItem(0).child(i).text(1)
            for i in range(tree.topLevelItem(0).childCount())}
    assert keys["some_str"] == '"hello"' and keys["some_bool"] == "true" and keys["n_head"] == "2"
    view.select(view.store.entries[0].name)
    window.actions.show_file.trigger()
    assert view.side.currentWidget() is panel
    panel.findChild(QPushButton, "copyJson").click()
    assert json.loads(QGuiApplication.clipboard().text()) == json.loads(json.dumps(view.store.values, default=str))


def test_starting_surgery_keeps_the_selection_details_in_view(qapp, qtbot, open_view, window: MainWindow):
    view = open_view(_sample("bpk"))
    view.main_split.setSizes([300, 700])
    assert view.select("fc1.weight")
    window.start_surgery()
    QApplication.processEvents()
    sizes = view.main_split.sizes()
    assert sizes[1] > 0 and sizes[0] > sizes[1]  # the tree favoured, the details still beside it
    assert view.details.isVisible() and view.details.title.full_text == "fc1.weight"
