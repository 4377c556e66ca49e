"""Every menu action and its shortcut, declared in one place (napari's qactions, in miniature).

Only actions that do something today are here: menus without a working action are left out, not greyed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from gui.resources import icon

if TYPE_CHECKING:
    from gui.main_window import MainWindow


@dataclass
class Actions:
    open: QAction
    close_tab: QAction
    quit: QAction
    find: QAction
    copy_path: QAction
    collapse_all: QAction
    show_selection: QAction
    show_file: QAction
    about: QAction
    recent: QMenu


def _action(window: "MainWindow", text: str, slot: Callable[[], object], shortcut: QKeySequence | str | None = None,
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


def install(window: "MainWindow") -> Actions:
    """Create the actions, wire them to the window and build its menu bar."""
    keys = QKeySequence.StandardKey
    actions = Actions(
        open=_action(window, "&Open…", window.open_dialog, keys.Open, "Open model files", "open"),
        close_tab=_action(window, "&Close File", window.close_current, keys.Close, "Close the current file"),
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
    )
    actions.quit.setMenuRole(QAction.MenuRole.QuitRole)
    actions.about.setMenuRole(QAction.MenuRole.AboutRole)
    bar = window.menuBar()
    file_menu = bar.addMenu("&File")
    file_menu.addAction(actions.open)
    file_menu.addMenu(actions.recent)
    file_menu.addSeparator()
    file_menu.addAction(actions.close_tab)
    file_menu.addSeparator()
    file_menu.addAction(actions.quit)
    edit_menu = bar.addMenu("&Edit")
    edit_menu.addAction(actions.find)
    edit_menu.addAction(actions.copy_path)
    view_menu = bar.addMenu("&View")
    view_menu.addAction(actions.show_selection)
    view_menu.addAction(actions.show_file)
    view_menu.addSeparator()
    view_menu.addAction(actions.collapse_all)
    help_menu = bar.addMenu("&Help")
    help_menu.addAction(actions.about)
    return actions
