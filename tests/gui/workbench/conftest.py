"""Workbench tests start surgery on a real file in the real window and wait for its plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from gui.main_window import MainWindow
from gui.workbench.document import RecipeDocument
from tests.helpers.gui_workbench import SAMPLE_PT, settle


@pytest.fixture(autouse=True)
def discard_on_close(monkeypatch) -> None:
    """Closing the window at teardown must not wait on a modal "save the recipe?" question."""
    monkeypatch.setattr(MainWindow, "ask_save", lambda self, view: QMessageBox.StandardButton.Discard)


@pytest.fixture
def surgery(window: MainWindow, open_view, qtbot):
    """Open ``path``, start surgery from the Surgery menu, and return the tab's document once planned."""

    def start(path: Path = SAMPLE_PT) -> RecipeDocument:
        view = open_view(path)
        window.actions.start_surgery.trigger()
        assert view.document is not None
        settle(qtbot, view.document)
        return view.document

    return start
