"""A filter rule's count lists the names it matched: the first few under the rules, more in the count's tooltip
(README "The workbench", Filters: "each row with how many tensors it matches and which names (listed under the
rules, more in the count's tooltip)"; the section's other pairs: test_workbench_promises.py). Without it a user cannot
check what a broad rule catches before exporting.

Promise -> test:
- the names past the ones listed under the rules are in the count's tooltip, in the plan's order, and the line
  under the rules says how many more there are -> test_names_past_the_listed_ones_are_in_the_counts_tooltip
  (checked: a tooltip of the listed names only fails it)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine import ArrayStore, export
from gui.main_window import MainWindow
from gui.workbench.panels.filters import INCLUDE

from tests.helpers.gui_workbench import settle

NAMES = [f"block.{i}.weight" for i in range(8)] + ["head.bias"]


def test_names_past_the_listed_ones_are_in_the_counts_tooltip(window: MainWindow, surgery, qtbot, tmp_path: Path):
    export(ArrayStore({name: np.zeros(2, np.float32) for name in NAMES}).entries, tmp_path / "m.safetensors")
    document = surgery(tmp_path / "m.safetensors")
    panel = window.panels["filters"]
    panel.add_buttons[INCLUDE].click()
    row = panel.rows[0]
    qtbot.keyClicks(row.edit, r"^block\.")
    settle(qtbot, document)
    assert row.hits.text() == "8 tensors"
    listed = next(line for line in panel.examples.text().splitlines() if line.startswith("include"))
    assert listed == r"include ^block\.  →  block.0.weight, block.1.weight, block.2.weight  (+5 more)"
    tip = row.hits.toolTip().splitlines()
    assert tip[0].endswith("matches 8 tensors:")
    assert tip[1:] == NAMES[:8]  # all eight, the five past the listed three included
    assert "head.bias" not in row.hits.toolTip()
