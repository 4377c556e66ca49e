"""Help > About shows the same version as ``store-studio --version``."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

import engine


def test_about_shows_the_engine_version(window):
    seen: list[str] = []

    def read_and_close(tries: int = 200) -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            seen.append(box.text())
            box.accept()
        elif tries:  # the box is not up yet: look again soon, never leave a modal dialog open
            QTimer.singleShot(10, lambda: read_and_close(tries - 1))

    QTimer.singleShot(0, read_and_close)
    window.actions.about.trigger()
    assert len(seen) == 1 and f"<b>Store Studio</b> {engine.__version__}" in seen[0]
