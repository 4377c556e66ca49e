"""``store-studio diff A B --suggest``: one ``suggest:`` line per change, and a recipe ``convert --recipe`` applies."""

from __future__ import annotations

import json

import numpy as np
import torch
from torch import nn

from engine import ArrayStore, export, open_store
from engine.cli import main


class Mlp(nn.Module):
    """The book's non-contiguous indices: Linears with ReLUs between them, then a BatchNorm1d."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3))
        self.norm = nn.BatchNorm1d(3)


def burn_template(sd: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """Burn's names and shapes for Mlp: Linear weights [in, out], fc renumbered 0, 1, 2, norm gamma/beta."""
    renumber = {"fc.0": "fc.0", "fc.2": "fc.1", "fc.4": "fc.2"}
    out = {}
    for name, tensor in sd.items():
        module, _, leaf = name.rpartition(".")
        if leaf == "num_batches_tracked":
            continue
        array = tensor.numpy()
        if module.startswith("fc") and leaf == "weight":
            array = np.zeros_like(array.T)  # a template's values are untrained: only names and shapes count
        if module == "norm":
            leaf = {"weight": "gamma", "bias": "beta"}.get(leaf, leaf)
        out[f"{renumber.get(module, module)}.{leaf}"] = array
    return out


def test_suggest_prints_each_change_and_the_saved_recipe_converts_to_what_the_template_wants(tmp_path, capsys):
    torch.manual_seed(0)
    sd = Mlp().state_dict()
    torch.save(sd, tmp_path / "mlp.pt")
    export(ArrayStore(burn_template(sd)).entries, tmp_path / "template.bpk")
    recipe = tmp_path / "suggested.json"

    code = main(["diff", str(tmp_path / "mlp.pt"), str(tmp_path / "template.bpk"), "--no-values", "--suggest",
                 "--save-recipe", str(recipe)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [line for line in out if line.startswith("suggest:")] == [
        "suggest: add the pytorch-to-burn adapter (Linear weights, norm parameters): fixes 3 of 7 missing or "
        "mismatched: adapter pytorch-to-burn",
        "suggest: renumber indices contiguously (fc.0, fc.2, fc.4 -> fc.0, fc.1, fc.2): fixes 4 of 4 missing or "
        "mismatched: adapter contiguous-indices"]
    saved = json.loads(recipe.read_text())
    assert saved["adapters"] == ["pytorch-to-burn", "contiguous-indices"]

    assert main(["convert", "--recipe", str(recipe), str(tmp_path / "out.bpk")]) == 0
    with open_store(tmp_path / "out.bpk") as out_store, open_store(tmp_path / "template.bpk") as template:
        assert {e.name: e.shape for e in out_store.entries if e.name != "norm.num_batches_tracked"} == \
            {e.name: e.shape for e in template.entries}
        assert np.array_equal(out_store.read("fc.1.weight"), sd["fc.2.weight"].numpy().T)  # values moved, not guessed
        assert np.array_equal(out_store.read("norm.gamma"), sd["norm.weight"].numpy())


def test_suggest_with_nothing_to_change_prints_no_suggestion(tmp_path, capsys):
    export(ArrayStore({"w": np.ones(3, np.float32)}).entries, tmp_path / "a.bpk")
    assert main(["diff", str(tmp_path / "a.bpk"), str(tmp_path / "a.bpk"), "--suggest"]) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith("suggest:")]


def test_save_recipe_without_suggest_is_a_usage_error(tmp_path, capsys):
    export(ArrayStore({"w": np.ones(3, np.float32)}).entries, tmp_path / "a.bpk")
    assert main(["diff", str(tmp_path / "a.bpk"), str(tmp_path / "a.bpk"), "--save-recipe", str(tmp_path / "r.json")]) == 2
    assert "--suggest" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
