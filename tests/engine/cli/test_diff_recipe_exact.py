"""``diff --recipe``, ``--suggest --save-recipe`` and diff's progress line, in-process on files written by torch
(issue 25: the mutation run of ``engine/cli/diff.py`` maps only in-process calls).

Promises (README "Command line") -> tests:
- ``diff --recipe`` reads A through the recipe's plan (its top-level key and renames included), so a checkpoint and
  the file converted from it compare identical -> ``test_diff_reads_a_through_the_recipe_and_its_top_level_key``,
  ``test_diff_reads_a_through_the_recipes_renames``
- ``--suggest`` proves a top-level key by reading the checkpoint at that key; ``--save-recipe`` saves A as the
  source and B as the template and says where -> ``test_suggest_finds_the_top_level_key_and_saves_source_and_template``
- ``diff`` draws a ``comparing`` progress line on a terminal (none with ``-q``) and erases it ->
  ``test_diff_draws_its_progress_line_on_a_terminal``
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine import ArrayStore, export, open_store
from engine.cli import main
from engine.cli.progress import ERASE
from tests.terminals import cli_on_a_terminal


@pytest.fixture
def checkpoint(tmp_path: Path) -> tuple[Path, Path]:
    """A training checkpoint holding a Linear's state dict under ``model``, and a file of the same tensors at the top."""
    torch.manual_seed(0)
    state = torch.nn.Linear(3, 2).state_dict()
    torch.save({"model": state, "step": 4}, tmp_path / "ck.pt")
    export(ArrayStore({name: tensor.numpy() for name, tensor in state.items()}).entries, tmp_path / "t.bpk")
    return tmp_path / "ck.pt", tmp_path / "t.bpk"


def test_diff_reads_a_through_the_recipe_and_its_top_level_key(checkpoint, tmp_path, capsys):
    ck, target = checkpoint
    assert main(["diff", str(ck), str(target), "--exit-code"]) == 1
    assert capsys.readouterr().out.splitlines() == ["only_in_a      model.weight", "only_in_a      model.bias",
                                                    "only_in_b      weight", "only_in_b      bias",
                                                    "2 only in a, 2 only in b"]
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"version": 1, "sources": [{"path": "ck.pt"}], "top_level_key": "model"}))
    assert main(["diff", str(ck), str(target), "--recipe", str(recipe), "--exit-code", "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == ["identical      weight", "identical      bias", "2 identical"]
    per_source = tmp_path / "per_source.json"  # the key given on the source, not the recipe, counts too
    per_source.write_text(json.dumps({"version": 1, "sources": [{"path": "ck.pt", "top_level_key": "model"}]}))
    assert main(["diff", str(ck), str(target), "--recipe", str(per_source), "--exit-code"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 identical"
    no_key = tmp_path / "no_key.json"  # a recipe that names no key: A is opened as it is
    no_key.write_text(json.dumps({"version": 1, "sources": [{"path": "t.bpk"}]}))
    assert main(["diff", str(target), str(target), "--recipe", str(no_key), "--exit-code"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 identical"


def test_diff_reads_a_through_the_recipes_renames(checkpoint, tmp_path, capsys):
    _, target = checkpoint
    renamed = tmp_path / "renamed.safetensors"
    with open_store(target) as store:
        export(ArrayStore({f"lin.{e.name}": store.read(e.name) for e in store.entries}).entries, renamed)
    recipe = tmp_path / "remap.json"
    recipe.write_text(json.dumps({"version": 1, "sources": [{"path": "t.bpk"}], "remaps": [["^", "lin."]]}))
    assert main(["diff", str(target), str(renamed), "--recipe", str(recipe), "--exit-code", "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == ["identical      lin.weight", "identical      lin.bias", "2 identical"]


def test_suggest_finds_the_top_level_key_and_saves_source_and_template(checkpoint, tmp_path, capsys):
    ck, target = checkpoint
    saved = tmp_path / "suggested.json"
    assert main(["diff", str(ck), str(target), "--suggest", "--save-recipe", str(saved), "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith('{\n  "tensors": [\n    {\n      "name": "model.weight",')  # indented by two
    assert json.loads(captured.out)["suggestions"] == [
        "suggest: read the checkpoint's top-level key 'model': fixes 2 of 2 missing or mismatched: top-level key 'model'"]
    assert captured.err == f"saved recipe {saved}\n"
    assert json.loads(saved.read_text()) == {"version": 1, "sources": [{"path": "ck.pt"}], "top_level_key": "model",
                                             "template": "t.bpk"}
    again = tmp_path / "again.json"  # A read through the saved recipe: nothing more to suggest, the recipe kept
    assert main(["diff", str(ck), str(target), "--recipe", str(saved), "--suggest", "--save-recipe", str(again),
                 "--exit-code", "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == ["identical      weight", "identical      bias", "2 identical"]
    assert json.loads(again.read_text()) == json.loads(saved.read_text())


def diff_on_a_terminal(monkeypatch, *args: str) -> str:
    return cli_on_a_terminal(monkeypatch, ["diff", *args])


def test_diff_draws_its_progress_line_on_a_terminal(checkpoint, monkeypatch, capsys):
    _, target = checkpoint
    drawn = diff_on_a_terminal(monkeypatch, str(target), str(target)).split(ERASE)
    assert drawn[0] == "" and drawn[-1] == ""
    assert drawn[-2].startswith("comparing  32 B of 32 B (100%)")
    assert capsys.readouterr().out.splitlines()[-1] == "2 identical"
    assert diff_on_a_terminal(monkeypatch, str(target), str(target), "-q") == ""  # -q: nothing, even on a terminal
