"""``recipe --as cli``: the ``convert`` line that does what a recipe does, every flag spelled as typed (issue 25).

Promises (README "Recipes": a saved recipe prints as the command that replays it) -> tests:
- each recipe field becomes its flag, in the order convert applies them, quoted for a shell
  -> ``test_every_field_becomes_its_flag``
- what no flag can say (predicates, casts by module, more than one cast, per-source filters or keys) is pointed at
  ``--recipe FILE`` -> ``test_what_no_flag_says_needs_the_recipe_file``
- the printed line, run, writes what the recipe writes -> ``test_the_printed_line_replays_the_recipe``
"""

from __future__ import annotations

import shlex

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from engine.burn_versions import BurnVersion
from engine.cli import main
from engine.surgery import CastRule, Filter, Recipe, RemapRule, SourceSpec
from engine.surgery.filters import Predicate
from engine.surgery.printers import as_cli

NOTE = "  # predicates, casts by module or per-source filters need --recipe FILE"


def test_every_field_becomes_its_flag():
    recipe = Recipe(sources=(SourceSpec("a b.pt"), SourceSpec("c.bpk")),
                    filter=Filter(include=("^enc",), full_paths=("head.w",), exclude=("bias$",)),
                    remaps=(RemapRule(r"^enc\.(.*)", "$1"),),
                    adapters=("pytorch-to-burn", "contiguous-indices", "skip-enum-variants", "fuse-weight-norm"),
                    casts=(CastRule("BF16"),), module_overrides={"fc": "Linear", "Block": "EnumVariant"},
                    top_level_key="model", metadata={"who": "me", "k": "a=b"}, clear_metadata=True,
                    template="t.bpk", allow_partial=True, burn_version=BurnVersion.V0_21)
    assert as_cli(recipe, "out.bpk") == (
        "store-studio convert 'a b.pt' c.bpk out.bpk --top-level-key model --include '^enc' --include '^head\\.w$' "
        "--exclude 'bias$' --remap '^enc\\.(.*)' '$1' --adapter pytorch-to-burn --contiguous-indices "
        "--skip-enum-variants --fuse-weight-norm --cast bf16 --module fc=Linear --module Block=EnumVariant "
        "--metadata who=me --metadata k=a=b --clear-metadata --template t.bpk --allow-partial --burn-version 0.21")
    assert shlex.split(as_cli(recipe, "out.bpk"))[2:5] == ["a b.pt", "c.bpk", "out.bpk"]


def test_an_empty_recipe_is_a_plain_conversion_to_out():
    assert as_cli(Recipe()) == "store-studio convert OUT"
    assert as_cli(Recipe(sources=(SourceSpec("a.pt"),), casts=(CastRule("F32"),))) == \
        "store-studio convert a.pt OUT --cast f32"
    assert as_cli(Recipe(sources=(SourceSpec("a.pt", "ema"),))) == "store-studio convert a.pt OUT --top-level-key ema"
    assert as_cli(Recipe(sources=(SourceSpec("a.pt"),), burn_version=BurnVersion.V0_22)) == "store-studio convert a.pt OUT"


@pytest.mark.parametrize("recipe", [
    Recipe(sources=(SourceSpec("a.pt"),), filter=Filter(where=(Predicate("ndim", "==", 2),))),
    Recipe(sources=(SourceSpec("a.pt"),), casts=(CastRule("F16", ("Linear",)),)),
    Recipe(sources=(SourceSpec("a.pt"),), casts=(CastRule("F16"), CastRule("BF16"))),
    Recipe(sources=(SourceSpec("a.pt", filter=Filter(exclude=("x",))),)),
    Recipe(sources=(SourceSpec("a.pt", "ema"), SourceSpec("b.pt", "model"))),
    Recipe(sources=(SourceSpec("a.pt", "ema"), SourceSpec("b.pt")), top_level_key=None),
])
def test_what_no_flag_says_needs_the_recipe_file(recipe):
    assert as_cli(recipe).endswith(NOTE)


@pytest.mark.parametrize("recipe", [
    Recipe(sources=(SourceSpec("a.pt", "ema"), SourceSpec("b.pt", "ema"))),
    Recipe(sources=(SourceSpec("a.pt"), SourceSpec("b.pt")), top_level_key="ema"),
    Recipe(sources=(SourceSpec("a.pt", "ema"), SourceSpec("b.pt")), top_level_key="ema"),
    Recipe(sources=(SourceSpec("a.pt"),), casts=(CastRule("F16"),), filter=Filter(exclude=("x",))),
])
def test_what_flags_say_needs_no_recipe_file(recipe):
    assert not as_cli(recipe).endswith(NOTE)


def test_the_printed_line_replays_the_recipe(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_file({"enc.fc.0.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "enc.fc.2.weight": np.ones((3, 2), np.float32),
               "enc.fc.0.bias": np.ones(2, np.float32), "step": np.array([1], np.int64)}, "a.safetensors")
    recipe = Recipe(sources=(SourceSpec("a.safetensors"),), filter=Filter(include=("^fc",), exclude=("bias$",)),  # names after the remap
                    remaps=(RemapRule(r"^enc\.", ""),), adapters=("contiguous-indices",), casts=(CastRule("F16"),),
                    metadata={"who": "me"})
    recipe.save("r.json")
    assert main(["convert", "--recipe", "r.json", "by_recipe.safetensors", "-q"]) == 0
    line = as_cli(Recipe.load("r.json"), "by_line.safetensors")
    assert main(shlex.split(line)[1:] + ["-q"]) == 0
    assert (tmp_path / "by_line.safetensors").read_bytes() == (tmp_path / "by_recipe.safetensors").read_bytes()
    written = load_file("by_line.safetensors")
    assert sorted(written) == ["fc.0.weight", "fc.1.weight"] and written["fc.0.weight"].dtype == np.float16
    capsys.readouterr()
