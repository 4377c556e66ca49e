"""The Sources dock sets a top-level key per source, as an undoable recipe edit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from gui.main_window import MainWindow

from tests.helpers.gui_workbench import settle


def _checkpoint(path: Path) -> dict[str, torch.Tensor]:
    model = {"fc.weight": torch.arange(6, dtype=torch.float32).reshape(2, 3), "fc.bias": torch.tensor([1.0, 2.0])}
    torch.save({"model": model, "ema": {"fc.weight": torch.zeros(2, 3)}}, path)
    return model


def test_a_sources_key_narrows_that_source_to_its_branch_and_undo_restores_it(window: MainWindow, surgery, qtbot,
                                                                              tmp_path: Path):
    path = tmp_path / "ckpt.pt"
    model = _checkpoint(path)
    document = surgery(path)
    panel = window.panels["sources"]
    panel.list.setCurrentRow(0)
    assert [panel.key.itemText(i) for i in range(panel.key.count())] == ["(whole file)", "ema", "model"]
    panel.key.setCurrentIndex(panel.key.findData("model"))
    panel.key.activated.emit(panel.key.currentIndex())
    settle(qtbot, document)
    assert document.recipe.sources[0].top_level_key == "model"
    assert document.recipe.top_level_key is None  # the source's own key, not the recipe's
    assert sorted(document.plan.names) == ["fc.bias", "fc.weight"]
    by_name = {t.name: t for t in document.plan.tensors}
    np.testing.assert_array_equal(by_name["fc.weight"].read(), model["fc.weight"].numpy())
    assert "key model" in panel.list.item(0).text()

    window.actions.undo.trigger()
    settle(qtbot, document)
    assert document.recipe.sources[0].top_level_key is None
    assert "model.fc.weight" in document.plan.names and "ema.fc.weight" in document.plan.names
    assert panel.key.currentIndex() == 0


def test_a_sources_key_is_saved_with_the_recipe(window: MainWindow, surgery, qtbot, tmp_path: Path):
    path = tmp_path / "ckpt.pt"
    _checkpoint(path)
    document = surgery(path)
    panel = window.panels["sources"]
    panel.list.setCurrentRow(0)
    panel.key.setCurrentIndex(panel.key.findData("ema"))
    panel.key.activated.emit(panel.key.currentIndex())
    settle(qtbot, document)
    saved = document.save(tmp_path / "r.recipe.json")
    assert '"top_level_key": "ema"' in saved.read_text()
    assert document.plan.names == ["fc.weight"]
    np.testing.assert_array_equal(document.plan.tensors[0].read(), np.zeros((2, 3), np.float32))


def test_a_file_without_branches_offers_no_key(window: MainWindow, surgery, qtbot, tmp_path: Path):
    from safetensors.numpy import save_file
    path = tmp_path / "flat.safetensors"
    save_file({"a.weight": np.ones(2, np.float32)}, str(path))
    surgery(path)
    panel = window.panels["sources"]
    panel.list.setCurrentRow(0)
    assert not panel.key.isEnabled()
    assert "only PyTorch" in panel.key.itemText(0)
