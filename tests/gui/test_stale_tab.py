"""A file that changes on disk while its tab is open: the tab says so and offers Reload."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QPushButton

from engine import ArrayStore, export
from gui.main_window import MainWindow
from gui.stale_watch import STALE_BAR, STALE_SUFFIX

SHOTS = Path("/tmp/bt-i12-shots")


def _model(path: Path, fill: float) -> Path:
    export(ArrayStore({"fc.weight": np.full((4, 3), fill, np.float32), "fc.bias": np.zeros(4, np.float32)}).entries,
           path, overwrite=True)
    return path


def test_a_file_rewritten_in_place_marks_its_tab_stale_and_reload_shows_the_new_file(window: MainWindow, open_view,
                                                                                      qtbot, tmp_path: Path) -> None:
    path = _model(tmp_path / "live.safetensors", 1.0)
    view = open_view(path)
    assert window.tabs.tabText(window.tabs.indexOf(view)) == "live.safetensors"
    replacement = _model(tmp_path / "next.safetensors", 2.0).read_bytes()
    with open(path, "r+b") as f:  # a training job saving in place: same inode, other bytes
        f.write(replacement)
        f.truncate()
    qtbot.waitUntil(lambda: view.findChild(QFrame, STALE_BAR) is not None, timeout=30_000)
    index = window.tabs.indexOf(view)
    assert window.tabs.tabText(index) == "live.safetensors" + STALE_SUFFIX
    bar = view.findChild(QFrame, STALE_BAR)
    assert bar.isVisible() and "changed on disk" in bar.findChild(QLabel).text()
    assert view.select("fc.weight")  # the old header is still listed; its values are refused, in the panel
    qtbot.waitUntil(lambda: "changed on disk since it was opened" in view.values.message.text(), timeout=30_000)
    assert window.isVisible() and view.values.message.isVisible()
    SHOTS.mkdir(exist_ok=True)
    window.resize(1024, 640)
    window.grab().save(str(SHOTS / "stale-tab.png"))

    qtbot.mouseClick(bar.findChild(QPushButton, "reloadButton"), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.view_for(path.absolute()) not in (None, view), timeout=30_000)
    fresh = window.view_for(path.absolute())
    assert window.tabs.count() == 1 and window.tabs.tabText(window.tabs.indexOf(fresh)) == "live.safetensors"
    assert fresh.findChild(QFrame, STALE_BAR) is None
    assert float(fresh.store.read("fc.weight")[0, 0]) == 2.0


def test_a_file_replaced_by_rename_is_noticed_when_its_tab_is_shown_again(window: MainWindow, open_view, qtbot,
                                                                          tmp_path: Path) -> None:
    first = open_view(_model(tmp_path / "a.safetensors", 1.0))
    open_view(_model(tmp_path / "b.safetensors", 1.0))
    _model(tmp_path / "tmp.safetensors", 3.0).replace(tmp_path / "a.safetensors")  # an atomic saver's rename
    window.tabs.setCurrentWidget(first)
    qtbot.waitUntil(lambda: first.findChild(QFrame, STALE_BAR) is not None, timeout=30_000)
    assert window.tabs.tabText(window.tabs.indexOf(first)).endswith(STALE_SUFFIX)
    assert window.tabs.tabText(window.tabs.indexOf(window.view_for((tmp_path / "b.safetensors").absolute()))) \
        == "b.safetensors"


def test_the_stale_bar_is_visible_the_moment_the_tab_is_marked(window: MainWindow, open_view, tmp_path: Path) -> None:
    """No event loop turn between the check and the assert: the bar must not wait for a queued show."""
    path = _model(tmp_path / "live.safetensors", 1.0)
    view = open_view(path)
    with open(path, "r+b") as f:
        f.write(_model(tmp_path / "next.safetensors", 2.0).read_bytes())
    window.stale.check(str(path.absolute()))
    bar = view.findChild(QFrame, STALE_BAR)
    assert bar is not None and bar.isVisible() and window.stale.is_stale(view)
