"""The preview lists each guessed tensor (guess, reason, how to settle); settling it in Adapters clears it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox

from gui.main_window import MainWindow
from gui.workbench.panels.adapters import KIND
from gui.workbench.panels.preview import GUESSED, NAME, STATUS

from tests.helpers.gui_workbench import settle


class _Net(torch.nn.Module):
    """An Embedding whose name says nothing, GPT-NeoX's bias-free head named embed_out, a PReLU, a real Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens = torch.nn.Embedding(10, 4)
        self.fc = torch.nn.Linear(4, 4)
        self.act = torch.nn.PReLU()
        self.embed_out = torch.nn.Linear(4, 10, bias=False)


def _status(window: MainWindow) -> dict[str, object]:
    proxy = window.panels["preview"].sorted
    return {proxy.index(r, NAME).data(): proxy.index(r, STATUS) for r in range(proxy.rowCount())}


def _open_editor(window: MainWindow) -> QComboBox | None:
    """The type editor now open (a closed one lingers, hidden, until Qt deletes it)."""
    editors = window.panels["adapters"].table.findChildren(QComboBox, "kindEditor")
    return next((editor for editor in editors if editor.isVisible()), None)


def _choose_in_editor(window: MainWindow, qtbot, kind: str) -> list[str]:
    qtbot.waitUntil(lambda: _open_editor(window) is not None, timeout=30_000)
    editor = _open_editor(window)
    offered = [editor.itemText(i) for i in range(editor.count())]
    editor.setCurrentText(kind)
    editor.activated.emit(editor.currentIndex())
    return offered


def test_guessed_tensors_are_listed_and_settling_them_in_adapters_clears_them(window: MainWindow, surgery, qtbot,
                                                                               tmp_path: Path):
    torch.manual_seed(3)
    state = _Net().state_dict()
    torch.save(state, tmp_path / "net.pt")
    document = surgery(tmp_path / "net.pt")
    window.panels["adapters"].checks["pytorch-to-burn"].click()
    settle(qtbot, document)
    panel = window.panels["preview"]
    rows = _status(window)
    guessed = {name for name, index in rows.items() if GUESSED in index.data()}
    assert guessed == {"tokens.weight", "embed_out.weight", "act.alpha"}  # fc has a bias: evidence, no guess
    assert "? 3 tensors rest on a guess" in panel.notes.text() and panel.notes.isVisible()
    tip = rows["tokens.weight"].data(Qt.ItemDataRole.ToolTipRole)
    assert "Guessed Linear: transposed (2-D weight without bias, and the name 'tokens' says nothing)" in tip
    assert "set tokens to Linear or Embedding" in tip and "--module tokens=Linear or --module tokens=Embedding" in tip
    adapters = window.panels["adapters"]
    assert "3 guessed from a name alone" in adapters.modules_title.text()
    by_name = {t.name: t for t in document.plan.tensors}
    np.testing.assert_array_equal(by_name["tokens.weight"].read(), state["tokens.weight"].numpy().T)  # the guess

    panel.table.doubleClicked.emit(rows["tokens.weight"])  # double-click: Adapters opens on the module's type
    assert window.docks["adapters"].isVisible()
    assert adapters.modules.guesses[adapters.table.currentIndex().row()].path == "tokens"
    offered = _choose_in_editor(window, qtbot, "Embedding")
    assert "PRelu" in offered and "Embedding" in offered
    settle(qtbot, document)
    assert document.recipe.module_overrides == {"tokens": "Embedding"}
    rows = _status(window)
    assert GUESSED not in rows["tokens.weight"].data() and "? 2 tensors" in panel.notes.text()
    by_name = {t.name: t for t in document.plan.tensors}
    np.testing.assert_array_equal(by_name["tokens.weight"].read(), state["tokens.weight"].numpy())  # settled: as is

    panel.table.doubleClicked.emit(rows["act.alpha"])
    _choose_in_editor(window, qtbot, "PRelu")  # confirming the guessed kind settles it too
    settle(qtbot, document)
    assert document.recipe.module_overrides == {"tokens": "Embedding", "act": "PRelu"}
    assert GUESSED not in _status(window)["act.alpha"].data()
    by_name = {t.name: t for t in document.plan.tensors}
    np.testing.assert_array_equal(by_name["act.alpha"].read(), state["act.weight"].numpy())

    adapters.override("embed_out", "Linear")  # GPT-NeoX's head is a Linear: transposed once settled
    settle(qtbot, document)
    assert not document.plan.guesses and not panel.notes.isVisible()
    by_name = {t.name: t for t in document.plan.tensors}
    np.testing.assert_array_equal(by_name["embed_out.weight"].read(), state["embed_out.weight"].numpy().T)
    assert "guessed" not in adapters.modules_title.text()
    kinds = [adapters.modules.index(r, KIND).data() for r in range(adapters.modules.rowCount())]
    assert not any("guessed" in k for k in kinds)
