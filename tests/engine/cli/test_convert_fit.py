"""``convert SRC OUT --template T --fit``: the best chain of recipe changes made first, printed, saved, written.

Without it a user would have to find by hand the renames and adapters that make a checkpoint load in the model.

Promises -> tests:
- the chain is applied as the recipe, printed as the command that replays it and one line per change, saved by
  ``--save-recipe``, and the written file holds every tensor the template wants with the checkpoint's values ->
  ``test_a_lightning_checkpoint_is_fitted_printed_saved_and_written_with_its_values``
- a rule of ``--recipe`` that the template contradicts is taken out, not fought ->
  ``test_fit_takes_out_the_recipe_rules_the_template_contradicts``
- what still does not load is listed with its closest names, and the conversion stops (exit 3) as without
  ``--fit`` -> ``test_what_still_does_not_load_is_listed_with_its_closest_names_and_stops``
- ``--fit`` needs a template (exit 2); with nothing to change it says so ->
  ``test_fit_needs_a_template``, ``test_fit_with_nothing_to_change_says_so``
- names from the file reach the terminal escaped -> ``test_a_hostile_prefix_is_printed_escaped``
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from engine import ArrayStore, export, open_store
from engine.cli import main
from tests.helpers.wrapped_checkpoints import SAMPLE_BPK, SAMPLE_PT, lightning_checkpoint

ADAPTER = "add the pytorch-to-burn adapter (Linear weights, norm parameters)"
COUNTERS = ["  unused norm1.num_batches_tracked", "  unused norm2.num_batches_tracked"]


def _out(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_a_lightning_checkpoint_is_fitted_printed_saved_and_written_with_its_values(tmp_path: Path, capsys):
    source = lightning_checkpoint(tmp_path / "last.ckpt")
    out, saved = tmp_path / "model.bpk", tmp_path / "fit.json"
    assert main(["convert", str(source), str(out), "--template", str(SAMPLE_BPK), "--fit", "--save-recipe", str(saved),
                 "-q"]) == 0
    assert _out(capsys) == [
        f"fit: store-studio convert {source} {out} --top-level-key state_dict --remap '^model\\.' '' "
        f"--adapter pytorch-to-burn --template {SAMPLE_BPK}",
        "fit: read the checkpoint's top-level key 'state_dict': loads nothing alone; the changes after it need it: "
        "top-level key 'state_dict'",
        "fit: strip the prefix model.: fixes 10 of 16 missing or mismatched: remap '^model\\.' -> ''",
        f"fit: {ADAPTER}: fixes 6 of 6 missing or mismatched: adapter pytorch-to-burn",
        "applied 16, missing 0, unused 2, shape mismatches 0, dtype differences 0", *COUNTERS]
    doc = json.loads(saved.read_text())
    assert (doc["top_level_key"], doc["remaps"], doc["adapters"]) == ("state_dict", [["^model\\.", ""]],
                                                                      ["pytorch-to-burn"])
    with open_store(out) as written, open_store(SAMPLE_BPK) as burn:
        assert set(written.names) == set(burn.names) | {"norm1.num_batches_tracked", "norm2.num_batches_tracked"}
        for name in burn.names:  # the checkpoint's weights, in the Burn model's names and layout
            np.testing.assert_array_equal(written.read(name), burn.read(name), err_msg=name)
    again = tmp_path / "again.bpk"  # the saved recipe replays the fit without --fit
    assert main(["convert", "--recipe", str(saved), str(again), "-q"]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_fit_takes_out_the_recipe_rules_the_template_contradicts(tmp_path: Path, capsys):
    recipe = SAMPLE_PT.with_name("pytorch_to_burn.recipe.json")  # norm -> bn, fc -> head.linear, the adapter
    saved = tmp_path / "fit.json"
    assert main(["convert", "--recipe", str(recipe), str(tmp_path / "out.bpk"), "--template", str(SAMPLE_BPK),
                 "--fit", "--save-recipe", str(saved), "-q"]) == 0
    lines = _out(capsys)
    assert lines[1:3] == [
        "fit: remove the remap rule '^norm(\\d)' -> 'bn$1': fixes 8 of 12 missing or mismatched: "
        "remove remap '^norm(\\d)' -> 'bn$1'",
        "fit: remove the remap rule '^fc(\\d)' -> 'head.linear$1': fixes 4 of 4 missing or mismatched: "
        "remove remap '^fc(\\d)' -> 'head.linear$1'"]
    assert "--remap" not in lines[0] and "--exclude 'num_batches_tracked$'" in lines[0]
    doc = json.loads(saved.read_text())
    assert "remaps" not in doc and doc["adapters"] == ["pytorch-to-burn"]
    assert doc["filter"] == {"exclude": ["num_batches_tracked$"]}


def test_what_still_does_not_load_is_listed_with_its_closest_names_and_stops(tmp_path: Path, capsys):
    with open_store(SAMPLE_BPK) as burn:
        wanted = {name: np.asarray(burn.read(name)) for name in burn.names}
    wanted["fc3.weight"] = np.zeros((10, 10), np.float32)  # no tensor of the checkpoint is one
    target = export(ArrayStore(wanted).entries, tmp_path / "wider.bpk")
    state = {f"module.{k}": v for k, v in torch.load(SAMPLE_PT).items()} | {"module.fc_3.weight": torch.zeros(4, 4)}
    torch.save(state, tmp_path / "dp.pt")  # fc_3.weight is named like fc3.weight but has another shape
    out = tmp_path / "out.bpk"
    assert main(["convert", str(tmp_path / "dp.pt"), str(out), "--template", str(target), "--fit", "-q"]) == 3
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[1:3] == ["fit: strip the prefix module.: fixes 10 of 17 missing or mismatched: remap '^module\\.' -> ''",
                          f"fit: {ADAPTER}: fixes 6 of 7 missing or mismatched: adapter pytorch-to-burn"]
    assert lines[3] == "applied 16, missing 1, unused 3, shape mismatches 0, dtype differences 0"
    assert "  missing fc3.weight (closest: fc_3.weight)" in lines
    assert "1 tensor the template wants is missing" in captured.err and not out.exists()


def test_fit_needs_a_template(tmp_path: Path, capsys):
    assert main(["convert", str(SAMPLE_PT), str(tmp_path / "out.bpk"), "--fit"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "store-studio convert: --fit fits the recipe to a target model: give --template FILE (or a --recipe that "
        "names one)")
    assert not (tmp_path / "out.bpk").exists()


def test_fit_with_nothing_to_change_says_so(tmp_path: Path, capsys):
    assert main(["convert", str(SAMPLE_PT), str(tmp_path / "out.bpk"), "--template", str(SAMPLE_BPK),
                 "--adapter", "pytorch-to-burn", "--fit", "-q"]) == 0
    assert _out(capsys)[:2] == ["fit: nothing to change: every tensor the template wants loads",
                                "applied 16, missing 0, unused 2, shape mismatches 0, dtype differences 0"]


def test_a_hostile_prefix_is_printed_escaped(tmp_path: Path, capsys):
    torch.save({f"m\x1b[2J.{k}": v for k, v in torch.load(SAMPLE_PT).items()}, tmp_path / "hostile.pt")
    assert main(["convert", str(tmp_path / "hostile.pt"), str(tmp_path / "out.bpk"), "--template", str(SAMPLE_BPK),
                 "--fit", "-q"]) == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out + captured.err
    lines = captured.out.splitlines()
    assert lines[0].endswith(" --remap $'^m\\033\\[2J\\.' '' --adapter pytorch-to-burn --template " + str(SAMPLE_BPK))
    assert lines[1] == "fit: strip the prefix m\\033[2J.: fixes 10 of 16 missing or mismatched: remap '^m\\033\\[2J\\.' -> ''"


def test_a_key_whose_prefix_is_renamed_is_found_with_the_rename_the_renumbering_and_the_adapter(tmp_path: Path,
                                                                                               capsys):
    """``state_dict.backbone.0/2/4`` against a Burn model's ``encoder.0/1/2``: no strip rule names the key, and the
    key alone loads nothing, yet it is the first of the four changes that make every tensor load."""
    torch.manual_seed(0)
    backbone = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 6), torch.nn.ReLU(),
                                   torch.nn.LayerNorm(6))
    source = tmp_path / "model.pt"
    torch.save({"state_dict": {f"backbone.{k}": v for k, v in backbone.state_dict().items()}, "epoch": 3}, source)
    template = tmp_path / "burn_model.bpk"
    shapes = {"encoder.0.weight": (4, 8), "encoder.0.bias": (8,), "encoder.1.weight": (8, 6), "encoder.1.bias": (6,),
              "encoder.2.gamma": (6,), "encoder.2.beta": (6,)}
    export(ArrayStore({name: np.zeros(shape, np.float32) for name, shape in shapes.items()}).entries, template)
    out = tmp_path / "model.bpk"
    assert main(["convert", str(source), str(out), "--template", str(template), "--fit", "-q"]) == 0
    assert [line.split(":", 2)[1].strip() for line in _out(capsys) if line.startswith("fit: ")][1:] == [
        "read the checkpoint's top-level key 'state_dict'", "rename the prefix backbone. to encoder.",
        "renumber indices contiguously (fc.0, fc.2, fc.4 -> fc.0, fc.1, fc.2)", ADAPTER]
    with open_store(out) as written:
        assert np.array_equal(written.read("encoder.1.weight"), backbone[2].weight.detach().numpy().T)
