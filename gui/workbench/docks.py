"""The workbench's docks in a main window: the rule panels tabbed on the right, the preview and diff below.

Hidden until surgery starts; then they appear around the tab at sizes that keep a 1024x640 window usable:
the rules take RULES_SHARE of the width, the preview a share of the height (at least six rows), and the
diff, whose bars sit above its table, more while it is in front. Each bottom dock takes its own height when
brought to the front. The panels follow the current tab's document; the window only says which.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QMenu, QWidget

from gui.widgets import scrolling
from gui.workbench.document import RecipeDocument
from gui.workbench.panels.adapters import AdaptersPanel
from gui.workbench.panels.base import DocumentPanel
from gui.workbench.panels.filters import FiltersPanel
from gui.workbench.panels.preview import PreviewPanel
from gui.workbench.panels.remap import RemapPanel
from gui.workbench.panels.sources import SourcesPanel
from gui.workers import TaskRunner

RULES_SHARE = 0.3  # of the window's width, for the rule docks on the right
BOTTOM_MOST = 0.55  # of the height, the most a bottom dock takes when brought to the front
DIFF_SHARE = 0.45  # the diff's status bars and suggestions sit above its table: it takes more when raised
PREVIEW_SHARE, PREVIEW_HEIGHT = 0.3, 228  # the preview/diff docks: a share of the height, at least 6 table rows
TABLE_DOCKS = ("preview", "diff")  # docks that are a table, which scrolls by itself; the others get a scroll area
TITLES = {"filters": "Filters", "remap": "Remap", "adapters": "Adapters", "sources": "Sources", "preview": "Preview"}
NO_RECIPE = "this file has no recipe yet: Surgery › Start Surgery (Ctrl+R) starts one"  # why the panels are grey


class WorkbenchDocks(QObject):
    """``panels`` and ``docks`` by name (filters, remap, adapters, sources, preview) and ``diff_dock``."""

    def __init__(self, window: QMainWindow, runner: TaskRunner, menu: QMenu) -> None:
        super().__init__(window)
        self._window = window
        self._menu = menu
        self.shown = False  # the docks appeared once (the first surgery); later the user arranges them
        self.panels: dict[str, DocumentPanel] = {
            "filters": FiltersPanel(), "remap": RemapPanel(), "adapters": AdaptersPanel(),
            "sources": SourcesPanel(runner), "preview": PreviewPanel()}
        self.docks: dict[str, QDockWidget] = {}
        for name, panel in self.panels.items():
            area = Qt.DockWidgetArea.BottomDockWidgetArea if name == "preview" else Qt.DockWidgetArea.RightDockWidgetArea
            self.docks[name] = self._dock(name, TITLES[name], panel, area)
        for name in ("remap", "adapters", "sources"):
            window.tabifyDockWidget(self.docks["filters"], self.docks[name])
        self.diff_dock = self._dock("diff", "Diff", QLabel(), Qt.DockWidgetArea.BottomDockWidgetArea)
        window.tabifyDockWidget(self.docks["preview"], self.diff_dock)
        for dock in (self.docks["preview"], self.diff_dock):  # each takes its own height when brought to the front
            dock.visibilityChanged.connect(lambda shown, d=dock: shown and self.shown and self.fit_bottom(d))

    def _dock(self, name: str, title: str, panel: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self._window)
        dock.setObjectName(f"{name}Dock")
        dock.setWidget(panel if name in TABLE_DOCKS else scrolling(panel, f"{name}Scroll"))
        self._window.addDockWidget(area, dock)
        dock.hide()
        self._menu.addAction(dock.toggleViewAction())
        return dock

    def show_first_time(self) -> bool:
        """Show every dock, the filters and the preview in front, at their shares; False once done before."""
        if self.shown:
            return False
        self.shown = True
        for dock in self.docks.values():
            dock.show()
        self.docks["filters"].raise_()
        self.docks["preview"].raise_()
        width = int(self._window.width() * RULES_SHARE)
        self._window.resizeDocks([self.docks["filters"]], [width], Qt.Orientation.Horizontal)
        self.fit_bottom(self.docks["preview"])
        return True

    def fit_bottom(self, dock: QDockWidget) -> None:
        """The preview takes a share of the height (at least six rows); the diff, whose bars sit above its
        table, takes more while it is in front. Both leave the tab's value table its rows on a 640 screen."""
        height = self._window.height()
        share = DIFF_SHARE if dock is self.diff_dock else PREVIEW_SHARE
        self._window.resizeDocks([dock], [min(max(int(height * share), PREVIEW_HEIGHT), int(height * BOTTOM_MOST))],
                                 Qt.Orientation.Vertical)

    def follow(self, document: RecipeDocument | None, diff: QWidget | None) -> None:
        """Point every panel at ``document`` (the current tab's) and the Diff dock at its diff view."""
        for name, panel in self.panels.items():
            panel.set_document(document)
            panel.setToolTip("" if document is not None else f"Greyed out: {NO_RECIPE}")
        # the preview's title bar is wide: it says why every panel is greyed out (the tabbed ones keep short titles)
        self.docks["preview"].setWindowTitle(TITLES["preview"] if document is not None
                                             else f"{TITLES['preview']} · {NO_RECIPE}")
        if diff is not None and self.diff_dock.widget() is not diff:
            self.diff_dock.setWidget(diff)

    def show_diff(self, diff: QWidget) -> None:
        self.diff_dock.setWidget(diff)
        self.diff_dock.show()
        self.diff_dock.raise_()
        self.fit_bottom(self.diff_dock)

    def show_panel(self, name: str) -> DocumentPanel:
        self.docks[name].show()
        self.docks[name].raise_()
        return self.panels[name]
