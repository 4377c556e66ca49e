"""Closing a tab whose recipe has unsaved edits asks, with the real question box: Cancel keeps the tab,
Save writes the recipe (and closes), and a save that fails says why and keeps the tab and its edits."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from engine.surgery import Recipe, RemapRule
from gui.dialogs import ERROR_DIALOG
from gui.main_window import SAVE_PROMPT, MainWindow

ASK_SAVE = MainWindow.ask_save  # the real question (the workbench's conftest answers Discard by default)
Button = QMessageBox.StandardButton


def answer_when_asked(button: Button, seen: list[str]) -> None:
    """Click ``button`` on the save question once it is shown (it runs its own event loop)."""

    def poll() -> None:
        box = next((w for w in QApplication.topLevelWidgets() if w.objectName() == SAVE_PROMPT and w.isVisible()), None)
        if box is None:
            QTimer.singleShot(20, poll)
            return
        seen.append(f"{box.text()} | {box.informativeText()}")
        box.button(button).click()

    QTimer.singleShot(0, poll)


def error_box(window: MainWindow) -> QMessageBox | None:
    box = window.findChild(QMessageBox, ERROR_DIALOG)
    return box if box is not None and box.isVisible() else None


def test_cancel_keeps_the_tab_and_save_writes_the_recipe_then_closes(window: MainWindow, surgery, monkeypatch,
                                                                     tmp_path: Path):
    document = surgery()
    document.add_remap("fc", "head")
    monkeypatch.setattr(MainWindow, "ask_save", ASK_SAVE)
    seen: list[str] = []
    answer_when_asked(Button.Cancel, seen)
    window.close_current()
    assert seen == ["Save the changes to the recipe for sample_cnn.pt? | "
                    "The recipe's edits are lost if you don't save them."]
    assert window.tabs.count() == 1 and document.is_modified

    target = tmp_path / "kept.recipe.json"
    monkeypatch.setattr("gui.main_window.choose_paths", lambda *a, **k: [str(target)])
    answer_when_asked(Button.Save, seen)
    window.close_current()
    assert len(seen) == 2 and window.tabs.count() == 0
    assert Recipe.load(target).remaps == (RemapRule("fc", "head"),)


def test_a_failed_save_says_why_and_keeps_the_tab_and_its_edits(window: MainWindow, surgery, monkeypatch, qtbot,
                                                                tmp_path: Path):
    document = surgery()
    document.add_remap("fc", "head")
    target = tmp_path / "no-such-folder" / "r.recipe.json"
    monkeypatch.setattr(MainWindow, "ask_save", ASK_SAVE)
    monkeypatch.setattr("gui.main_window.choose_paths", lambda *a, **k: [str(target)])
    answer_when_asked(Button.Save, [])
    window.close_current()
    qtbot.waitUntil(lambda: error_box(window) is not None, timeout=30_000)
    box = error_box(window)
    assert box.text() == "Store Studio could not save the recipe as r.recipe.json."
    assert f"the folder {target.parent} does not exist; create it first" in box.informativeText()
    assert window.tabs.count() == 1 and document.is_modified and document.path is None
    assert not target.exists()
    box.close()
    monkeypatch.setattr(MainWindow, "ask_save", lambda self, view: Button.Discard)  # let the teardown close


def test_save_recipe_over_a_folder_is_an_error_not_a_crash(window: MainWindow, surgery, monkeypatch, qtbot,
                                                          tmp_path: Path):
    document = surgery()
    document.add_remap("fc", "head")
    folder = tmp_path / "taken.recipe.json"
    folder.mkdir()
    monkeypatch.setattr("gui.main_window.choose_paths", lambda *a, **k: [str(folder)])
    assert window.save_recipe() is False
    qtbot.waitUntil(lambda: error_box(window) is not None, timeout=30_000)
    assert error_box(window).text() == "Store Studio could not save the recipe as taken.recipe.json."
    assert document.is_modified and folder.is_dir()
    error_box(window).close()
