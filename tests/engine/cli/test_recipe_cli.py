"""``store-studio recipe FILE --as cli|rust``: a saved recipe printed as a command or as burn-store code."""

import pytest

from engine.cli import main
from engine.surgery import Filter, Recipe, RemapRule, SourceSpec
from tests.helpers.engine_cli_run import run

RECIPE = Recipe(sources=(SourceSpec("model.pt"),), top_level_key="state_dict", filter=Filter(include=(r"^encoder\.",)),
                remaps=(RemapRule(r"^encoder\.", "enc."),), adapters=("pytorch-to-burn", "contiguous-indices"),
                allow_partial=True)


def test_rust_prints_the_builder_chain(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    RECIPE.save("r.json")
    assert main(["recipe", "r.json", "--as", "rust"]) == 0
    assert capsys.readouterr().out == (
        '// burn-store 0.22.0-pre.2 (Burn 0.22)\n'
        'use burn_store::{ModuleSnapshot, PytorchStore};\n'
        'let mut store = PytorchStore::from_file(r"model.pt")\n'
        '    .with_top_level_key(r"state_dict")\n'
        '    .with_regex(r"^encoder\\.")\n'
        '    .with_key_remapping(r"^encoder\\.", r"enc.")\n'
        '    .allow_partial(true);\n'
        'let result = model.load_from(&mut store)?;\n')


def test_cli_prints_a_convert_line_that_replays_the_recipe(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    RECIPE.save("r.json")
    assert main(["recipe", "r.json", "--as", "cli", "--output", "model.bpk"]) == 0
    assert capsys.readouterr().out.strip() == (
        r"store-studio convert model.pt model.bpk --top-level-key state_dict --include '^encoder\.' "
        r"--remap '^encoder\.' enc. --adapter pytorch-to-burn --contiguous-indices --allow-partial")


@pytest.mark.child
def test_a_bad_recipe_file_is_exit_1_naming_the_field(tmp_path):
    (tmp_path / "r.json").write_text('{"version": 1, "adapters": "pytorch-to-burn"}')
    result = run("recipe", str(tmp_path / "r.json"))
    assert result.returncode == 1 and "r.json" in result.stderr and "'adapters'" in result.stderr
