"""Every GUI test gets its own settings folder and a fresh main window; workers finish before the next test."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, QThreadPool

from gui.app import create_app
from gui.main_window import MainWindow
from gui.store_view import StoreView


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path) -> Path:
    folder = tmp_path / "settings"
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    return folder


@pytest.fixture
def window(qapp, qtbot) -> MainWindow:
    create_app([])
    main = MainWindow()
    qtbot.addWidget(main)
    main.resize(1200, 800)
    main.show()
    yield main
    main.opener.cancel_all()
    main.work.cancel_all()
    QThreadPool.globalInstance().waitForDone(60_000)


@pytest.fixture
def open_view(window: MainWindow, qtbot):
    """Open a file in the window and return its tab once loaded."""

    def opener(path: Path) -> StoreView:
        window.open_file(path)
        qtbot.waitUntil(lambda: window.view_for(Path(path).absolute()) is not None, timeout=30_000)
        view = window.view_for(Path(path).absolute())
        assert view is not None
        return view

    return opener



@pytest.fixture
def heat_map(qtbot):
    """A factory: a values panel showing ``array`` with its heat map in front; returns the heat map widget."""
    from PySide6.QtWidgets import QApplication

    from engine import ArrayStore
    from gui.panels.values import ValuesPanel
    from gui.workers import TaskRunner

    panels = []  # the panels live as long as the test: their heat maps are their children

    def showing(array):
        panel = ValuesPanel(TaskRunner())
        panels.append(panel)
        qtbot.addWidget(panel)
        panel.resize(400, 400)
        panel.show()
        panel.show_entry(ArrayStore({"w": array}).entries[0])
        qtbot.waitUntil(lambda: panel.current is not None, timeout=30_000)
        panel.tabs.setCurrentWidget(panel.heat_map)
        QApplication.processEvents()
        return panel.heat_map

    return showing
