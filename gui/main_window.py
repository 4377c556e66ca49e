"""The main window: one tab per opened file, a search box for the current one, menus and a status bar.

Files open in a worker; the window stays responsive, shows that it is busy, and turns a broken file into
an error dialog, never a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from PySide6.QtCore import QByteArray, QTimer, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QGuiApplication
from PySide6.QtWidgets import (QFileDialog, QLabel, QLineEdit, QMainWindow, QMessageBox, QProgressBar, QSizePolicy,
                               QStackedWidget, QTabWidget, QToolBar)

import engine
from engine import FormatError, humanize
from gui import settings
from gui.actions import install
from gui.dialogs import show_error
from gui.resources import icon
from gui.store_view import LoadedStore, StoreView, load_store
from gui.workers import Failure, TaskRunner

FILTER_DELAY_MS = 150  # typing pauses this long before the tree is filtered
FILE_FILTER = "Model files (*.bpk *.safetensors *.json *.pt *.pth *.bin *.ckpt);;All files (*)"
DEFAULT_SIZE = (1280, 800)


class MainWindow(QMainWindow):
    """``file_opened`` carries the new tab's StoreView; ``open_failed`` the path and the failure."""

    file_opened = Signal(object)
    open_failed = Signal(object, object)

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("Store Studio")
        self.setWindowIcon(icon("app"))
        self.setAcceptDrops(True)
        self.opener = TaskRunner(self)  # opening files: drives the busy indicator
        self.work = TaskRunner(self)  # statistics, previews, module inference
        self._opening: set[Path] = set()

        self.tabs = QTabWidget()
        self.tabs.setObjectName("documents")
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.setDocumentMode(True)
        self.tabs.tabCloseRequested.connect(self.close_tab)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.empty = QLabel("Open a model file with File › Open (Ctrl+O), or drop one here.\n"
                            "Burnpack, SafeTensors and PyTorch files are read without running any code.")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setProperty("role", "hint")
        self.pages = QStackedWidget()
        self.pages.addWidget(self.empty)
        self.pages.addWidget(self.tabs)
        self.setCentralWidget(self.pages)

        self.actions = install(self)
        self._build_toolbar()
        self._build_status_bar()
        self._filter_timer = QTimer(self)
        self._filter_timer.setSingleShot(True)
        self._filter_timer.setInterval(FILTER_DELAY_MS)
        self._filter_timer.timeout.connect(self.apply_filter)
        self._refresh_recent()
        self._restore_geometry()
        self._tab_changed()

    # --- building -------------------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        toolbar = QToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toolbar.addAction(self.actions.open)
        toolbar.addSeparator()
        self.search = QLineEdit()
        self.search.setObjectName("search")
        self.search.setPlaceholderText("Filter tensors by name (text, or a regex with .*)")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(360)
        self.search.setMaximumWidth(560)
        self.search.addAction(icon("search"), QLineEdit.ActionPosition.LeadingPosition)
        self.regex = QAction(icon("regex"), "Regular expression", self)
        self.regex.setCheckable(True)
        self.regex.setToolTip("Treat the filter as a regular expression (case-insensitive)")
        self.regex.toggled.connect(self._regex_toggled)
        self.search.addAction(self.regex, QLineEdit.ActionPosition.TrailingPosition)
        self.search.textChanged.connect(lambda _: self._filter_timer.start())
        self.search.returnPressed.connect(self.apply_filter)
        toolbar.addWidget(self.search)
        self.match_label = QLabel()
        self.match_label.setObjectName("matchCount")
        self.match_label.setContentsMargins(8, 0, 8, 0)
        self.match_label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        toolbar.addWidget(self.match_label)
        self.addToolBar(toolbar)

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.summary = QLabel()
        self.summary.setObjectName("statusSummary")
        self.busy_label = QLabel()
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)  # busy, not a percentage: opening reads a header of unknown cost
        self.busy.setMaximumWidth(120)
        self.busy.setMaximumHeight(14)
        bar.addWidget(self.summary, 1)
        bar.addPermanentWidget(self.busy_label)
        bar.addPermanentWidget(self.busy)
        self._set_busy()

    # --- opening ----------------------------------------------------------------------------------------
    def open_dialog(self) -> None:
        start = str(Path(settings.recent_files()[0]).parent) if settings.recent_files() else ""
        paths, _ = QFileDialog.getOpenFileNames(self, "Open model files", start, FILE_FILTER)
        self.open_files(paths)

    def open_files(self, paths: Iterable[str | Path]) -> None:
        for path in paths:
            self.open_file(path)

    def open_file(self, path: str | Path) -> None:
        """Open in a worker; a file already open just comes to the front."""
        path = Path(path).absolute()
        existing = self.view_for(path)
        if existing is not None:
            self.tabs.setCurrentWidget(existing)
            return
        if path in self._opening:
            return
        self._opening.add(path)
        self._set_busy()
        self.opener.run(lambda cancelled: load_store(path, cancelled),
                        lambda loaded: self._opened(path, loaded), lambda failure: self._open_failed(path, failure))

    def _opened(self, path: Path, loaded: LoadedStore) -> None:
        self._opening.discard(path)
        self._set_busy()
        view = StoreView(loaded, self.work)
        view.tree_view.addAction(self.actions.copy_path)
        view.selected.connect(lambda _: self._update_summary())
        self._restore_splitters(view)
        index = self.tabs.addTab(view, icon("tensor"), path.name)
        self.tabs.setTabToolTip(index, str(path))
        self.tabs.setCurrentIndex(index)
        settings.remember_recent(str(path))
        self._refresh_recent()
        self.file_opened.emit(view)

    def _open_failed(self, path: Path, failure: Failure) -> None:
        self._opening.discard(path)
        self._set_busy()
        error = failure.error
        message = error.problem if isinstance(error, FormatError) else failure.message
        show_error(self, f"Store Studio could not open {path.name}.", message, failure.details)
        self.open_failed.emit(path, failure)

    def _set_busy(self) -> None:
        busy = bool(self._opening)
        self.busy.setVisible(busy)
        self.busy_label.setVisible(busy)
        names = sorted(p.name for p in self._opening)
        self.busy_label.setText(f"Opening {', '.join(names)}…" if names else "")

    def is_idle(self) -> bool:
        """No file opening and no statistics or preview being computed."""
        return not self._opening and self.opener.active == 0 and self.work.active == 0

    # --- tabs -------------------------------------------------------------------------------------------
    def views(self) -> list[StoreView]:
        return [self.tabs.widget(i) for i in range(self.tabs.count())]  # type: ignore[misc]

    def current_view(self) -> StoreView | None:
        widget = self.tabs.currentWidget()
        return widget if isinstance(widget, StoreView) else None

    def view_for(self, path: Path) -> StoreView | None:
        return next((v for v in self.views() if v.path == path), None)

    def close_current(self) -> None:
        if self.tabs.count():
            self.close_tab(self.tabs.currentIndex())

    def close_tab(self, index: int) -> None:
        view = self.tabs.widget(index)
        if not isinstance(view, StoreView):
            return
        self._save_splitters(view)
        self.tabs.removeTab(index)
        view.close_store()
        view.deleteLater()

    def _tab_changed(self, *_: object) -> None:
        view = self.current_view()
        self.pages.setCurrentWidget(self.tabs if self.tabs.count() else self.empty)
        for action in (self.actions.close_tab, self.actions.find, self.actions.copy_path, self.actions.collapse_all,
                       self.actions.show_selection, self.actions.show_file):
            action.setEnabled(view is not None)
        self.search.setEnabled(view is not None)
        self.search.blockSignals(True)
        self.regex.blockSignals(True)
        self.search.setText(view.filter_text if view is not None else "")
        self.regex.setChecked(view.filter_regex if view is not None else False)
        self.search.blockSignals(False)
        self.regex.blockSignals(False)
        self._show_filter_result(view)
        self._update_summary()
        self.setWindowTitle(f"{view.path.name} — Store Studio" if view is not None else "Store Studio")

    def _update_summary(self) -> None:
        view = self.current_view()
        if view is None:
            self.summary.setText("")
            return
        store, totals, size = view.store, view.loaded.tree, view.loaded.file_size
        self.summary.setText(f"{store.path} · {store.description} · {totals.tensors:,} tensors · "
                             f"{totals.params:,} params · {humanize.size(size)}")
        self.summary.setToolTip(f"{size:,} bytes on disk")

    # --- search -----------------------------------------------------------------------------------------
    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _regex_toggled(self) -> None:
        self.apply_filter()

    def apply_filter(self) -> None:
        self._filter_timer.stop()
        view = self.current_view()
        if view is not None:
            view.apply_filter(self.search.text(), self.regex.isChecked())
        self._show_filter_result(view)

    def _show_filter_result(self, view: StoreView | None) -> None:
        result = view.filter_result if view is not None else None
        invalid = result is not None and result.error is not None
        if result is None:
            text = ""
        elif result.error is not None:
            text = f"⚠ {result.error[0].upper()}{result.error[1:]}"
        elif view is not None and view.filter_text:
            text = f"{result.matches:,} of {result.total:,} match"
        else:
            text = f"{result.total:,} tensors"
        self.match_label.setText(text)
        self.match_label.setProperty("role", "problem" if invalid else "")
        self.search.setProperty("invalid", invalid)
        self.search.setToolTip(result.error if invalid and result is not None and result.error else "")
        for widget in (self.search, self.match_label):
            widget.style().unpolish(widget)
            widget.style().polish(widget)

    # --- other actions ----------------------------------------------------------------------------------
    def copy_current_path(self) -> None:
        view = self.current_view()
        node = view.current_node() if view is not None else None
        if node is not None:
            QGuiApplication.clipboard().setText(node.path)

    def collapse_all(self) -> None:
        view = self.current_view()
        if view is not None:
            view.tree_view.collapseAll()

    def show_selection_panel(self) -> None:
        view = self.current_view()
        if view is not None:
            view.side.setCurrentIndex(0)

    def show_file_panel(self) -> None:
        view = self.current_view()
        if view is not None:
            view.side.setCurrentWidget(view.file_info)

    def show_about(self) -> None:
        QMessageBox.about(self, "About Store Studio",
                          f"<b>Store Studio</b> {engine.__version__}<p>Inspect and convert Burnpack, SafeTensors "
                          "and PyTorch model files.</p>")

    def _refresh_recent(self) -> None:
        menu = self.actions.recent
        menu.clear()
        paths = settings.recent_files()
        for path in paths:
            action = menu.addAction(Path(path).name)
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda _=False, p=path: self.open_file(p))
        if paths:
            menu.addSeparator()
            menu.addAction("Clear Recent Files", self._clear_recent)
        menu.setEnabled(bool(paths))

    def _clear_recent(self) -> None:
        settings.clear_recent()
        self._refresh_recent()

    # --- drag and drop ----------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_files(paths)

    # --- remembered state -------------------------------------------------------------------------------
    def _restore_geometry(self) -> None:
        geometry = settings.app_settings().value("window/geometry")
        if not (isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)):
            self.resize(*DEFAULT_SIZE)

    def _restore_splitters(self, view: StoreView) -> None:
        store = settings.app_settings()
        for name, splitter in view.splitters().items():
            state = store.value(f"splitters/{name}")
            if isinstance(state, QByteArray):
                splitter.restoreState(state)

    def _save_splitters(self, view: StoreView) -> None:
        store = settings.app_settings()
        for name, splitter in view.splitters().items():
            store.setValue(f"splitters/{name}", splitter.saveState())

    def closeEvent(self, event: QCloseEvent) -> None:
        settings.app_settings().setValue("window/geometry", self.saveGeometry())
        view = self.current_view()
        if view is not None:
            self._save_splitters(view)
        self.opener.cancel_all()
        self.work.cancel_all()
        for view in self.views():
            view.close_store()
        super().closeEvent(event)
