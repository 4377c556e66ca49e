"""``--save-recipe FILE`` follows the rules OUT follows, in ``convert`` and ``diff --suggest``.

FILE is never a file the command reads or writes (a source, a shard, the template, the recipe it extends, the
output), however spelled or linked; an existing FILE is replaced only with ``--overwrite``; it is written as an
export is (beside FILE, then renamed over it: a symlink at FILE is replaced, its target kept). What can be
checked is checked before any source is read, so a refused FILE leaves every file as it was; shards are known
once the sources are open, and are checked then, before anything is written. Refusals are exit 1, one line,
as OUT's own destination refusals are.

Promise -> test (README, "Recipes"):
- never a source, the template, the output or the recipe extended, however spelled -> test_never_over_a_file_the_conversion_reads_or_writes
- never a shard -> test_never_over_a_shard_of_a_source
- checked before any source is read -> test_the_recipe_file_is_checked_before_any_source_is_read
- an existing file only with --overwrite, replaced atomically, its permissions kept
  -> test_an_existing_recipe_is_replaced_only_with_overwrite_and_by_rename
- a symlink at FILE is replaced, its target kept -> test_a_symlink_at_the_recipe_is_replaced_not_followed
- diff --suggest --save-recipe: the same rules -> test_diff_never_saves_over_a_or_b, test_diff_needs_overwrite_and_checks_first
(a FIFO as FILE is refused without blocking: tests/hardening/test_hostile_local.py)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

from engine.cli import main


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A torch checkpoint (the source), a template and a recipe, in the current folder."""
    monkeypatch.chdir(tmp_path)
    torch.save({"w": torch.ones(2, 3)}, "model.pt")
    save_file({"w": np.ones((2, 3), np.float32)}, "t.safetensors")
    Path("r.json").write_text('{"version": 1}\n')
    return tmp_path


def contents(folder: Path) -> dict[str, bytes]:
    """Every file in ``folder`` (partial files included), by name."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def refusal(capsys: pytest.CaptureFixture, args: list[str]) -> str:
    """The one line a refused command prints (exit 1), with nothing on stdout."""
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    return err.rstrip("\n")


def over(name: str, clash: str) -> str:
    return f"store-studio: {name}: the recipe would be saved over {clash}, which this command reads or writes; " \
           "nothing was written"


@pytest.mark.parametrize("flags, says", [
    (["model.pt", "out.bpk", "--save-recipe", "model.pt"], over("model.pt", "model.pt")),
    (["model.pt", "out.bpk", "--save-recipe", "model.pt", "--overwrite"], over("model.pt", "model.pt")),
    (["model.pt", "out.bpk", "--save-recipe", "sub/../model.pt", "--overwrite"], over("model.pt", "model.pt")),
    (["model.pt", "out.bpk", "--save-recipe", "link.json", "--overwrite"], over("link.json", "model.pt")),
    (["model.pt", "out.bpk", "--template", "t.safetensors", "--save-recipe", "t.safetensors", "--overwrite"],
     over("t.safetensors", "t.safetensors")),
    (["model.pt", "out.bpk", "--save-recipe", "out.bpk"], over("out.bpk", "out.bpk")),
    (["model.pt", "out.bpk", "--save-recipe", "out-link.json"], over("out-link.json", "out.bpk")),
    (["--recipe", "r.json", "model.pt", "out.bpk", "--save-recipe", "r.json", "--overwrite"], over("r.json", "r.json")),
], ids=["source", "source-overwrite", "source-spelled-otherwise", "link-to-source", "template", "output",
        "link-to-output", "recipe-extended"])
def test_never_over_a_file_the_conversion_reads_or_writes(folder: Path, capsys, flags: list[str], says: str) -> None:
    (folder / "sub").mkdir()
    (folder / "link.json").symlink_to("model.pt")
    (folder / "out-link.json").symlink_to("out.bpk")  # dangling: the output does not exist yet
    before = contents(folder)
    assert refusal(capsys, ["convert", *flags]) == says
    assert contents(folder) == before  # the checkpoint is untouched and nothing was written, not even a partial


def test_never_over_a_shard_of_a_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    save_file({"a": np.ones(2, np.float32)}, "model-1.safetensors")
    save_file({"b": np.full(2, 2.0, np.float32)}, "model-2.safetensors")
    Path("model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}}))
    before = contents(tmp_path)
    assert refusal(capsys, ["convert", "model.safetensors.index.json", "out.bpk", "--save-recipe",
                            "./model-2.safetensors", "--overwrite"]) == over("model-2.safetensors", "model-2.safetensors")
    assert contents(tmp_path) == before


def test_the_recipe_file_is_checked_before_any_source_is_read(folder: Path, capsys) -> None:
    """The sources are missing: the refusal is the recipe's, so it came before any of them was opened."""
    before = contents(folder)
    assert refusal(capsys, ["convert", "gone.pt", "out.bpk", "--save-recipe", "t.safetensors"]) == \
        f"store-studio: t.safetensors already exists in {folder}; nothing was written"
    assert refusal(capsys, ["convert", "gone.pt", "out.bpk", "--template", "t.safetensors", "--save-recipe",
                            "t.safetensors", "--overwrite"]) == over("t.safetensors", "t.safetensors")
    assert contents(folder) == before


def test_an_existing_recipe_is_replaced_only_with_overwrite_and_by_rename(folder: Path, capsys) -> None:
    (folder / "r.json").chmod(0o600)
    os.link(folder / "r.json", folder / "old.json")  # the old file's inode, which a rename leaves as it was
    assert refusal(capsys, ["convert", "model.pt", "out.bpk", "--save-recipe", "r.json"]) == \
        f"store-studio: r.json already exists in {folder}; nothing was written"
    assert (folder / "r.json").read_text() == '{"version": 1}\n' and not (folder / "out.bpk").exists()
    assert main(["convert", "model.pt", "out.bpk", "--save-recipe", "r.json", "--overwrite", "-q"]) == 0
    assert json.loads((folder / "r.json").read_text()) == {"version": 1, "sources": [{"path": "model.pt"}]}
    assert (folder / "old.json").read_text() == '{"version": 1}\n'  # replaced by a new file, not written in place
    assert (folder / "r.json").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in folder.iterdir()) == ["model.pt", "old.json", "out.bpk", "r.json", "t.safetensors"]


def test_a_symlink_at_the_recipe_is_replaced_not_followed(folder: Path) -> None:
    (folder / "notes.txt").write_text("mine")
    (folder / "r.json").unlink()
    (folder / "r.json").symlink_to("notes.txt")
    assert main(["convert", "model.pt", "out.bpk", "--dry-run", "--save-recipe", "r.json", "--overwrite"]) == 0
    assert not (folder / "r.json").is_symlink()
    assert json.loads((folder / "r.json").read_text())["sources"] == [{"path": "model.pt"}]
    assert (folder / "notes.txt").read_text() == "mine"


@pytest.fixture
def pair(folder: Path) -> tuple[str, str]:
    """Two SafeTensors files whose names differ (A's ``fc.weight`` is B's ``head.weight``)."""
    save_file({"fc.weight": np.ones((2, 3), np.float32)}, "a.safetensors")
    save_file({"head.weight": np.ones((2, 3), np.float32)}, "b.safetensors")
    return "a.safetensors", "b.safetensors"


@pytest.mark.parametrize("save", ["a.safetensors", "b.safetensors", "./a.safetensors", "r.json"])
def test_diff_never_saves_over_a_or_b(folder: Path, pair: tuple[str, str], capsys, save: str) -> None:
    before = contents(folder)
    recipe = ["--recipe", "r.json"] if save == "r.json" else []
    name = Path(save).name
    clash = name if recipe else str(folder / name)  # the saved recipe's source and template are A and B made absolute
    assert refusal(capsys, ["diff", *pair, "--suggest", *recipe, "--save-recipe", save, "--overwrite"]) == \
        over(name, clash)
    assert contents(folder) == before


def test_diff_needs_overwrite_and_checks_first(folder: Path, pair: tuple[str, str], capsys) -> None:
    assert refusal(capsys, ["diff", "gone.safetensors", pair[1], "--suggest", "--save-recipe", "r.json"]) == \
        f"store-studio: r.json already exists in {folder}; nothing was written"
    assert (folder / "r.json").read_text() == '{"version": 1}\n'
    assert main(["diff", *pair, "--suggest", "--save-recipe", "r.json", "--overwrite", "-q"]) == 0
    saved = json.loads((folder / "r.json").read_text())
    assert saved["sources"] == [{"path": "a.safetensors"}] and saved["template"] == "b.safetensors"
