"""``store-studio diff A B``: each tensor's status with its sizes and statistics, then a summary, as JSON or text;
values optional, tolerances and ``--exit-code`` as asked; A read through a recipe's plan (its top-level key and renames)
so a checkpoint and the file converted from it compare identical; a ``comparing`` progress line on a terminal. Without
it a user could not tell whether a conversion kept the weights.

Promises (README "Command line") -> tests:
- ``diff`` lists each tensor's status, the sizes of a mismatch and the statistics of a difference, then a summary;
  ``--no-values`` skips the statistics; ``--rtol``/``--atol`` decide allclose; ``--exit-code`` exits 1 when anything
  differs -> ``test_diff_lists_each_status_and_its_details``, ``test_diff_tolerances_and_exit_code``
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

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

from engine import ArrayStore, export, open_store
from engine.cli import main
from engine.cli.progress import ERASE
from tests.helpers.engine_cli_run import fixture_as_safetensors, run
from tests.terminals import cli_on_a_terminal


def write(path, **arrays):
    export(ArrayStore(arrays).entries, path)
    return str(path)


def test_json_lists_every_tensor_with_its_status_and_a_summary(tmp_path, capsys):
    a = write(tmp_path / "a.safetensors", same=np.ones(3, np.float32), moved=np.zeros(2, np.float32), gone=np.zeros(1, np.float32))
    b = write(tmp_path / "b.bpk", same=np.ones(3, np.float32), moved=np.array([0, 0.5], np.float32), new=np.zeros(1, np.int32))
    assert main(["diff", a, b, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    statuses = {t["name"]: t["status"] for t in doc["tensors"]}
    assert statuses == {"same": "identical", "moved": "different", "gone": "only_in_a", "new": "only_in_b"}
    moved = next(t for t in doc["tensors"] if t["name"] == "moved")
    assert moved["max_abs"] == 0.5 and moved["mean_abs"] == 0.25 and moved["allclose"] is False
    assert doc["summary"]["identical"] == 1 and doc["summary"]["total"] == 4


def test_no_values_skips_the_statistics(tmp_path, capsys):
    a = write(tmp_path / "a.safetensors", x=np.zeros(2, np.float32))
    b = write(tmp_path / "b.safetensors", x=np.ones(2, np.float32))
    assert main(["diff", a, b, "--json", "--no-values"]) == 0
    (tensor,) = json.loads(capsys.readouterr().out)["tensors"]
    assert tensor == {"name": "x", "status": "different", "dtype_a": "F32", "dtype_b": "F32", "shape_a": [2], "shape_b": [2]}


@pytest.mark.child
def test_a_source_and_its_converted_result_are_identical_through_the_recipe(tmp_path):
    src = fixture_as_safetensors("complex_nested/complex_nested.pt", tmp_path / "nested.safetensors")
    assert main(["convert", str(src), str(tmp_path / "out.bpk"), "--adapter", "pytorch-to-burn", "--cast", "f16",
                 "--save-recipe", str(tmp_path / "r.json")]) == 0
    result = run("diff", str(src), str(tmp_path / "out.bpk"), "--recipe", str(tmp_path / "r.json"), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert summary["identical"] == summary["total"] == 23
    plain = run("diff", str(src), str(tmp_path / "out.bpk"))
    assert "only_in_a" in plain.stdout and "fc1.weight" in plain.stdout


@pytest.mark.child
def test_a_missing_file_is_exit_1_naming_it(tmp_path):
    result = run("diff", str(tmp_path / "nope.bpk"), str(tmp_path / "nope2.bpk"))
    assert result.returncode == 1 and "nope.bpk" in result.stderr


@pytest.fixture
def pair(tmp_path: Path) -> tuple[str, str]:
    save_file({"same": np.ones(2, np.float32), "vals": np.array([1, 2, 3], np.float32),
               "shape": np.ones((2, 2), np.float32), "dt": np.ones(2, np.float32), "onlya": np.ones(1, np.float32)},
              str(tmp_path / "a.safetensors"))
    save_file({"same": np.ones(2, np.float32), "vals": np.array([1, 2, 3.5], np.float32),
               "shape": np.ones(4, np.float32), "dt": np.ones(2, np.float64), "onlyb": np.ones(1, np.float32)},
              str(tmp_path / "b.safetensors"))
    return str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors")


SUMMARY = "1 identical, 1 different, 1 only in a, 1 only in b, 1 shape mismatch, 1 dtype mismatch"


def test_diff_lists_each_status_and_its_details(pair, capsys):
    a, b = pair
    assert main(["diff", a, b, "-q", "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "dtype_mismatch dt  F32 [2] vs F64 [2]  max |a-b| 0, mean 0, allclose yes",
        "only_in_a      onlya",
        "identical      same",
        "shape_mismatch shape  F32 [2, 2] vs F32 [4]",
        "different      vals  max |a-b| 0.5, mean 0.166667, allclose no",
        "only_in_b      onlyb",
        SUMMARY,
    ]
    assert main(["diff", a, b, "--no-values", "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "dtype_mismatch dt  F32 [2] vs F64 [2]", "only_in_a      onlya", "identical      same",
        "shape_mismatch shape  F32 [2, 2] vs F32 [4]", "different      vals", "only_in_b      onlyb", SUMMARY]


def test_diff_tolerances_and_exit_code(pair, capsys):
    a, b = pair
    assert main(["diff", a, b, "--rtol", "0.2", "--exit-code"]) == 1  # 0.5 <= 0.2 * 3.5
    assert "different      vals  max |a-b| 0.5, mean 0.166667, allclose yes" in capsys.readouterr().out
    assert main(["diff", a, b, "--atol", "0.5", "--rtol", "0"]) == 0
    assert "allclose yes" in capsys.readouterr().out.splitlines()[3]  # the identical pair is not listed
    assert main(["diff", a, b, "--atol", "0.4", "--rtol", "0"]) == 0
    assert "allclose no" in capsys.readouterr().out.splitlines()[3]
    assert main(["diff", a, a, "--exit-code"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "5 identical"


def test_diff_of_two_empty_files_has_nothing_to_compare(tmp_path, capsys):
    save_file({}, str(tmp_path / "e.safetensors"))
    assert main(["diff", str(tmp_path / "e.safetensors"), str(tmp_path / "e.safetensors"), "--exit-code"]) == 0
    assert capsys.readouterr().out == "nothing to compare\n"


def test_diff_json_has_no_suggestions_key_unless_asked(pair, capsys):
    a, b = pair
    assert main(["diff", a, b, "--json", "--exit-code"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"tensors", "summary"}
    assert [t["status"] for t in document["tensors"]] == ["dtype_mismatch", "only_in_a", "identical",
                                                          "shape_mismatch", "different", "only_in_b"]


def test_diff_save_recipe_needs_suggest(pair, tmp_path, capsys):
    a, b = pair
    assert main(["diff", a, b, "--save-recipe", str(tmp_path / "r.json")]) == 2
    assert capsys.readouterr().err == ("store-studio diff: --save-recipe saves what --suggest finds: give --suggest "
                                       "too\n")
    assert not (tmp_path / "r.json").exists()


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
