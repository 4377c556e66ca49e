"""The window survives each class of hostile file: a dialog naming the file and the problem, the
window still answers, and a good file opens after (the worst size of each class)."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtWidgets import QMessageBox

from gui.dialogs import ERROR_DIALOG
from gui.main_window import MainWindow
from tests.helpers.hard_hostile_files import CATALOGUE
from tests.helpers.samples import SAMPLES

# Per class, the largest case that is refused (the aliases' class opens: it is covered by the CLI test).
WORST = {kind: (label, build, refuses) for kind, label, build, refuses in CATALOGUE if refuses is not None}


def visible_error(window: MainWindow) -> QMessageBox | None:
    box = window.findChild(QMessageBox, ERROR_DIALOG)
    return box if box is not None and box.isVisible() else None


def test_each_hostile_class_gets_a_dialog_and_the_window_stays_usable(window: MainWindow, open_view, qtbot,
                                                                      tmp_path: Path) -> None:
    assert len(WORST) >= 6
    for kind, (label, build, refuses) in WORST.items():
        folder = tmp_path / kind
        folder.mkdir()
        path = build(folder)
        window.open_file(path)
        qtbot.waitUntil(lambda: visible_error(window) is not None, timeout=20_000)
        box = visible_error(window)
        assert path.name in box.text(), kind
        assert re.search(refuses, box.informativeText()), f"{kind} {label}: {box.informativeText()}"
        assert "Traceback" not in box.informativeText()
        box.close()
        qtbot.waitUntil(lambda: visible_error(window) is None, timeout=30_000)
        assert window.isVisible() and window.tabs.count() == 0 and window.is_idle()
    view = open_view(SAMPLES / "sample_cnn.bpk")
    assert view.model.rowCount() > 0
