"""``store-studio recipe FILE --as cli|rust``: a saved recipe printed as a command or as burn-store code, the renames
a store cannot do spelled out from the sources. Without it a user could not replay a recipe, or load the same file
in Burn with burn-store.

Promises (README "Command line") -> tests:
- ``recipe --as rust`` spells out the renames a store cannot do from the sources, or says why it could not
  -> ``test_recipe_rust_spells_renames_from_the_sources_or_leaves_a_note``
"""

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import open_store
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


def test_recipe_rust_spells_renames_from_the_sources_or_leaves_a_note(tmp_path, capsys):
    source = tmp_path / "s.safetensors"
    save_file({"fc.0.weight": np.ones((3, 2), np.float32), "fc.2.weight": np.ones((2, 3), np.float32)}, str(source))
    from engine import export
    with open_store(source) as store:
        export(store.entries, tmp_path / "s.bpk")
    Recipe(sources=(SourceSpec(str(tmp_path / "s.bpk")),), adapters=("contiguous-indices",)).save(tmp_path / "r.json")
    assert main(["recipe", str(tmp_path / "r.json"), "--as", "rust"]) == 0
    captured = capsys.readouterr()
    assert captured.out == (
        "// burn-store 0.22.0-pre.2 (Burn 0.22)\n"
        "use burn_store::{BurnpackStore, ModuleSnapshot};\n"
        "// contiguous indices, which BurnpackStore cannot do, as this file's 1 rename\n"
        f'let mut store = BurnpackStore::from_file(r"{tmp_path / "s.bpk"}")\n'
        '    .with_remap_pattern(r"^fc\\.2\\.weight$", r"fc.1.weight");\n'
        "let result = model.load_from(&mut store)?;\n")
    assert captured.err == ""
    Recipe(sources=(SourceSpec(str(tmp_path / "s.bpk")),), adapters=("contiguous-indices",),
           template=str(tmp_path / "s.bpk")).save(tmp_path / "t.json")
    assert main(["recipe", str(tmp_path / "t.json"), "--as", "rust"]) == 0
    assert ".with_remap_pattern(" in capsys.readouterr().out
    Recipe(sources=(SourceSpec(str(tmp_path / "gone.bpk")),), adapters=("contiguous-indices",)).save(tmp_path / "g.json")
    assert main(["recipe", str(tmp_path / "g.json"), "--as", "rust"]) == 0
    captured = capsys.readouterr()
    assert captured.err == (f"note: gone.bpk: cannot open it in {tmp_path}: No such file or directory; the steps its "
                            "store cannot take are left as comments\n")
    assert "// left to do: renumber indices contiguously" in captured.out
    assert main(["recipe", str(tmp_path / "r.json")]) == 0  # --as cli is the default, OUT the default output
    assert capsys.readouterr().out == f"store-studio convert {tmp_path / 's.bpk'} OUT --contiguous-indices\n"


def test_recipe_rust_spells_enum_variant_renames_from_the_plan_and_its_template(tmp_path, capsys):
    """Skipping enum variants on a Burnpack source is spelled out from the plan: by ``--module`` alone, or by
    ``--skip-enum-variants`` when the template has the module without the segment."""
    from engine import ArrayStore, export
    source, template = tmp_path / "v.bpk", tmp_path / "vt.bpk"
    export(ArrayStore({"Block.fc.weight": np.ones((3, 2), np.float32), "fc.2.weight": np.ones((2, 3), np.float32)}).entries,
           source)
    export(ArrayStore({"fc.weight": np.ones((3, 2), np.float32), "fc.1.weight": np.ones((2, 3), np.float32)}).entries,
           template)
    head = "// burn-store 0.22.0-pre.2 (Burn 0.22)\nuse burn_store::{BurnpackStore, ModuleSnapshot};\n"
    Recipe(sources=(SourceSpec(str(source)),), module_overrides={"Block": "EnumVariant"}).save(tmp_path / "m.json")
    assert main(["recipe", str(tmp_path / "m.json"), "--as", "rust"]) == 0
    assert capsys.readouterr().out == head + (
        "// enum variants skipped, which BurnpackStore cannot do, as this file's 1 rename\n"
        f'let mut store = BurnpackStore::from_file(r"{source}")\n'
        '    .with_remap_pattern(r"^Block\\.fc\\.weight$", r"fc.weight");\n'
        "let result = model.load_from(&mut store)?;\n"
        "// Store Studio only: module 'Block' treated as EnumVariant\n")
    Recipe(sources=(SourceSpec(str(source)),), adapters=("skip-enum-variants",),
           template=str(template)).save(tmp_path / "t.json")
    assert main(["recipe", str(tmp_path / "t.json"), "--as", "rust"]) == 0
    assert capsys.readouterr().out == head + (
        "// enum variants skipped, which BurnpackStore cannot do, as this file's 1 rename\n"
        f'let mut store = BurnpackStore::from_file(r"{source}")\n'
        '    .with_remap_pattern(r"^Block\\.fc\\.weight$", r"fc.weight");\n'
        "let result = model.load_from(&mut store)?;\n")
