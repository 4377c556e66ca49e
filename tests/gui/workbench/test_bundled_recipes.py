"""The window's Surgery menu applies a bundled recipe to the current file as one undoable step. Without it a user
would have to find the recipe file inside the installed package to open it."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication

from tests.helpers.gguf_files import write_llama_gguf


def test_the_window_applies_the_bundled_recipe_from_the_surgery_menu_and_undo_takes_it_back(window, open_view, qtbot,
                                                                                             tmp_path):
    model = tmp_path / "llama.gguf"
    write_llama_gguf(model, quantized=True)
    open_view(model)
    menu = window.actions.bundled
    action = next(a for a in menu.actions() if a.text() == "gguf-llama-to-hf")
    assert "q/k row order" in action.toolTip()
    action.trigger()
    panel = window.panels["preview"]
    qtbot.waitUntil(lambda: panel.model.plan is not None and any(t.name == "lm_head.weight"
                                                                for t in panel.model.plan.tensors), timeout=30_000)
    q = next(t for t in panel.model.plan.tensors if t.name == "model.layers.0.self_attn.q_proj.weight")
    assert q.operations[0] == "undo llama.cpp's rotary row order (4 heads of 16 rows)"
    window.actions.undo.trigger()
    qtbot.waitUntil(lambda: panel.model.plan is None or all(t.name != "lm_head.weight"
                                                            for t in panel.model.plan.tensors), timeout=30_000)
    QApplication.processEvents()
    assert QKeySequence("Ctrl+Z") in window.actions.undo.shortcuts()
