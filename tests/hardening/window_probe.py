"""Open one model file in the real window (offscreen) as a user would, and print what it showed as JSON.

Run as ``python tests/hardening/window_probe.py FILE`` (``hard_child.run`` measures the whole run's peak memory with
wait4). The window opens FILE and selects its first tensor (the details compute its statistics, the values panel
reads it), paints, shows the selected row's tooltip and the details title's as hovering them would, and copies
the name. ``baseline`` is the peak resident memory once the window is up, before the file is opened: the parent
holds the run's peak above it to docs/limits.md's bound.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent, QPoint, QSettings, QThreadPool  # noqa: E402
from PySide6.QtGui import QGuiApplication, QHelpEvent  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QToolTip, QWidget  # noqa: E402

DEADLINE = 100.0  # seconds before a window that never settles is reported hung (child.TIMEOUT is 120)


def wait_until(condition: Callable[[], bool]) -> None:
    """Process events until ``condition`` holds, as pytest-qt's waitUntil does (QTest.qWait between checks)."""
    end = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > end:
            raise SystemExit("the window did not settle")
        QTest.qWait(10)


def hover(widget: QWidget, x: int, y: int) -> str:
    """The tooltip ``widget`` shows when the pointer rests at (x, y): the help event a hover sends."""
    QToolTip.hideText()
    event = QHelpEvent(QEvent.Type.ToolTip, QPoint(x, y), widget.mapToGlobal(QPoint(x, y)))
    QGuiApplication.sendEvent(widget, event)
    return QToolTip.text()


def main(path: Path) -> dict:
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp())
    from gui.app import create_app
    create_app([sys.argv[0]])
    from gui.main_window import MainWindow
    window = MainWindow()
    window.resize(1200, 800)
    window.show()
    QTest.qWaitForWindowExposed(window)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    window.open_file(path)
    wait_until(lambda: window.view_for(path) is not None)
    view = window.view_for(path)
    name = view.store.entries[0].name
    assert view.select(name)
    pool = QThreadPool.globalInstance()
    wait_until(lambda: pool.activeThreadCount() == 0 and view.details.stats is not None)
    window.grab()  # every widget painted, the tree's rows among them
    tree = view.tree_view
    row = tree.visualRect(tree.currentIndex()).center()
    row_tip = hover(tree.viewport(), row.x(), row.y())
    title = view.details.title
    title_tip = hover(title, 5, title.height() // 2)
    window.copy_current_path()
    node = view.current_node()
    return {"baseline": baseline, "depth": node.depth, "path_is_name": node.path == name, "name_chars": len(name),
            "row_tooltip": len(row_tip), "row_tooltip_is_name": row_tip == name, "title_tooltip": len(title_tip),
            "copied_whole": QGuiApplication.clipboard().text() == name, "count": view.details.stats.count}

if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]).absolute())))
