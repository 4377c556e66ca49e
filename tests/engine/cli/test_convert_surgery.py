"""``store-studio convert`` with surgery flags, recipes, dry runs and templates, on real files: the plan, the
refusals and the guesses word for word and code for code. Without it a user would get a model whose tensors were
renamed, dropped or transposed other than the plan said, or written despite a template's refusal.

Promises (README "Command line", "Model surgery") -> tests:
- ``--dry-run`` prints the plan (a row per tensor, its operations, drops, overrides, conflicts, rule counts)
  and writes nothing -> ``test_dry_run_prints_every_part_of_the_plan``, ``test_a_dry_run_lists_a_conflict_and_writes_nothing``
- a shape differing from the template's is exit 3 unless ``--no-validate``, which says what it writes anyway;
  a missing tensor is exit 3 unless ``--allow-partial`` -> ``test_template_refusals_say_how_many_and_which_flag``
- ``--strict`` refuses while a decision rests on a name alone, listing each -> ``test_strict_lists_each_guess_once``
- the guesses of a written conversion follow its ``wrote`` line -> ``test_a_written_conversion_lists_its_guesses``
- filters that leave nothing are exit 1 naming the filter -> ``test_nothing_to_write_is_exit_1``
- ``--top-level-key`` converts only that branch of a PyTorch checkpoint, copied as it is or through a recipe
  -> ``test_the_top_level_key_converts_only_that_branch``
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file, save_file

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


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """a: a Sequential's three tensors and a step counter; b: one of a's names with other values and one more;
    t: the template a model with fc.0/fc.1 and a ``want`` tensor would save."""
    save_file({"fc.0.weight": np.arange(6, dtype=np.float32).reshape(3, 2), "fc.0.bias": np.ones(3, np.float32),
               "fc.2.weight": np.arange(6, dtype=np.float32).reshape(2, 3), "step": np.array([3], np.int64)},
              str(tmp_path / "a.safetensors"))
    save_file({"fc.0.weight": np.zeros((3, 2), np.float32), "extra": np.ones(1, np.float32)},
              str(tmp_path / "b.safetensors"))
    save_file({"fc.0.weight": np.zeros((2, 3), np.float32), "fc.1.weight": np.zeros((3, 2), np.float32),
               "fc.0.bias": np.zeros(3, np.float32), "want": np.zeros(1, np.float32)}, str(tmp_path / "t.safetensors"))
    save_file({"proj.weight": np.arange(6, dtype=np.float32).reshape(3, 2), "tokens.weight": np.ones((5, 4), np.float32),
               "Block.w": np.ones(2, np.float32)}, str(tmp_path / "g.safetensors"))
    return tmp_path


def convert(*args: object) -> int:
    return main(["convert", *map(str, args)])


def test_dry_run_prints_every_part_of_the_plan(files, capsys):
    a, b = files / "a.safetensors", files / "b.safetensors"
    assert convert(a, b, files / "o.bpk", "--dry-run", "--exclude", "step", "--remap", r"^fc\.2", "fc.1",
                   "--cast", "f16") == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "fc.0.bias    F16  [3]     [Linear]   from fc.0.bias",
        "    cast F32 -> F16",
        "fc.0.weight  F16  [3, 2]  [Linear]   from fc.0.weight",
        "    cast F32 -> F16",
        "fc.1.weight  F16  [2, 3]  [Linear]   from fc.2.weight -> fc.1.weight",
        "    rename fc.2.weight -> fc.1.weight (remap)",
        "    cast F32 -> F16",
        "extra        F16  [1]     [Unknown]  from extra",
        "    cast F32 -> F16",
        "dropped step (filter: excluded by rule 1 ('step'))",
        f"override fc.0.weight: {b}:fc.0.weight replaces {a}:fc.0.weight",
        "rule exclude 'step': 1 tensor",
        r"rule remap '^fc\.2' -> 'fc.1': 1 tensor",
        "4 tensors out, 1 dropped, 0 conflicts, 0 guessed",
    ]
    assert captured.err == ""
    assert not (files / "o.bpk").exists()


def test_a_dropped_tensor_names_the_name_the_filter_saw(files, capsys):
    assert convert(files / "a.safetensors", files / "o.bpk", "--dry-run", "--remap", "^step$", "counter",
                   "--exclude", "^counter$") == 0
    out = capsys.readouterr().out.splitlines()
    assert "dropped step as counter (filter: excluded by rule 1 ('^counter$'))" in out
    assert out[-1] == "3 tensors out, 1 dropped, 0 conflicts, 0 guessed"


def test_a_dry_run_lists_a_conflict_and_writes_nothing(files, capsys):
    a = files / "a.safetensors"
    assert convert(a, files / "o.bpk", "--dry-run", "--remap", r"^fc\.2", "fc.0") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [f"conflict: two tensors would be named 'fc.0.weight': {a}:fc.0.weight and {a}:fc.2.weight",
                        r"rule remap '^fc\.2' -> 'fc.0': 1 tensor",
                        "4 tensors out, 0 dropped, 1 conflict, 0 guessed"]
    assert not (files / "o.bpk").exists()
    assert convert(a, files / "o.bpk", "--remap", r"^fc\.2", "fc.0") == 1
    assert not (files / "o.bpk").exists()


TEMPLATE_REPORT = [
    "applied 1, missing 1, unused 1, shape mismatches 2, dtype differences 0",
    "  shape mismatch fc.0.weight: source [3, 2], template [2, 3] (matches if transposed)",
    "  shape mismatch fc.1.weight: source [2, 3], template [3, 2] (matches if transposed)",
    "  missing want",
    "  unused step",
]


MISMATCH = ("store-studio: 2 tensors have another shape than the template's (listed above); nothing written "
            "(--no-validate writes anyway)\n")


NO_VALIDATE = "store-studio: --no-validate: writing 2 tensors whose shape differs from the template's\n"


MISSING = "store-studio: 1 tensor the template wants is missing (use --allow-partial to convert anyway)\n"


@pytest.mark.parametrize("flags, code, err", [
    ([], 3, MISMATCH),
    (["--dry-run"], 3, MISMATCH),
    (["--no-validate"], 3, NO_VALIDATE + MISSING),
    (["--no-validate", "--dry-run"], 3, MISSING),
    (["--no-validate", "--allow-partial"], 0, NO_VALIDATE),
    (["--no-validate", "--allow-partial", "--dry-run"], 0, ""),
])
def test_template_refusals_say_how_many_and_which_flag(files, capsys, flags, code, err):
    out = files / "o.bpk"
    assert convert(files / "a.safetensors", out, "--remap", r"^fc\.2", "fc.1", "--template", files / "t.safetensors",
                   *flags) == code
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-5:] == TEMPLATE_REPORT
    written = code == 0 and "--dry-run" not in flags
    assert captured.err == (err + f"wrote {out}\n" if written else err)
    assert out.exists() == written
    if written:
        with open_store(out) as store:
            assert [e.name for e in store.entries] == ["step", "fc.0.bias", "fc.0.weight", "fc.1.weight"]


def test_one_shape_mismatch_is_counted_in_the_singular(files, capsys):
    save_file({"w": np.ones((2, 3), np.float32)}, str(files / "one.safetensors"))
    save_file({"w": np.ones((3, 2), np.float32)}, str(files / "one_t.safetensors"))
    assert convert(files / "one.safetensors", files / "o.bpk", "--template", files / "one_t.safetensors") == 3
    assert capsys.readouterr().err == ("store-studio: 1 tensor has another shape than the template's (listed "
                                       "above); nothing written (--no-validate writes anyway)\n")
    assert convert(files / "one.safetensors", files / "o.bpk", "--template", files / "one_t.safetensors",
                   "--no-validate", "-q") == 0
    assert capsys.readouterr().err == ("store-studio: --no-validate: writing 1 tensor whose shape differs from the "
                                       f"template's\nwrote {files / 'o.bpk'}\n")
    assert (files / "o.bpk").exists()


def test_two_missing_tensors_are_counted_in_the_plural(files, capsys):
    save_file({"w": np.ones(2, np.float32)}, str(files / "w.safetensors"))
    save_file({"w": np.ones(2, np.float32), "x": np.ones(1, np.float32), "y": np.ones(1, np.float32)},
              str(files / "wxy.safetensors"))
    assert convert(files / "w.safetensors", files / "o.bpk", "--template", files / "wxy.safetensors") == 3
    assert capsys.readouterr().err == ("store-studio: 2 tensors the template wants are missing (use --allow-partial "
                                       "to convert anyway)\n")
    assert not (files / "o.bpk").exists()


GUESSES = [  # safetensors.numpy writes names sorted: the plan keeps the source's order
    "guessed Block.w: kept segment 'Block' (CamelCase like a Burn enum variant, but no template or --module says it "
    "is one); settle with --module Block=EnumVariant to drop it, or --module Block=Unknown to keep it",
    "guessed proj.weight: Linear: transposed (2-D weight without bias, and the name 'proj' says nothing); settle with "
    "--module proj=Linear or --module proj=Embedding",
    "guessed tokens.weight: Linear: transposed (2-D weight without bias, and the name 'tokens' says nothing); settle "
    "with --module tokens=Linear or --module tokens=Embedding",
]


def test_strict_lists_each_guess_once(files, capsys):
    g, out = files / "g.safetensors", files / "g.bpk"
    assert convert(g, out, "--adapter", "pytorch-to-burn", "--skip-enum-variants", "--strict") == 3
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [*GUESSES, "store-studio: --strict: 3 tensors rest on a guess (listed "
                                                   "above); nothing written"]
    assert captured.out == "" and not out.exists()
    assert convert(g, out, "--adapter", "pytorch-to-burn", "--skip-enum-variants", "--strict", "--dry-run") == 3
    captured = capsys.readouterr()  # the dry run's plan lists them; the refusal does not repeat them
    assert captured.out.splitlines()[-4:] == ["3 tensors out, 0 dropped, 0 conflicts, 3 guessed", *GUESSES]
    assert captured.err == "store-studio: --strict: 3 tensors rest on a guess (listed above); nothing written\n"
    assert convert(g, out, "--adapter", "pytorch-to-burn", "--strict", "--module", "proj=Linear") == 3
    assert capsys.readouterr().err.splitlines() == [
        GUESSES[2], "store-studio: --strict: 1 tensor rests on a guess (listed above); nothing written"]
    assert not out.exists()
    assert convert(g, out, "--adapter", "pytorch-to-burn", "--strict", "--module", "proj=Linear", "--module",
                   "tokens=Embedding", "-q") == 0
    with open_store(out) as store:  # the Embedding kept as it is, the Linear transposed
        assert store.entry("tokens.weight").shape == (5, 4) and store.entry("proj.weight").shape == (2, 3)


def test_a_written_conversion_lists_its_guesses(files, capsys):
    g, out = files / "g.safetensors", files / "g.safetensors.out.safetensors"
    assert convert(g, out, "--adapter", "pytorch-to-burn", "--skip-enum-variants") == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"wrote {out}", *GUESSES] and captured.out == ""
    written = load_file(str(out))
    np.testing.assert_array_equal(written["proj.weight"], np.arange(6, dtype=np.float32).reshape(3, 2).T)


def test_nothing_to_write_is_exit_1(files, capsys):
    assert convert(files / "a.safetensors", files / "o.bpk", "--include", "^nothing") == 1
    assert capsys.readouterr().err == ("store-studio: nothing to write: filter (include '^nothing') left none of 4 "
                                       "tensor(s) (the recipe's filter matches names after remaps and adapters, "
                                       "e.g. 'step')\n")
    assert not (files / "o.bpk").exists()


def test_save_recipe_says_where_and_the_recipe_replays(files, capsys):
    recipe, out = files / "r.json", files / "o.safetensors"
    assert convert(files / "a.safetensors", out, "--exclude", "step", "--save-recipe", recipe, "-q") == 0
    assert capsys.readouterr().err == f"saved recipe {recipe}\nwrote {out}\n"
    assert convert("--recipe", recipe, files / "o2.safetensors", "-q") == 0
    assert out.read_bytes() == (files / "o2.safetensors").read_bytes()
    assert sorted(load_file(str(out))) == ["fc.0.bias", "fc.0.weight", "fc.2.weight"]


def test_a_dry_run_of_a_file_without_tensors_prints_an_empty_plan(tmp_path, capsys):
    save_file({}, str(tmp_path / "e.safetensors"))
    assert convert(tmp_path / "e.safetensors", tmp_path / "o.bpk", "--dry-run", "--allow-partial") == 0
    assert capsys.readouterr().out == "0 tensors out, 0 dropped, 0 conflicts, 0 guessed\n"


@pytest.mark.parametrize("flags", [[], ["--remap", "^w$", "weight"]])
def test_the_top_level_key_converts_only_that_branch(tmp_path, capsys, flags):
    """A checkpoint holding a model and its moving average (torch.save); ``ema`` is the branch asked for."""
    torch.save({"model": {"w": torch.zeros(2)}, "ema": {"w": torch.tensor([1.5, -2.0])}}, tmp_path / "ck.pt")
    out = tmp_path / "o.safetensors"
    assert convert(tmp_path / "ck.pt", out, "--top-level-key", "ema", *flags) == 0
    name = "weight" if flags else "w"
    assert {k: v.tolist() for k, v in load_file(str(out)).items()} == {name: [1.5, -2.0]}
