"""The main window: one tab per opened file, a search box for the current one, menus and a status bar.

Files open in a worker; the window stays responsive, shows that it is busy, and turns a broken file into
an error dialog, never a crash.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterable

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
    QShortcut,
    QUndoGroup,
)
from PySide6.QtWidgets import (
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QTabWidget,
    QToolBar,
)

import engine
from engine import FormatError, Location, RecipeError, RemoteLocation, StoreStudioError, humanize, is_url, location
from engine.surgery import Fit, Recipe, as_cli, as_rust
from gui import settings
from gui.actions import install
from gui.dialogs import MODEL_FILES, RECIPE_FILES, choose_paths, show_error
from gui.download_status import STEPS, Download
from gui.loaded_store import LoadedStore, load_store
from gui.open_url import OpenUrlDialog
from gui.resources import icon
from gui.stale_watch import StaleWatch
from gui.store_view import StoreView
from gui.workbench.diff_panel import DiffPanel
from gui.workbench.docks import WorkbenchDocks
from gui.workbench.document import RecipeDocument, load_recipe
from gui.workbench.export_dialog import run_export
from gui.workbench.make_it_load import choose_fit_target, fit_note
from gui.workbench.recipe_fit import misfit
from gui.workbench.template_picker import choose_template
from gui.workers import Failure, TaskRunner

FILTER_DELAY_MS = 150  # typing pauses this long before the tree is filtered
DOWNLOAD_REFRESH_MS = 250  # the status bar shows a whole download's progress this often
REGEX_HINTS = re.compile(r"\.\*|\.\+|\\[dwsb.]|^\^|\$$|\[.+\]|\(.*\||[^\\]\|")  # .* \d ^ $ [..] (a|b)
DEFAULT_SIZE = (1280, 800)
SAVE_PROMPT = "saveRecipePrompt"  # object name of the "save the recipe?" question


def default_size(available: tuple[int, int]) -> tuple[int, int]:
    """DEFAULT_SIZE, or 90% of a screen too small for it: a first start never opens past a laptop's edge."""
    return min(DEFAULT_SIZE[0], int(available[0] * 0.9)), min(DEFAULT_SIZE[1], int(available[1] * 0.9))


def looks_like_regex(text: str) -> bool:
    """True for text a user probably meant as a regex (``^layer\\.\\d+``, ``.*bias``, ``norm|bn``)."""
    return REGEX_HINTS.search(text) is not None


def _load_and_remember(path: Location, cancelled: Callable[[], bool], download: Download) -> LoadedStore:
    """Open a file (in a worker) and, once it opened, put it first among the recent files.

    Here, not on the UI thread: writing the settings waits for the disk (QSettings syncs with fdatasync),
    25-90 ms on this project's machine and over 0.5 s when its disk is busy, which held up showing the tab.
    """
    loaded = load_store(path, cancelled, download.listener(cancelled))
    settings.remember_recent(str(path))
    if isinstance(path, RemoteLocation):
        settings.remember_url(str(path))
    return loaded

class MainWindow(QMainWindow):
    """``file_opened`` carries the new tab's StoreView; ``open_failed`` the path and the failure."""

    file_opened = Signal(object)
    open_failed = Signal(object, object)
    download_progressed = Signal(object)  # the Download the status bar has just shown

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("Store Studio")
        self.setWindowIcon(icon("app"))
        self.setAcceptDrops(True)
        self.opener = TaskRunner(self)  # opening files: drives the busy indicator
        self.work = TaskRunner(self)  # statistics, previews, module inference
        self._opening: set[Location] = set()
        self._downloads: dict[Location, Download] = {}  # per file opening: a whole download's progress, if any
        self._download_clock = QTimer(self, interval=DOWNLOAD_REFRESH_MS)  # shows it, stalls included
        self._download_clock.timeout.connect(self._show_download)
        self.undo_group = QUndoGroup(self)  # Edit > Undo follows the current tab's recipe
        self._diff_panels: dict[RecipeDocument, DiffPanel] = {}

        self.tabs = QTabWidget()
        self.tabs.setObjectName("documents")
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.setDocumentMode(True)
        self.tabs.tabCloseRequested.connect(self.close_tab)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.stale = StaleWatch(self.tabs, self.reload_view)  # a file changed on disk: "(changed)" and Reload
        self.tabs.currentChanged.connect(lambda *_: self.stale.check())
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
        self._build_workbench()
        self._filter_timer = QTimer(self)
        self._filter_timer.setSingleShot(True)
        self._filter_timer.setInterval(FILTER_DELAY_MS)
        self._filter_timer.timeout.connect(self._filter_typed)
        self._refresh_recent()
        self._restore_geometry()
        self._tab_changed()

    # --- building -------------------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        toolbar = QToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        for action, short in ((self.actions.open, "Open"), (self.actions.export, "Export…"),
                              (self.actions.diff, "Diff…"), (self.actions.start_surgery, "Surgery")):
            action.setIconText(short)
            toolbar.addAction(action)
        toolbar.addSeparator()
        self.search = QLineEdit()
        self.search.setObjectName("search")
        self.search.setPlaceholderText("Filter tensors by name (text, or a regex with .*)")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(160)
        self.search.setMaximumWidth(560)
        self.search.addAction(icon("search"), QLineEdit.ActionPosition.LeadingPosition)
        self.regex = QAction(icon("regex"), "Regular expression", self)
        self.regex.setCheckable(True)
        self.regex.setToolTip("Treat the filter as a regular expression (case-insensitive)")
        self.regex.toggled.connect(self._regex_toggled)
        self.search.addAction(self.regex, QLineEdit.ActionPosition.TrailingPosition)
        self.search.textChanged.connect(lambda _: self._filter_timer.start())
        self.search.returnPressed.connect(self.apply_filter)
        clear = QShortcut(QKeySequence(Qt.Key.Key_Escape), self.search, self.search.clear)  # the selection stays
        clear.setContext(Qt.ShortcutContext.WidgetShortcut)
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
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # a long path never widens the window
        self.busy_label = QLabel()
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)  # busy, not a percentage: opening reads a header of unknown cost
        self.busy.setMaximumWidth(120)
        self.busy.setMaximumHeight(14)
        bar.addWidget(self.summary, 1)
        self.cancel_opening_button = QPushButton("Cancel")
        self.cancel_opening_button.setObjectName("cancelOpening")
        self.cancel_opening_button.setToolTip("Stop opening (a slow server is left to time out in the background)")
        self.cancel_opening_button.clicked.connect(self.cancel_opening)
        bar.addPermanentWidget(self.busy_label)
        bar.addPermanentWidget(self.busy)
        bar.addPermanentWidget(self.cancel_opening_button)
        self._set_busy()

    def _build_workbench(self) -> None:
        """The recipe docks (gui/workbench/docks.py), hidden until surgery starts."""
        self.workbench = WorkbenchDocks(self, self.work, self.actions.workbench)
        self.panels, self.docks, self.diff_dock = self.workbench.panels, self.workbench.docks, self.workbench.diff_dock
        self.panels["preview"].settle_requested.connect(self._settle_guess)  # type: ignore[attr-defined]

    # --- opening ----------------------------------------------------------------------------------------
    def open_dialog(self) -> None:
        start = str(Path(settings.recent_files()[0]).parent) if settings.recent_files() else ""
        paths = choose_paths(self, "Open model files", start, MODEL_FILES, many=True)
        self.open_files(paths)

    def open_url_dialog(self) -> None:
        dialog = OpenUrlDialog(self)
        if dialog.exec() == OpenUrlDialog.DialogCode.Accepted and is_url(dialog.url()):
            self.open_file(dialog.url())

    def cancel_opening(self) -> None:
        """Forget the files being opened; their workers end on their own and close what they opened."""
        self.opener.cancel_all()
        self._opening.clear()
        self._downloads.clear()
        self._set_busy()

    def open_files(self, paths: Iterable[str | Path]) -> None:
        for path in paths:
            self.open_file(path)

    def open_file(self, path: str | Path) -> None:
        """Open in a worker (a path or an http(s):// or hf:// URL); a file already open just comes to the front."""
        path = location(path) if is_url(path) else Path(path).absolute()
        existing = self.view_for(path)
        if existing is not None:
            self.tabs.setCurrentWidget(existing)
            return
        if path in self._opening:
            return
        self._opening.add(path)
        self._set_busy()
        download = self._downloads[path] = Download(path.name)
        self.opener.run(lambda cancelled: _load_and_remember(path, cancelled, download),
                        lambda loaded: self._opened(path, loaded), lambda failure: self._open_failed(path, failure))
        self._download_clock.start()

    def _show_download(self) -> None:
        shown = self._set_busy()
        if shown is not None:
            self.download_progressed.emit(shown)

    def _opened(self, path: Location, loaded: LoadedStore) -> None:
        if path not in self._opening:  # cancelled while it opened
            loaded.store.close()
            return
        self._opening.discard(path)
        self._downloads.pop(path, None)
        self._set_busy()
        view = StoreView(loaded, self.work)
        view.tree_view.addAction(self.actions.copy_path)
        view.selected.connect(lambda _: self._update_summary())
        view.file_info.topLevelKeyChosen.connect(self.read_branch)
        self._restore_splitters(view)
        index = self.tabs.addTab(view, icon("tensor"), path.name)
        self.tabs.setTabToolTip(index, str(path))
        self.tabs.setCurrentIndex(index)
        self.stale.watch(view)
        self._refresh_recent()
        self.file_opened.emit(view)

    def _open_failed(self, path: Location, failure: Failure) -> None:
        if path not in self._opening:  # cancelled: its failure (a timeout, say) is no news
            return
        self._opening.discard(path)
        self._downloads.pop(path, None)
        self._set_busy()
        error = failure.error
        message = error.problem if isinstance(error, FormatError) else failure.message
        show_error(self, f"Store Studio could not open {path.name}.", message, failure.details)
        self.open_failed.emit(path, failure)

    def _set_busy(self) -> Download | None:
        """Show what is opening, and a whole download's progress (returned) if one is under way."""
        busy = bool(self._opening)
        self.busy.setVisible(busy)
        self.busy_label.setVisible(busy)
        self.cancel_opening_button.setVisible(busy)
        names = sorted(p.name for p in self._opening)
        self.busy_label.setText(f"Opening {', '.join(names)}…" if names else "")
        download = next((d for d in self._downloads.values() if d.started), None)
        self.busy.setRange(0, STEPS if download else 0)  # a percentage only while a download says its size
        if download is not None:
            self.busy.setValue(download.steps)
            self.busy_label.setText(download.text())
        if not busy:
            self._download_clock.stop()
        return download

    def is_idle(self) -> bool:
        """No file opening and no statistics, preview, recipe plan or shown tab's first levels being computed."""
        planning = any((v.document is not None and v.document.busy) or (v.levels_pending and v.isVisible())
                       for v in self.views())
        return not self._opening and self.opener.active == 0 and self.work.active == 0 and not planning

    # --- tabs -------------------------------------------------------------------------------------------
    def views(self) -> list[StoreView]:
        return [self.tabs.widget(i) for i in range(self.tabs.count())]  # type: ignore[misc]

    def current_view(self) -> StoreView | None:
        widget = self.tabs.currentWidget()
        return widget if isinstance(widget, StoreView) else None

    def view_for(self, path: Location) -> StoreView | None:
        return next((v for v in self.views() if v.path == path), None)

    def close_current(self) -> None:
        if self.tabs.count():
            self.close_tab(self.tabs.currentIndex())

    def close_tab(self, index: int) -> None:
        view = self.tabs.widget(index)
        if not isinstance(view, StoreView) or not self._may_discard(view):
            return
        if view.document is not None:
            self.undo_group.removeStack(view.document.undo_stack)
            panel = self._diff_panels.pop(view.document, None)
            if panel is not None:
                panel.deleteLater()
        self._save_splitters(view)
        self.tabs.removeTab(index)
        view.close_store()
        view.deleteLater()

    def reload_view(self, view: StoreView) -> None:
        """Open a file that changed on disk again, in place of its tab."""
        index = self.tabs.indexOf(view)
        if index >= 0:
            self.close_tab(index)
            if self.tabs.indexOf(view) < 0:  # closed (the user may keep unsaved recipe edits instead)
                self.open_file(view.path)

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
        self._show_regex_state()
        self._show_filter_result(view)
        self._update_summary()
        self._follow_document()

    def _update_title(self) -> None:
        view = self.current_view()
        self.setWindowTitle(f"{view.path.name}[*] — Store Studio" if view is not None else "Store Studio")
        self.setWindowModified(view is not None and view.document is not None and view.document.is_modified)

    def _update_summary(self) -> None:
        view = self.current_view()
        if view is None:
            self.summary.setText("")
            return
        store, totals, size = view.store, view.loaded.tree, view.loaded.file_size
        buffers = f" + {totals.buffer_values:,} buffer values" if totals.buffer_values else ""
        self.summary.setText(f"{store.path} · {store.description} · {totals.tensors:,} tensors · "
                             f"{totals.parameters:,} parameters{buffers} · {humanize.size(size)}")
        self.summary.setToolTip(f"{size:,} bytes on disk")

    # --- search -----------------------------------------------------------------------------------------
    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _regex_toggled(self, on: bool = False) -> None:
        self._show_regex_state()
        self.apply_filter()

    def _show_regex_state(self) -> None:
        """A filled icon while regex search is on: a checkable line-edit action has no pressed look of its own."""
        on = self.regex.isChecked()
        self.regex.setIcon(icon("regex-on" if on else "regex"))
        self.regex.setToolTip("Regular expression search is on (click for plain text)" if on else
                              "Treat the filter as a regular expression (case-insensitive)")

    def apply_filter(self) -> None:
        self._filter_timer.stop()
        view = self.current_view()
        if view is not None:
            view.apply_filter(self.search.text(), self.regex.isChecked())
        self._show_filter_result(view)

    def _filter_typed(self) -> None:
        """The filter as typed, built in the background: a keystroke never waits for 100,000 names."""
        view = self.current_view()
        if view is None:
            self._show_filter_result(None)
            return
        view.filter_in_background(self.search.text(), self.regex.isChecked(),
                                  lambda _: self._show_filter_result(view) if view is self.current_view() else None)

    def _show_filter_result(self, view: StoreView | None) -> None:
        result = view.filter_result if view is not None else None
        invalid = result is not None and result.error is not None
        if result is None:
            text = ""
        elif result.error is not None:
            text = f"⚠ {result.error[0].upper()}{result.error[1:]}"
        elif view is not None and view.filter_text:
            text = f"{result.matches:,} of {result.total:,} match"
            if not view.filter_regex and looks_like_regex(view.filter_text):
                text += " · searched as text (turn on .* for a regex)"
        else:
            text = f"{result.total:,} tensors"
        self.match_label.setText(text)
        self.match_label.setProperty("role", "problem" if invalid else "")
        self.search.setProperty("invalid", invalid)
        self.search.setToolTip(result.error if invalid and result is not None and result.error else "")
        for widget in (self.search, self.match_label):
            widget.style().unpolish(widget)
            widget.style().polish(widget)

    # --- surgery ---------------------------------------------------------------------------------------------
    def document(self) -> RecipeDocument | None:
        view = self.current_view()
        return view.document if view is not None else None

    def surgery(self, show_workbench: bool = True) -> RecipeDocument | None:
        """The current tab's recipe, made on first use, with the workbench shown (unless ``show_workbench`` is
        false: Export… wants its dialog, not the workbench): what every Surgery action needs."""
        view = self.current_view()
        if view is None:
            return None
        if view.document is None:
            document = view.start_surgery()
            self.undo_group.addStack(document.undo_stack)
            document.modifiedChanged.connect(lambda _: self._update_title())
            document.recipeChanged.connect(lambda _state: self._update_template_action())  # a template set or undone
        if show_workbench and self.workbench.show_first_time():
            for other in self.views():
                other.favour_tree()
        self._follow_document()
        return view.document

    def _follow_document(self) -> None:
        """Point the panels, Undo/Redo and the diff dock at the current tab's recipe (or at none)."""
        document = self.document()
        self.workbench.follow(document, self._diff_panels.get(document) if document is not None else None)
        self.undo_group.setActiveStack(document.undo_stack if document is not None else None)
        for action in (self.actions.start_surgery, self.actions.rerun, self.actions.diff, self.actions.make_it_load,
                       self.actions.copy_cli, self.actions.copy_rust, self.actions.export, self.actions.open_recipe,
                       self.actions.save_recipe, self.actions.save_recipe_as, self.actions.set_template):
            action.setEnabled(self.current_view() is not None)
        self._update_template_action()
        self._update_title()

    def _settle_guess(self, module: str) -> None:
        """A guessed row was double-clicked in the preview: its module's type, ready to choose, in Adapters."""
        self.workbench.show_panel("adapters").settle(module)  # type: ignore[attr-defined]

    def _update_template_action(self) -> None:
        document = self.document()
        self.actions.clear_template.setEnabled(document is not None and document.template is not None)

    def start_surgery(self) -> None:
        self.surgery()

    def read_branch(self, key: str) -> None:
        """A branch's button in the File panel (on the tab in front, the only one a click reaches): the tab's recipe
        reads that top-level key alone, as one undo step, with the workbench shown."""
        document = self.surgery()
        if document is not None:
            document.set_top_level_key(key)

    def rerun_preview(self) -> None:
        document = self.surgery()
        if document is not None:
            document.replan()

    def copy_as_cli(self) -> None:
        document = self.surgery()
        if document is not None:
            QGuiApplication.clipboard().setText(as_cli(document.recipe))
            self.statusBar().showMessage("Copied the store-studio convert command line", 5_000)

    def copy_as_rust(self) -> None:
        document = self.surgery()
        if document is not None:
            current = document.plan if document.plan is not None and document.plan.recipe is document.recipe else None
            stores = document.planned_stores() if current is not None else None  # the plan's own sources
            QGuiApplication.clipboard().setText(as_rust(document.recipe, stores, current, template=document.template))
            self.statusBar().showMessage("Copied the burn-store builder chain", 5_000)

    def export_recipe(self) -> None:
        document = self.surgery(show_workbench=False)
        if document is None:
            return
        run_export(self, document)

    def diff_panel(self) -> DiffPanel | None:
        """The current tab's diff view, once Diff… has made it."""
        document = self.document()
        return self._diff_panels.get(document) if document is not None else None

    def show_diff(self) -> None:
        document = self.surgery()
        if document is None:
            return
        if document not in self._diff_panels:
            self._diff_panels[document] = DiffPanel(document)
        self.workbench.show_diff(self._diff_panels[document])

    def make_it_load(self) -> None:
        """Surgery › Make It Load Into…: the recipe fitted to a chosen template as one step, then the diff view
        against it says what the fit did and what still does not load."""
        document = self.surgery()
        if document is not None:
            choose_fit_target(self, document, self.opener, (document.template or document.store).path,
                              lambda made, template: self._show_fit(document, made, template.path.name))

    def _show_fit(self, document: RecipeDocument, made: Fit, template: str) -> None:
        note = fit_note(made, template)
        self.statusBar().showMessage(note, 20_000)
        if document is self.document():  # the user may have moved to another tab while it fitted
            self.show_diff()
            self._diff_panels[document].show_fit(note, document.recipe)

    def choose_template(self) -> None:
        """Surgery › Set Template…: the file the result must fit (the diff view's Template button does the same)."""
        document = self.surgery()
        if document is not None:
            choose_template(self, document, self.opener, (document.template or document.store).path)

    def clear_template(self) -> None:
        document = self.document()
        if document is not None:
            document.set_template(None)

    def open_recipe_dialog(self) -> None:
        view = self.current_view()
        start = str(view.path.parent) if view is not None else ""
        path = next(iter(choose_paths(self, "Open a recipe", start, RECIPE_FILES)), "")
        if path:
            self.open_recipe(Path(path))

    def open_recipe(self, path: Path) -> None:
        """Apply a recipe file to the current tab; its extra sources open in a worker first."""
        view = self.current_view()
        if view is None or not self._may_discard(view):
            return
        document = self.surgery()
        assert document is not None

        def failed(failure: Failure) -> None:
            show_error(self, f"Store Studio could not open the recipe {path.name}.", failure.message, failure.details)

        def loaded(result: tuple) -> None:
            document.replace(*result)
            self._warn_misfit(document, f"Recipe {path.name} on {view.path.name}")

        self.opener.run(lambda cancelled: load_recipe(path), loaded, failed)

    def apply_bundled_recipe(self, name: str) -> None:
        """Apply the bundled recipe ``name``'s operations to the current tab, as one undoable step."""
        view = self.current_view()
        document = self.surgery() if view is not None else None
        if document is None:
            return
        try:
            recipe = Recipe.load(name)
        except RecipeError as exc:
            show_error(self, f"Store Studio could not read the bundled recipe {name}.", str(exc))
            return
        if document.apply_operations(recipe, f"Apply recipe {name}"):
            self._warn_misfit(document, f"Recipe {name} on {view.path.name}")

    def _warn_misfit(self, document: RecipeDocument, what: str) -> None:
        """Once the applied recipe is planned, say in the status bar if parts of it find nothing in this file."""
        def finished() -> None:  # the next plan only, made or failed: a later one must not warn about this recipe
            document.planReady.disconnect(planned)
            document.planFailed.disconnect(failed)

        def planned(plan: object) -> None:
            finished()
            unfit = misfit(document.plan) if document.plan is not None else ""
            if unfit:
                self.statusBar().showMessage(f"⚠ {what}: {unfit}", 20_000)

        def failed(message: str) -> None:
            finished()

        document.planReady.connect(planned)
        document.planFailed.connect(failed)

    def save_recipe(self) -> bool:
        document = self.surgery()
        if document is None:
            return False
        if document.path is None:
            return self.save_recipe_as()
        return self._save(document, document.path)

    def save_recipe_as(self) -> bool:
        document, view = self.surgery(), self.current_view()
        if document is None or view is None:
            return False
        suggested = document.path or view.path.with_name(f"{view.path.stem}.recipe.json")
        path = next(iter(choose_paths(self, "Save the recipe", str(suggested), RECIPE_FILES, save=True)), "")
        return bool(path) and self._save(document, Path(path))

    def _save(self, document: RecipeDocument, path: Path) -> bool:
        try:
            document.save(path)
        except (OSError, StoreStudioError) as exc:
            show_error(self, f"Store Studio could not save the recipe as {path.name}.", str(exc))
            return False
        self.statusBar().showMessage(f"Saved the recipe as {path}", 5_000)
        return True

    def ask_save(self, view: StoreView) -> QMessageBox.StandardButton:
        """Save, Discard or Cancel for a tab whose recipe has unsaved edits (tests replace this)."""
        buttons = (QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                   | QMessageBox.StandardButton.Cancel)
        box = QMessageBox(QMessageBox.Icon.Question, "Store Studio",
                          f"Save the changes to the recipe for {view.path.name}?", buttons, self)
        box.setObjectName(SAVE_PROMPT)
        box.setInformativeText("The recipe's edits are lost if you don't save them.")
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        box.exec()
        return box.standardButton(box.clickedButton())

    def _may_discard(self, view: StoreView) -> bool:
        """True when the tab's recipe is saved, or the user saved or discarded it."""
        if view.document is None or not view.document.is_modified:
            return True
        self.tabs.setCurrentWidget(view)
        choice = self.ask_save(view)
        if choice == QMessageBox.StandardButton.Save:
            return self.save_recipe()
        return choice == QMessageBox.StandardButton.Discard

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
            view.show_side()

    def show_file_panel(self) -> None:
        view = self.current_view()
        if view is not None:
            view.side.setCurrentWidget(view.file_info)
            view.show_side()

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
        if any(url.isLocalFile() or is_url(url.toString()) for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [url.toLocalFile() if url.isLocalFile() else url.toString() for url in event.mimeData().urls()
                 if url.isLocalFile() or is_url(url.toString())]
        if paths:
            event.acceptProposedAction()
            self.open_files(paths)

    # --- remembered state -------------------------------------------------------------------------------
    def _restore_geometry(self) -> None:
        geometry = settings.app_settings().value("window/geometry")
        if not (isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)):
            self.resize(*default_size(self.screen().availableGeometry().size().toTuple()))

    def _restore_splitters(self, view: StoreView) -> None:
        store = settings.app_settings()
        for name, splitter in view.splitters().items():
            state = store.value(f"splitters/{name}")
            if isinstance(state, QByteArray):
                splitter.restoreState(state)

    def _save_splitters(self, view: StoreView) -> None:
        store = settings.app_settings()
        for name, splitter in view.splitters().items():
            if 0 not in splitter.sizes():  # a folded panel (surgery folds the details) is not a preference
                store.setValue(f"splitters/{name}", splitter.saveState())

    def closeEvent(self, event: QCloseEvent) -> None:
        if not all(self._may_discard(view) for view in self.views()):
            event.ignore()
            return
        settings.app_settings().setValue("window/geometry", self.saveGeometry())
        view = self.current_view()
        if view is not None:
            self._save_splitters(view)
        self.opener.cancel_all()
        self.work.cancel_all()
        for view in self.views():
            view.close_store()
        super().closeEvent(event)
