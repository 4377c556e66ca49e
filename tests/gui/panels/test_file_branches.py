"""The File panel lists a training checkpoint's top-level branches, each with a button that makes it the recipe's
top-level key: one undo step, which Ctrl+Z takes back; without it a user must
write the key by hand to read one branch of a training checkpoint. Real files from real torch, the real
window, real clicks.

Promises -> tests:
- the branches show with what they look like, and a click reads one alone (the tree marks the rest dropped);
  Ctrl+Z brings the whole file back -> ``test_a_branch_button_sets_the_top_level_key_and_ctrl_z_restores_it``
- a plain checkpoint shows no branches -> ``test_a_plain_checkpoint_shows_no_branches``
- a key from the file shows as text, never as markup -> ``test_a_key_that_looks_like_markup_shows_as_text``
"""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGroupBox, QLabel, QMessageBox, QPushButton

from tests.helpers.samples import SAMPLES
from gui.main_window import MainWindow
from gui.models.tree_model import Column
from gui.panels.file_info import KEY_PROPERTY
from tests.helpers.pytorch_training_checkpoints import lightning_checkpoint, trained


@pytest.fixture(autouse=True)
def discard_on_close(monkeypatch) -> None:
    """Closing the window at teardown must not wait on a modal "save the recipe?" question."""
    monkeypatch.setattr(MainWindow, "ask_save", lambda self, view: QMessageBox.StandardButton.Discard)


def branches_box(view) -> QGroupBox | None:
    return view.file_info.findChild(QGroupBox, "checkpointBranches")


def key_buttons(view) -> dict[str, QPushButton]:
    return {button.property(KEY_PROPERTY): button for button in branches_box(view).findChildren(QPushButton)}


def recipe_word(view, name: str) -> str:
    """What the tree's Recipe column says of one tensor."""
    index = view.model.index_of(view.model.root.find(name))
    return view.model.data(index.siblingAtColumn(Column.RECIPE), Qt.ItemDataRole.DisplayRole) or ""


def test_a_branch_button_sets_the_top_level_key_and_ctrl_z_restores_it(window, open_view, qtbot, tmp_path):
    lightning_checkpoint(tmp_path / "run.ckpt")
    view = open_view(tmp_path / "run.ckpt")
    box = branches_box(view)
    assert box.title() == "Checkpoint branches (3)"
    texts = [label.text() for label in box.findChildren(QLabel)]
    assert "The model weights are under state_dict." in texts[0]
    assert texts[1:] == ["state_dict", "model weights · 9 tensors · 368 B",
                         "optimizer_states", "optimizer state (step, exp_avg, exp_avg_sq) · 18 tensors · 616 B",
                         "callbacks", "EMA of the model weights · 9 tensors · 368 B"]
    assert list(key_buttons(view)) == ["state_dict", "optimizer_states", "callbacks"]

    qtbot.mouseClick(key_buttons(view)["state_dict"], Qt.MouseButton.LeftButton)
    document = view.document
    assert document is not None and document.recipe.top_level_key == "state_dict"
    qtbot.waitUntil(lambda: not document.busy and view.model.has_marks, timeout=30_000)
    assert recipe_word(view, "optimizer_states.0.state.0.exp_avg") == "dropped"
    assert recipe_word(view, "callbacks.EMA.ema_state_dict.0.weight") == "dropped"
    assert recipe_word(view, "state_dict.0.weight") == ""
    assert [tensor.name for tensor in document.plan.tensors][:2] == ["0.weight", "0.bias"]
    assert len(document.plan.tensors) == 9 and document.undo_stack.undoText() == "Top-level key state_dict"

    assert window.actions.undo.shortcut().toString() == "Ctrl+Z"
    view.tree_view.setFocus()
    qtbot.keyClick(view.tree_view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert document.recipe.top_level_key is None
    qtbot.waitUntil(lambda: not document.busy and not view.model.has_marks, timeout=30_000)
    assert recipe_word(view, "optimizer_states.0.state.0.exp_avg") == "" and len(document.plan.tensors) == 36


def test_a_plain_checkpoint_shows_no_branches(open_view):
    view = open_view(SAMPLES / "sample_cnn.pt")
    assert branches_box(view) is None


def test_a_key_that_looks_like_markup_shows_as_text(window, open_view, qtbot, tmp_path):
    run = trained()
    key = "<b>bold</b>\u202e"
    torch.save({key: run.model, "optimizer": run.optimizer}, tmp_path / "c.pt")
    view = open_view(tmp_path / "c.pt")
    labels = branches_box(view).findChildren(QLabel)
    assert labels[1].text() == "<b>bold</b>\\342\\200\\256" and labels[1].textFormat() == Qt.TextFormat.PlainText
    assert list(key_buttons(view)) == [key, "optimizer"]
    qtbot.mouseClick(key_buttons(view)[key], Qt.MouseButton.LeftButton)
    assert view.document.recipe.top_level_key == key  # as the file spells it, not as it is shown
    qtbot.waitUntil(lambda: not view.document.busy, timeout=30_000)
    assert len(view.document.plan.tensors) == 9
