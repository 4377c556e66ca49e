"""``convert --recipe FILE`` with flags: the flags extend the recipe (README "Recipes"), and ``--save-recipe``
writes what they made, so the merged recipe is checked field by field. Without it
a flag given with ``--recipe`` would be lost or replace the recipe's own settings.

Promises -> tests:
- filters, remaps, casts, modules and metadata add to the recipe's; adapters are not doubled; a source named by
  the recipe keeps its own settings however it is spelled; ``--allow-partial``/``--clear-metadata`` only turn on;
  ``--template``, ``--top-level-key`` and ``--burn-version`` replace the recipe's
  -> ``test_flags_extend_a_saved_recipe``, ``test_the_recipes_choices_stay_without_flags``
- a plain conversion's metadata: the sources' carried, ``--metadata`` winning, ``--clear-metadata`` dropping the
  carried ones -> ``test_metadata_flags_win_over_carried_fields``
"""

from __future__ import annotations

import json
import os

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import save_file

from engine.cli import main


def saved(path) -> dict:
    return json.loads(path.read_text())


def test_flags_extend_a_saved_recipe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("in")
    torch.save({"ema": {"Block.fc.weight": torch.ones(2, 3), "step": torch.tensor([1])}}, "in/a.pt")
    save_file({"w": np.ones(2, np.float32)}, "t.safetensors")
    base = {"version": 1, "sources": [{"path": "in/a.pt", "filter": {"exclude": ["^nothing$"]}}],
            "filter": {"include": ["fc"], "exclude": ["x"]}, "remaps": [["^a", "b"]],
            "adapters": ["pytorch-to-burn", "skip-enum-variants"], "casts": [{"to": "F16"}],
            "module_overrides": {"fc": "Linear"}, "top_level_key": "model", "metadata": {"k": "recipe", "j": "1"},
            "template": "old.bpk", "burn_version": "0.20"}
    (tmp_path / "r.json").write_text(json.dumps(base))
    assert main(["convert", "--recipe", "r.json", "./in/../in/a.pt", "o.bpk", "--dry-run", "--save-recipe",
                 "out.json", "--include", "step", "--exclude", "y", "--remap", "^c", "d", "--adapter",
                 "pytorch-to-burn", "--contiguous-indices", "--skip-enum-variants", "--fuse-weight-norm",
                 "--module", "Block=EnumVariant", "--metadata", "k=flag", "--allow-partial", "--clear-metadata",
                 "--template", "t.safetensors", "--top-level-key", "ema", "--burn-version", "0.21"]) == 0
    doc = saved(tmp_path / "out.json")
    assert doc == {
        "version": 1,
        "sources": [{"path": "in/a.pt", "filter": {"exclude": ["^nothing$"]}}],  # the recipe's own spec
        "filter": {"include": ["fc", "step"], "exclude": ["x", "y"]},
        "remaps": [["^a", "b"], ["^c", "d"]],
        "adapters": ["pytorch-to-burn", "skip-enum-variants", "contiguous-indices", "fuse-weight-norm"],
        "casts": [{"to": "F16"}],
        "module_overrides": {"fc": "Linear", "Block": "EnumVariant"},
        "top_level_key": "ema",
        "metadata": {"k": "flag", "j": "1"},
        "allow_partial": True, "clear_metadata": True, "template": "t.safetensors", "burn_version": "0.21"}


def test_the_recipes_choices_stay_without_flags(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_file({"w": np.ones(2, np.float32)}, "a.safetensors")
    save_file({"w": np.ones(2, np.float32)}, "b.safetensors")
    base = {"version": 1, "sources": ["a.safetensors"], "top_level_key": None, "allow_partial": True,
            "clear_metadata": True, "burn_version": "0.20", "casts": ["f16"]}
    (tmp_path / "r.json").write_text(json.dumps(base))
    assert main(["convert", "--recipe", "r.json", "o.bpk", "--dry-run", "--save-recipe", "same.json"]) == 0
    assert saved(tmp_path / "same.json") == {"version": 1, "sources": [{"path": "a.safetensors"}], "casts": [{"to": "F16"}],
                                            "allow_partial": True, "clear_metadata": True, "burn_version": "0.20"}
    assert main(["convert", "--recipe", "r.json", "b.safetensors", "o.bpk", "--dry-run", "--save-recipe", "b.json",
                 "--cast", "bf16"]) == 0
    doc = saved(tmp_path / "b.json")  # named inputs replace the recipe's sources; a flag's cast follows the recipe's
    assert doc["sources"] == [{"path": "b.safetensors"}] and doc["casts"] == [{"to": "F16"}, {"to": "BF16"}]
    assert main(["convert", "a.safetensors", "o.bpk", "--dry-run", "--save-recipe", "plain.json",
                 "--top-level-key", "m"]) == 1  # a SafeTensors file has no top-level keys: refused as it is opened,
    assert not (tmp_path / "plain.json").exists()  # before the recipe is saved (its shards are known once it is open)


def test_metadata_flags_win_over_carried_fields(tmp_path, capsys):
    source = tmp_path / "a.safetensors"
    save_file({"w": np.ones(2, np.float32)}, str(source), metadata={"k": "source", "kept": "yes"})
    for flags, expected in (([], {"k": "source", "kept": "yes"}),
                            (["--metadata", "k=flag", "--metadata", "new=v=w"], {"k": "flag", "kept": "yes", "new": "v=w"}),
                            (["--clear-metadata", "--metadata", "k=flag"], {"k": "flag"}),
                            (["--clear-metadata"], {})):
        for surgery in ([], ["--allow-partial"]):  # the plain copy and the recipe path agree
            out = tmp_path / "o.safetensors"
            assert main(["convert", str(source), str(out), "--overwrite", "-q", *flags, *surgery]) == 0
            with safe_open(str(out), "np") as f:
                metadata = f.metadata() or {}
            assert {k: v for k, v in metadata.items() if k in ("k", "kept", "new")} == expected, (flags, surgery)
    capsys.readouterr()


def test_format_flag_decides_over_the_extension(tmp_path, capsys):
    source = tmp_path / "a.safetensors"
    save_file({"w": np.arange(3, dtype=np.float32)}, str(source))
    for surgery in ([], ["--allow-partial"]):
        out = tmp_path / "o.bpk"
        assert main(["convert", str(source), str(out), "--format", "safetensors", "--overwrite", "-q", *surgery]) == 0
        with safe_open(str(out), "np") as f:
            assert f.get_tensor("w").tolist() == [0.0, 1.0, 2.0]
    assert capsys.readouterr().err.count(f"wrote {tmp_path / 'o.bpk'}\n") == 2
