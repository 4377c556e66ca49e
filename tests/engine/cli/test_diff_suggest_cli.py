"""``store-studio diff A B --suggest``: one ``suggest:`` line per change, and a recipe ``convert --recipe`` applies;
B, the target model's file, settles module kinds while each change is proved. Without it a user would have to work
out by hand the renames and adapters that make a checkpoint load in the target model.

Promise (README "Command line": ``--suggest`` proves each change against B, a file saved from the target model)
-> test:
- a 2-D weight B wants as it is is not a Linear, so the PyTorch-to-Burn adapter (which renames the norm B names
  ``gamma``/``beta``) is suggested without transposing it; without B's kinds the transpose breaks the pair and
  nothing is suggested -> test_b_settles_that_a_weight_it_wants_as_it_is_is_not_transposed
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file
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


ADAPTER = ("suggest: add the pytorch-to-burn adapter (Linear weights, norm parameters): fixes 2 of 2 missing or "
           "mismatched: adapter pytorch-to-burn")


def test_b_settles_that_a_weight_it_wants_as_it_is_is_not_transposed(tmp_path: Path, capsys):
    a, b, saved = tmp_path / "a.safetensors", tmp_path / "b.safetensors", tmp_path / "r.json"
    fc = {"fc.weight": np.zeros((3, 2), np.float32), "fc.bias": np.zeros(3, np.float32)}  # named like a Linear
    save_file({"ln.weight": np.ones(3, np.float32), "ln.bias": np.zeros(3, np.float32), **fc}, str(a))
    save_file({"ln.gamma": np.ones(3, np.float32), "ln.beta": np.zeros(3, np.float32), **fc}, str(b))
    assert main(["diff", str(a), str(b), "--suggest", "--save-recipe", str(saved), "-q"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == ADAPTER
    assert json.loads(saved.read_text())["adapters"] == ["pytorch-to-burn"]
