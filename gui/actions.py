"""Every menu action and its shortcut, declared in one place (napari's qactions, in miniature).

Only actions that do something today are here: menus without a working action are left out, not greyed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from PySide6.QtGui import QAction, QKeySequence, QUndoGroup
from PySide6.QtWidgets import QMenu, QMenuBar

from engine.surgery import BUNDLED_PURPOSES, bundled_recipes
from gui.resources import icon


class ActionHost(Protocol):
    """What the actions call: the main window satisfies it, so this module never imports the window."""

    undo_group: QUndoGroup

    def menuBar(self) -> QMenuBar: ...
    def open_dialog(self) -> None: ...
    def open_url_dialog(self) -> None: ...
    def close_current(self) -> None: ...
    def close(self) -> bool: ...
    def focus_search(self) -> None: ...
    def copy_current_path(self) -> None: ...
    def collapse_all(self) -> None: ...
    def show_selection_panel(self) -> None: ...
    def show_file_panel(self) -> None: ...
    def show_about(self) -> None: ...
    def open_recipe_dialog(self) -> None: ...
    def apply_bundled_recipe(self, name: str) -> None: ...
    def save_recipe(self) -> bool: ...
    def save_recipe_as(self) -> bool: ...
    def export_recipe(self) -> None: ...
    def start_surgery(self) -> None: ...
    def rerun_preview(self) -> None: ...
    def show_diff(self) -> None: ...
    def make_it_load(self) -> None: ...
    def copy_as_cli(self) -> None: ...
    def copy_as_rust(self) -> None: ...


@dataclass
class Actions:
    open: QAction
    open_url: QAction
    close_tab: QAction
    quit: QAction
    find: QAction
    copy_path: QAction
    collapse_all: QAction
    show_selection: QAction
    show_file: QAction
    about: QAction
    recent: QMenu
    undo: QAction
    redo: QAction
    open_recipe: QAction
    save_recipe: QAction
    save_recipe_as: QAction
    export: QAction
    start_surgery: QAction
    rerun: QAction
    diff: QAction
    make_it_load: QAction
    set_template: QAction
    clear_template: QAction
    copy_cli: QAction
    copy_rust: QAction
    workbench: QMenu
    bundled: QMenu  # the recipes that ship with Store Studio, applied to the current file


def _action(window: ActionHost, text: str, slot: Callable[[], object], shortcut: QKeySequence | str | None = None,
            tip: str = "", icon_name: str | None = None) -> QAction:
    action = QAction(text, window)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    if tip:
        action.setStatusTip(tip)
        action.setToolTip(f"{tip} ({action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)})"
                          if shortcut is not None else tip)
    if icon_name:
        action.setIcon(icon(icon_name))
    action.triggered.connect(slot)
    return action


def install(window: ActionHost) -> Actions:
    """Create the actions, wire them to the window and build its menu bar."""
    keys = QKeySequence.StandardKey
    actions = Actions(
        open=_action(window, "&Open…", window.open_dialog, keys.Open, "Open model files", "open"),
        open_url=_action(window, "Open &URL…", window.open_url_dialog, "Ctrl+Shift+L",
                         "Open a model on a web server or the Hugging Face Hub (only its index is downloaded)"),
        # Ctrl+W everywhere, as the user guide says: StandardKey.Close is Ctrl+F4 alone outside GNOME, KDE and macOS
        close_tab=_action(window, "&Close File", window.close_current, "Ctrl+W", "Close the current file"),
        quit=_action(window, "&Quit", window.close, keys.Quit, "Quit Store Studio"),
        find=_action(window, "&Find Tensors…", window.focus_search, keys.Find, "Filter tensors by name", "search"),
        copy_path=_action(window, "Copy &Name", window.copy_current_path, "Ctrl+Shift+C",
                          "Copy the selected tensor's full name", "copy"),
        collapse_all=_action(window, "&Collapse All", window.collapse_all, "Ctrl+Shift+-", "Collapse every group"),
        show_selection=_action(window, "&Selection Details", window.show_selection_panel, "Ctrl+1",
                               "Show the selected tensor's details and values"),
        show_file=_action(window, "&File Information", window.show_file_panel, "Ctrl+2",
                          "Show the file's format, metadata and totals"),
        about=_action(window, "&About Store Studio", window.show_about),
        recent=QMenu("Open &Recent", window),
        undo=window.undo_group.createUndoAction(window, "&Undo"),
        redo=window.undo_group.createRedoAction(window, "&Redo"),
        open_recipe=_action(window, "Open &Recipe…", window.open_recipe_dialog, "Ctrl+Shift+O",
                            "Apply a saved recipe (JSON) to the current file"),
        save_recipe=_action(window, "&Save Recipe", window.save_recipe, keys.Save, "Save the recipe as JSON"),
        save_recipe_as=_action(window, "Save Recipe &As…", window.save_recipe_as, "Ctrl+Shift+S",
                               "Save the recipe as JSON under a new name"),
        export=_action(window, "&Export…", window.export_recipe, "Ctrl+E",
                       "Write what the recipe produces to a new file", "export"),
        start_surgery=_action(window, "&Start Surgery", window.start_surgery, "Ctrl+R",
                              "Show the workbench: filters, remaps, adapters, sources and a live preview", "surgery"),
        rerun=_action(window, "&Re-run Preview", window.rerun_preview, "F5", "Plan the recipe again now"),
        diff=_action(window, "&Diff…", window.show_diff, "Ctrl+D", "Compare the recipe's result with another file",
                     "diff"),
        make_it_load=_action(window, "Make It &Load Into…", window.make_it_load, None,
                             "Choose the target model's file (or its Rust source) and change the recipe, as one "
                             "undoable step, so that the most of its tensors load"),
        set_template=_action(window, "Set &Template…", window.choose_template, None,
                             "Choose a file saved from the target model: the preview and tree show how the result "
                             "fits it, and Export checks its shapes"),
        clear_template=_action(window, "C&lear Template", window.clear_template, None,
                               "Stop comparing the recipe's result with a template"),
        copy_cli=_action(window, "Copy as &Command Line", window.copy_as_cli, None,
                         "Copy the store-studio convert command that replays this recipe", "copy"),
        copy_rust=_action(window, "Copy as R&ust (burn-store)", window.copy_as_rust, None,
                          "Copy the burn-store builder chain that loads like this recipe", "copy"),
        workbench=QMenu("&Workbench Panels", window),
        bundled=_bundled_menu(window),
    )
    actions.undo.setShortcut(QKeySequence("Ctrl+Z"))
    actions.redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
    actions.quit.setMenuRole(QAction.MenuRole.QuitRole)
    actions.about.setMenuRole(QAction.MenuRole.AboutRole)
    a = actions
    menus = {  # None is a separator; a QMenu is a submenu
        "&File": (a.open, a.open_url, a.recent, None, a.open_recipe, a.save_recipe, a.save_recipe_as, a.export, None,
                  a.close_tab, None, a.quit),
        "&Edit": (a.undo, a.redo, None, a.find, a.copy_path),
        "&View": (a.show_selection, a.show_file, None, a.collapse_all, None, a.workbench),
        "&Surgery": (a.start_surgery, a.rerun, a.diff, a.make_it_load, a.bundled, None, a.set_template,
                     a.clear_template, None, a.copy_cli, a.copy_rust),
        "&Help": (a.about,),
    }
    for title, items in menus.items():
        menu = window.menuBar().addMenu(title)
        for item in items:
            if item is None:
                menu.addSeparator()
            elif isinstance(item, QMenu):
                menu.addMenu(item)
            else:
                menu.addAction(item)
    return actions


def _bundled_menu(window: ActionHost) -> QMenu:
    """One action per bundled recipe, named as ``--recipe NAME`` names it, its tooltip saying what it does."""
    menu = QMenu("Apply &Bundled Recipe", window)
    for name in bundled_recipes():
        action = menu.addAction(name)
        action.setToolTip(BUNDLED_PURPOSES.get(name, ""))
        action.triggered.connect(lambda _=False, name=name: window.apply_bundled_recipe(name))
    menu.setToolTipsVisible(True)
    return menu
