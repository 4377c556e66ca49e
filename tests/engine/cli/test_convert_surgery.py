"""``store-studio convert`` with surgery flags, recipes, dry runs and templates, on real files."""

import numpy as np
import pytest

from engine import ArrayStore, export, open_store
from engine.cli import main
from engine.surgery import Recipe
from tests.helpers.engine_cli_run import FIXTURES, fixture_as_safetensors, run


@pytest.mark.child
def test_adapter_and_contiguous_indices_write_burn_names(tmp_path):
    src = fixture_as_safetensors("non_contiguous_indexes/non_contiguous_indexes.pt", tmp_path / "fc.safetensors")
    assert main(["convert", str(src), str(tmp_path / "fc.bpk"), "--adapter", "pytorch-to-burn", "--contiguous-indices"]) == 0
    with open_store(tmp_path / "fc.bpk") as out:
        assert sorted(out.names) == sorted(f"fc.{i}.{leaf}" for i in range(5) for leaf in ("weight", "bias"))
        assert "store_studio.recipe" in out.metadata


@pytest.mark.child
def test_chained_remaps_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys):
    src = fixture_as_safetensors("key_remap_chained/key_remap.pt", tmp_path / "chain.safetensors")
    code = main(["convert", str(src), str(tmp_path / "out.bpk"), "--dry-run", "--adapter", "pytorch-to-burn",
                 "--remap", r"(.+)\.block\.0\.(.+)", "$1.conv.$2", "--remap", r"(.+)\.block\.1\.(.+)", r"\1.bn.\2",
                 "--remap", r"layer\.([0-9])\.(.+)", "layer.blocks.$1.$2", "--exclude", "num_batches_tracked"])
    out = capsys.readouterr().out
    assert code == 0 and not (tmp_path / "out.bpk").exists()
    row = next(line for line in out.splitlines() if line.startswith("layer.blocks.0.bn.gamma "))
    assert row.split() == ["layer.blocks.0.bn.gamma", "F32", "[6]", "[BatchNorm]", "from", "layer.0.block.1.weight", "->",
                           "layer.blocks.0.bn.gamma"]
    assert "    rename layer.blocks.0.bn.weight -> layer.blocks.0.bn.gamma (pytorch-to-burn, BatchNorm)" in out
    assert "dropped bn.num_batches_tracked (filter: excluded by rule 1 ('num_batches_tracked'))" in out


@pytest.mark.child
def test_a_template_with_missing_tensors_exits_3_unless_partial(tmp_path):
    src = fixture_as_safetensors("linear/linear.pt", tmp_path / "lin.safetensors")
    export(ArrayStore({"fc1.weight": np.zeros((2, 3), np.float32), "fc1.bias": np.zeros(3, np.float32),
                       "fc3.weight": np.zeros((3, 4), np.float32)}).entries, tmp_path / "template.bpk")
    args = ["convert", str(src), str(tmp_path / "out.bpk"), "--adapter", "pytorch-to-burn", "--template",
            str(tmp_path / "template.bpk")]
    missing = run(*args)
    assert missing.returncode == 3 and not (tmp_path / "out.bpk").exists()
    assert "missing fc3.weight (closest: fc2.weight)" in missing.stdout
    assert "applied 2, missing 1, unused 1" in missing.stdout
    assert run(*args, "--allow-partial").returncode == 0 and (tmp_path / "out.bpk").exists()


@pytest.mark.child
def test_saved_recipe_replays_to_the_same_tensors(tmp_path):
    src = fixture_as_safetensors("batch_norm/batch_norm2d.pt", tmp_path / "bn.safetensors")
    assert main(["convert", str(src), str(tmp_path / "a.bpk"), "--adapter", "pytorch-to-burn", "--cast", "f16",
                 "--include", "norm1", "--save-recipe", str(tmp_path / "r.json")]) == 0
    recipe = Recipe.load(tmp_path / "r.json")
    assert recipe.sources[0].path == str(src) and recipe.adapters == ("pytorch-to-burn",)
    assert main(["convert", "--recipe", str(tmp_path / "r.json"), str(tmp_path / "b.bpk")]) == 0
    with open_store(tmp_path / "a.bpk") as a, open_store(tmp_path / "b.bpk") as b:
        assert a.names == b.names and str(a.entry("norm1.gamma").dtype) == "F16"
        assert a.metadata["store_studio.recipe"] == b.metadata["store_studio.recipe"] == recipe.digest()
        for name in a.names:
            np.testing.assert_array_equal(a.read(name), b.read(name))
        with open_store(src) as source:  # by hand: BatchNorm's weight renamed gamma, cast to f16 by numpy
            assert a.read("norm1.gamma").tobytes() == source.read("norm1.weight").astype(np.float16).tobytes()
            assert a.read("norm1.running_var").tobytes() == source.read("norm1.running_var").astype(np.float16).tobytes()


def test_several_inputs_merge_later_ones_winning(tmp_path):
    export(ArrayStore({"w": np.zeros(2, np.float32), "a": np.zeros(1, np.float32)}).entries, tmp_path / "one.safetensors")
    export(ArrayStore({"w": np.ones(2, np.float32)}).entries, tmp_path / "two.safetensors")
    assert main(["convert", str(tmp_path / "one.safetensors"), str(tmp_path / "two.safetensors"), str(tmp_path / "m.bpk")]) == 0
    with open_store(tmp_path / "m.bpk") as out:
        np.testing.assert_array_equal(out.read("w"), np.ones(2))
        assert sorted(out.names) == ["a", "w"]


@pytest.mark.child
def test_bad_remap_flag_is_a_usage_error_exit_2_with_one_line_naming_the_rule(tmp_path):
    src = fixture_as_safetensors("linear/linear.pt", tmp_path / "lin.safetensors")
    result = run("convert", str(src), str(tmp_path / "o.bpk"), "--remap", "fc(", "x")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "remap rule 1 ('fc(' -> 'x')" in result.stderr


@pytest.mark.child
def test_conflicting_names_are_exit_1_and_write_nothing(tmp_path):
    src = fixture_as_safetensors("linear/linear.pt", tmp_path / "lin.safetensors")
    result = run("convert", str(src), str(tmp_path / "o.bpk"), "--remap", r"fc\d", "fc")
    assert result.returncode == 1 and "two tensors would be named 'fc.weight'" in result.stderr
    assert not (tmp_path / "o.bpk").exists()


@pytest.mark.child
def test_usage_errors_stay_exit_2(tmp_path):
    assert run("convert", "only-one-arg").returncode == 2
    assert run("convert", "a", "b", "--cast", "f8").returncode == 2


@pytest.mark.child
def test_top_level_key_reads_one_branch_of_a_pytorch_checkpoint(tmp_path):
    assert main(["convert", str(FIXTURES / "top_level_key" / "top_level_key.pt"), str(tmp_path / "o.bpk"),
                 "--top-level-key", "my_state_dict"]) == 0
    with open_store(tmp_path / "o.bpk") as out:
        assert sorted(out.names) == ["conv1.bias", "conv1.weight"]
