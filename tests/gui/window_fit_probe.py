"""Measure the window at 1024x640 in every workbench state and print the geometry as JSON (one theme per run).

Run as ``python tests/gui/window_fit_probe.py THEME SHOTS_DIR``: the palette is chosen once per process
(gui.visual reads it at import), so test_window_fit_states runs this once per theme. Each state is also
saved as a PNG in SHOTS_DIR for a person to look at. The measurements are widget rectangles, visible table
rows, scroll-bar visibility and column widths, never only that something painted.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings, Qt  # noqa: E402
from PySide6.QtGui import QFontMetrics  # noqa: E402
from PySide6.QtWidgets import QApplication, QDockWidget, QLabel, QScrollArea  # noqa: E402

SCREEN = (1024, 640)
RIGHT_DOCKS = ("filters", "remap", "adapters", "sources")
BOTTOM_DOCKS = ("preview", "diff")


def wait(app: QApplication, condition: Callable[[], bool], timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("the window did not settle")
        app.processEvents()
        time.sleep(0.01)
    for _ in range(5):
        app.processEvents()


def table_rows(table: Any) -> int:
    """How many rows the table's viewport holds (whether or not the data fills them)."""
    return table.viewport().height() // max(1, table.verticalHeader().defaultSectionSize())


def dock_facts(dock: QDockWidget) -> dict[str, Any]:
    inner = dock.widget()
    area = inner if isinstance(inner, QScrollArea) else None
    content = area.widget() if area is not None else inner
    labels = [label for label in content.findChildren(QLabel) if label.isVisible() and label.wordWrap()]
    room = area.viewport().width() if area is not None else content.width()
    return {"visible": dock.isVisible() and not dock.visibleRegion().isEmpty(), "width": dock.width(),
            "height": dock.height(),
            "horizontal_scroll_bar": area is not None and area.horizontalScrollBar().isVisible(),
            "wrapped_labels_wider_than_dock": [label.text()[:40] for label in labels
                                               if label.mapTo(content, label.rect().topRight()).x() > room]}


def tree_facts(view: Any) -> dict[str, Any]:
    from gui.models.tree_model import Column
    from gui.store_view import COLUMN_SAMPLES
    from gui.resources import monospace

    header = view.tree_view.header()
    metrics = QFontMetrics(monospace())
    columns = {}
    for column in (Column.DTYPE, Column.SHAPE):
        columns[column.name] = {"hidden": view.tree_view.isColumnHidden(column),
                                "width": header.sectionSize(column),
                                "needs": metrics.horizontalAdvance(COLUMN_SAMPLES[column]),
                                "in_name_cell": column in view.name_delegate.collapsed}
    return {"viewport": view.tree_view.viewport().width(), "name": header.sectionSize(Column.NAME),
            "columns": columns}


def preview_facts(window: Any) -> dict[str, Any]:
    """Rows whose Operations text is cut and whose tooltip lacks it (there should be none)."""
    from gui.workbench.panels.preview import OPERATIONS

    table = window.panels["preview"].table
    model = table.model()
    width = table.horizontalHeader().sectionSize(OPERATIONS)
    metrics = table.fontMetrics()
    hidden = []
    for row in range(model.rowCount()):
        index = model.index(row, OPERATIONS)
        text = index.data() or ""
        cut = metrics.horizontalAdvance(text) + 8 > width
        tip = index.data(Qt.ItemDataRole.ToolTipRole) or ""
        if cut and text not in tip and not all(part in tip for part in text.split("; ")):
            hidden.append(text)
    return {"rows": table_rows(table), "operations_width": width, "operations_hidden": hidden}


def measure(window: Any, view: Any, state: str, shots: Path) -> dict[str, Any]:
    app = QApplication.instance()
    wait(app, lambda: window.is_idle() and (window.diff_panel() is None or window.diff_panel().is_idle()))
    view.selection_split.keep_value_rows()
    app.processEvents()
    hint, minimum = window.minimumSizeHint(), window.minimumSize()
    docks = {**{name: window.docks[name] for name in (*RIGHT_DOCKS, "preview")}, "diff": window.diff_dock}
    facts = {"window": list(window.size().toTuple()),
             "minimum": [max(hint.width(), minimum.width()), max(hint.height(), minimum.height())],
             "tree": tree_facts(view), "value_rows": table_rows(view.values.table),
             "values_visible": view.values.table.isVisible(), "details_height": view.selection_split.sizes()[0],
             "docks": {name: dock_facts(dock) for name, dock in docks.items() if dock.isVisible()}}
    if window.docks["preview"].isVisible():
        facts["preview"] = preview_facts(window)
    diff = window.diff_panel()
    if diff is not None and window.diff_dock.isVisible() and not window.diff_dock.visibleRegion().isEmpty():
        facts["diff_rows"] = table_rows(diff.table)
    window.grab().save(str(shots / f"{state}.png"))
    return facts


def main(theme: str, shots: Path) -> None:
    folder = tempfile.mkdtemp(prefix="fit-probe-settings-")
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, folder)
    from gui.app import create_app

    app = create_app([sys.argv[0]], theme)
    from tests.helpers.samples import SAMPLES
    from gui.main_window import MainWindow

    shots.mkdir(parents=True, exist_ok=True)
    window = MainWindow()
    window.resize(*SCREEN)
    window.show()
    window.open_file(SAMPLES / "sample_cnn.pt")
    wait(app, lambda: window.current_view() is not None and window.is_idle())
    view = window.current_view()
    view.select("conv1.weight")
    view.side.setCurrentIndex(0)
    states = {"opened": measure(window, view, "opened", shots)}
    window.open_recipe(SAMPLES / "pytorch_to_burn.recipe.json")
    wait(app, window.is_idle)
    window.show_diff()
    window.diff_panel().compare_with_file(SAMPLES / "sample_cnn.bpk")
    wait(app, lambda: window.is_idle() and window.diff_panel().is_idle())
    all_docks = {**window.docks, "diff": window.diff_dock}
    for alone in (*RIGHT_DOCKS, *BOTTOM_DOCKS):  # each dock open alone
        for name, dock in all_docks.items():
            dock.setVisible(name == alone)
        if alone == "diff":
            window.show_diff()
        states[f"alone-{alone}"] = measure(window, view, f"alone-{alone}", shots)
    for name, dock in all_docks.items():  # all together, tabified as the workbench opens them
        dock.show()
    for raised in ("preview", "diff"):
        all_docks[raised].raise_()
        if raised == "diff":
            window.show_diff()
        states[f"tabified-{raised}"] = measure(window, view, f"tabified-{raised}", shots)
    window.docks["preview"].raise_()
    for name, dock in all_docks.items():  # all together, side by side: out of their tabs, then split
        window.removeDockWidget(dock)
        area = Qt.DockWidgetArea.BottomDockWidgetArea if name in BOTTOM_DOCKS else Qt.DockWidgetArea.RightDockWidgetArea
        window.addDockWidget(area, dock)
        dock.show()
    for first, second in zip(RIGHT_DOCKS, RIGHT_DOCKS[1:]):
        window.splitDockWidget(window.docks[first], window.docks[second], Qt.Orientation.Vertical)
    window.splitDockWidget(window.docks["preview"], window.diff_dock, Qt.Orientation.Horizontal)
    window.resizeDocks([window.docks["preview"]], [int(SCREEN[1] * 0.45)], Qt.Orientation.Vertical)
    states["side-by-side"] = measure(window, view, "side-by-side", shots)
    print(json.dumps(states))
    window.close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
