"""The Filters dock says its rules match names after remap/renumbering/adapters, and shows which names matched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PySide6.QtWidgets import QLabel

from engine.surgery import RemapRule
from gui.main_window import MainWindow
from gui.workbench.panels.filters import EXCLUDE

from tests.helpers.gui_workbench import settle


def test_a_filter_rule_matches_the_remapped_name_and_shows_it(window: MainWindow, surgery, qtbot, tmp_path: Path):
    torch.manual_seed(2)
    state = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).state_dict()
    torch.save(state, tmp_path / "net.pt")
    document = surgery(tmp_path / "net.pt")
    document.push(document.recipe.with_changes(remaps=(RemapRule(r"^0\.", "first."),)), "Remap")
    settle(qtbot, document)
    panel = window.panels["filters"]
    assert "Rules match the names after remap, renumbering and adapters" in panel.findChild(QLabel, "filterHint").text()
    panel.add_buttons[EXCLUDE].click()
    row = panel.rows[0]
    qtbot.keyClicks(row.edit, r"^first\.bias$")
    settle(qtbot, document)
    assert row.hits.text() == "1 tensor"
    assert row.hits.toolTip().endswith(":\nfirst.bias")
    assert panel.examples.isVisible() and "exclude ^first\\.bias$  →  first.bias" in panel.examples.text()
    assert sorted(document.plan.names) == ["2.bias", "2.weight", "first.weight"]
    np.testing.assert_array_equal(next(t for t in document.plan.tensors if t.name == "first.weight").read(),
                                  state["0.weight"].numpy())
    dropped = next(d for d in document.plan.dropped if d.matched == "first.bias")
    assert dropped.name == "0.bias"  # the file's own name: what the tree greys out

    row.edit.clear()
    qtbot.keyClicks(row.edit, r"^0\.bias$")  # the file's name no longer matches: the rule sees remapped names
    settle(qtbot, document)
    assert row.hits.text() == "0 tensors" and not panel.examples.isVisible()
    assert "first.bias" in document.plan.names
