"""``store-studio --recipe R.json`` alone opens the recipe's sources; a recipe that does not fit its file says so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from engine.surgery import Recipe
from gui.app import main, recipe_home
from gui.main_window import MainWindow

from tests.helpers.gui_workbench import settle


def _net(path: Path) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    state = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).state_dict()
    torch.save(state, path)
    return state


def test_recipe_alone_opens_the_recipes_own_source_relative_to_its_folder(qapp, tmp_path: Path, monkeypatch):
    models = tmp_path / "models"
    models.mkdir()
    _net(models / "net.pt")
    recipe = tmp_path / "r.recipe.json"
    recipe.write_text(json.dumps({"version": 1, "sources": ["models/net.pt"], "remaps": [["^0\\.", "first."]]}))
    assert recipe_home(recipe) == [tmp_path / "models" / "net.pt"]
    out = tmp_path / "shot.png"
    # "2.weight" exists only in the recipe's source, not in the bundled sample the window opens otherwise
    assert main(["--recipe", str(recipe), "--select", "2.weight", "--screenshot", str(out)]) == 0
    assert out.exists()
    monkeypatch.chdir(tmp_path.parent)  # a recipe named relative to the working folder
    relative = Path(tmp_path.name) / "r.recipe.json"
    assert recipe_home(relative) == [Path(tmp_path.name) / "models" / "net.pt"]
    assert main(["--recipe", str(relative), "--select", "2.weight", "--screenshot", str(out)]) == 0
    assert recipe_home(tmp_path / "absent.json") == [] and recipe_home(None) == []


def test_applying_a_recipe_that_does_not_fit_warns_in_status_bar_and_preview(window: MainWindow, surgery, qtbot,
                                                                             tmp_path: Path):
    state = _net(tmp_path / "net.pt")
    recipe = tmp_path / "other.recipe.json"
    recipe.write_text(json.dumps({"version": 1, "remaps": [["^fc(\\d)", "head$1"], ["^0\\.", "a."]],
                                  "filter": {"include": ["weight$"], "exclude": ["running_"]},
                                  "module_overrides": {"encoder.fc": "Linear"}}))
    document = surgery(tmp_path / "net.pt")
    window.open_recipe(recipe)
    qtbot.waitUntil(lambda: document.path is not None, timeout=30_000)
    settle(qtbot, document)
    qtbot.waitUntil(lambda: "⚠" in window.statusBar().currentMessage(), timeout=30_000)
    message = window.statusBar().currentMessage()
    assert message.startswith("⚠ Recipe other.recipe.json on net.pt: ")
    assert r"1 of 2 remap rules matches no tensor ('^fc(\d)' -> 'head$1')" in message
    assert "1 of 2 filter rules matches no tensor ('running_')" in message
    assert "module type set for 'encoder.fc', which no source has" in message
    notes = window.panels["preview"].notes
    assert notes.isVisible() and "Parts of the recipe find nothing here: 1 of 2 remap rules" in notes.text()
    # the rule that fits still did its work, on the real bytes
    by_name = {t.name: t for t in document.plan.tensors}
    np.testing.assert_array_equal(by_name["a.weight"].read(), state["0.weight"].numpy())

    document.push(document.recipe.with_changes(remaps=document.recipe.remaps[1:], filter=Recipe().filter,
                                               module_overrides={}), "Fit")
    settle(qtbot, document)
    assert not notes.isVisible()


def test_a_relative_recipe_opens_its_extra_sources_from_its_folder(window: MainWindow, surgery, qtbot, tmp_path: Path,
                                                                   monkeypatch):
    _net(tmp_path / "net.pt")
    extra = {"2.bias": torch.tensor([5.0, 6.0])}
    torch.save(extra, tmp_path / "extra.pt")
    (tmp_path / "r.recipe.json").write_text(json.dumps({"version": 1, "sources": ["net.pt", "extra.pt"]}))
    document = surgery(tmp_path / "net.pt")
    monkeypatch.chdir(tmp_path.parent)
    window.open_recipe(Path(tmp_path.name) / "r.recipe.json")
    qtbot.waitUntil(lambda: len(document.stores) == 2, timeout=30_000)
    settle(qtbot, document)
    bias = next(t for t in document.plan.tensors if t.name == "2.bias")
    np.testing.assert_array_equal(bias.read(), np.array([5.0, 6.0], np.float32))
