"""The preview's colours and the tree's are the same marks (README "The workbench", Preview: "Transformed tensors are
amber with the word (split, renamed, transposed, cast, fused), dropped ones grey and struck through with the reason,
conflicts red: the tree marks its own tensors the same way"): without it a user would miss a
dropped or conflicting tensor. Real widgets in the real window, offscreen, on the bundled sample checkpoint.

Promise -> test:
- a transformed row is amber with its word, a dropped one grey, struck through, its reason in the tooltip, a
  conflict red, and the tree's row for each source tensor carries the same colour and font ->
  test_preview_and_tree_colour_each_outcome_alike (checked: the tree's conflict mark painted like a transform fails it)
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from tests.helpers.gui_workbench import settle

from engine.surgery import Filter, RemapRule
from gui.main_window import MainWindow
from gui.models.tree_model import MARK_ROLE, NODE_ROLE
from gui.visual import AMBER, GREY, RED
from gui.workbench.panels.preview import NAME, OPERATIONS, STATUS

FOREGROUND, FONT, TOOLTIP = Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.FontRole, Qt.ItemDataRole.ToolTipRole


def tree_row(view, name: str):
    """The tree's Name cell for the file's tensor ``name`` (groups opened as the tree shows them)."""
    model = view.model
    group, leaf = name.split(".", 1)
    parent = next(model.index(r, 0) for r in range(model.rowCount()) if model.index(r, 0).data() == group)
    return next(model.index(r, 0, parent) for r in range(model.rowCount(parent))
                if model.index(r, 0, parent).data(NODE_ROLE).path == name)  # a renamed row shows its new name


def test_preview_and_tree_colour_each_outcome_alike(window: MainWindow, surgery, qtbot):
    document = surgery()
    window.panels["adapters"].checks["pytorch-to-burn"].click()
    document.push(document.recipe.with_changes(remaps=(RemapRule(r"^conv2\.bias$", "conv1.bias"),),
                                               filter=Filter(exclude=("running_var",))), "conflict and drop")
    settle(qtbot, document)
    model = window.panels["preview"].model
    rows = {}
    for r in range(model.rowCount()):
        rows.setdefault(model.index(r, NAME).data(), []).append(r)
    fc1 = rows["fc1.weight"][0]
    assert model.index(fc1, STATUS).data() == "◆ transposed"
    assert model.index(fc1, NAME).data(FOREGROUND).color() == AMBER
    dropped = rows["norm1.running_var"][0]
    assert model.index(dropped, STATUS).data() == "✕ dropped"
    assert model.index(dropped, NAME).data(FOREGROUND).color() == GREY
    assert model.index(dropped, NAME).data(FONT).strikeOut()
    assert model.index(dropped, NAME).data(TOOLTIP) == f"norm1.running_var: {model.index(dropped, OPERATIONS).data()}"
    assert "running_var" in model.index(dropped, OPERATIONS).data()
    conflicted = rows["conv1.bias"]
    assert len(conflicted) == 2 and all(model.index(r, NAME).data(FOREGROUND).color() == RED for r in conflicted)
    view = window.current_view()
    for name, colour in (("fc1.weight", AMBER), ("norm1.running_var", GREY), ("conv2.bias", RED), ("conv1.bias", RED)):
        cell = tree_row(view, name)
        assert cell.data(MARK_ROLE) is not None, name
        assert cell.data(FOREGROUND).color() == colour, name
        assert cell.data(FONT).strikeOut() == (colour == GREY), name
