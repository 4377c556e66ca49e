"""Surgery › Make It Load Into… and suggestions that wrap, driven like a user: the one step that fits a checkpoint
to a template, and suggestions a user can read whole at 1024x640.

Promises -> tests:
- the action picks a template, applies the best chain as one undoable edit (the template with it), and the diff
  view then says what the fit did and that everything loads -> ``test_make_it_load_into_fits_a_lightning_checkpoint_as_one_step``
- what still does not load is named with its closest names -> ``test_what_still_does_not_load_is_named_with_its_closest_names``
- at 1024x640 a suggestion's label wraps instead of being cut: its whole text is in the label, the label is given
  the height its wrapped text needs, nothing is scrolled away; its tooltip has the changes, steps and pairs ->
  ``test_suggestions_wrap_at_1024x640_and_show_their_whole_text``
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PySide6.QtCore import QPoint

from engine import ArrayStore, export, open_store
from engine.surgery import Recipe, RemapRule
from gui.main_window import MainWindow
from gui.workbench.suggestion_list import BREAK, WrappedLabel
from tests.helpers.wrapped_checkpoints import SAMPLE_BPK, SAMPLE_PT, lightning_checkpoint
from tests.helpers.gui_workbench import settle

ADAPTER = "add the pytorch-to-burn adapter (Linear weights, norm parameters)"


def _pick(monkeypatch, path: Path) -> None:
    monkeypatch.setattr("gui.workbench.make_it_load.choose_model", lambda *a, **k: path)


def _fitted(window: MainWindow, document, qtbot) -> None:
    """Make It Load Into…, then wait for the fit, its plan and the diff view's comparison."""
    window.actions.make_it_load.trigger()
    qtbot.waitUntil(lambda: document.template is not None, timeout=60_000)
    settle(qtbot, document)
    qtbot.waitUntil(lambda: window.diff_panel() is not None and window.diff_panel().is_idle()
                    and bool(window.diff_panel().model.rows), timeout=60_000)


def test_make_it_load_into_fits_a_lightning_checkpoint_as_one_step(window: MainWindow, surgery, qtbot, monkeypatch,
                                                                  tmp_path: Path):
    assert window.actions.make_it_load in window.menuBar().actions()[3].menu().actions()  # Surgery
    document = surgery(lightning_checkpoint(tmp_path / "last.ckpt"))
    before = document.recipe
    _pick(monkeypatch, SAMPLE_BPK)
    _fitted(window, document, qtbot)
    assert document.recipe.top_level_key == "state_dict" and document.recipe.remaps == (RemapRule(r"^model\.", ""),)
    assert document.recipe.adapters == ("pytorch-to-burn",) and document.recipe.template == str(SAMPLE_BPK)
    assert document.template.path == SAMPLE_BPK and document.undo_stack.count() == 1
    panel = window.diff_panel()
    assert panel.fit_note.isVisible() and panel.fit_note.full_text == (
        "Make It Load Into sample_cnn.bpk made 3 changes as one step (Ctrl+Z undoes it): read the checkpoint's "
        f"top-level key 'state_dict'; strip the prefix model.; {ADAPTER}. Every tensor it wants loads.")
    statuses = {row.name: row.status for row in panel.model.rows}  # every name is model.-stripped: renamed
    assert {name for name, status in statuses.items() if status != "renamed"} == {"norm1.num_batches_tracked",
                                                                                  "norm2.num_batches_tracked"}
    assert statuses["norm2.num_batches_tracked"] == "unused" and len(statuses) == 18
    assert not panel.bulk_box.isVisible()  # nothing is left to suggest

    window.actions.undo.trigger()  # one step takes the chain and the template back
    settle(qtbot, document)
    assert document.recipe == before and document.template is None and not panel.fit_note.isVisible()
    window.actions.redo.trigger()
    settle(qtbot, document)
    assert document.recipe.top_level_key == "state_dict" and panel.fit_note.isVisible()


def test_what_still_does_not_load_is_named_with_its_closest_names(window: MainWindow, surgery, qtbot, monkeypatch,
                                                                 tmp_path: Path):
    state = {f"module.{k}": v for k, v in torch.load(SAMPLE_PT).items()} | {"module.fc_3.weight": torch.zeros(4, 4)}
    torch.save(state, tmp_path / "dp.pt")
    with open_store(SAMPLE_BPK) as burn:
        wanted = {name: np.asarray(burn.read(name)) for name in burn.names}
    wanted["fc3.weight"] = np.zeros((10, 10), np.float32)
    target = export(ArrayStore(wanted).entries, tmp_path / "wider.bpk")
    document = surgery(tmp_path / "dp.pt")
    _pick(monkeypatch, target)
    _fitted(window, document, qtbot)
    assert window.diff_panel().fit_note.full_text == (
        f"Make It Load Into wider.bpk made 2 changes as one step (Ctrl+Z undoes it): strip the prefix module.; "
        f"{ADAPTER}. Still not loading (1): fc3.weight (closest: fc_3.weight).")
    assert {row.name: row.status for row in window.diff_panel().model.rows}["fc3.weight"] == "missing"


def _shows_whole(label: WrappedLabel, window: MainWindow) -> None:
    """The label holds its whole text, wraps it, is given the height the wrapped text needs and lies in the window."""
    assert label.isVisible() and label.wordWrap()
    assert label.text().replace(BREAK, "") == label.full_text  # as set: a QLabel never elides
    assert label.height() >= label.heightForWidth(label.width())
    corner = label.mapTo(window, QPoint(label.width(), label.height()))
    assert window.rect().contains(corner) and label.width() > 0


def test_suggestions_wrap_at_1024x640_and_show_their_whole_text(window: MainWindow, surgery, qtbot, tmp_path: Path):
    window.resize(1024, 640)
    document = surgery(lightning_checkpoint(tmp_path / "last.ckpt"))
    window.actions.diff.trigger()
    panel = window.diff_panel()
    panel.compare_with_file(SAMPLE_BPK)
    qtbot.waitUntil(lambda: panel.is_idle() and bool(panel.bulk_box.rows()), timeout=60_000)
    (row,) = panel.bulk_box.rows()
    assert row.title.full_text == (f"read the checkpoint's top-level key 'state_dict' + strip the prefix model. + "
                                   f"{ADAPTER}: fixes 16 of 16 missing or mismatched")
    qtbot.waitUntil(lambda: row.title.height() >= row.title.heightForWidth(row.title.width()), timeout=10_000)
    line = row.title.fontMetrics().lineSpacing()
    assert row.title.heightForWidth(row.title.width()) >= 2 * line  # too long for one line at this width: wrapped
    _shows_whole(row.title, window)
    assert not panel.bulk_box.area.verticalScrollBar().isVisible()  # every line in view, none scrolled away
    assert row.title.toolTip().splitlines()[1:3] == [  # the changes and each step, then every pair
        "top-level key 'state_dict'; remap '^model\\.' -> ''; adapter pytorch-to-burn",
        "step: read the checkpoint's top-level key 'state_dict': loads nothing alone; the changes after it need it: "
        "top-level key 'state_dict'"]
    assert "model.conv1.weight → conv1.weight [16, 1, 3, 3]" in row.title.toolTip().splitlines()
    row.apply_button.click()  # the whole chain is one edit
    assert document.recipe.top_level_key == "state_dict" and document.undo_stack.count() == 1
    assert document.recipe == Recipe(sources=document.recipe.sources, top_level_key="state_dict",
                                     remaps=(RemapRule(r"^model\.", ""),), adapters=("pytorch-to-burn",))
