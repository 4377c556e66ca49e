"""``convert``'s plan, refusals and guesses, word for word and code for code, in-process (issue 25: what each
flag does, exit codes, messages; a mutation run maps only in-process calls).

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

from engine import open_store
from engine.cli import main


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
