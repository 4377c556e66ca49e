"""``store-studio migrate DIR``: a Learner's checkpoint folder to Burnpack in one command. Each record is converted
beside itself, what exists or is planned twice is skipped, a dry run writes nothing, failures are counted, a progress
line is drawn per record on a terminal. Without it a user would convert a training run's records one by one, or lose
one silently.

Promises (README "Command line", "Burn records") -> tests:
- each record is converted beside itself under its name without the record's extension (``.mpk.gz`` whole),
  one whose destination exists or is already planned is skipped, a dry run writes nothing and says "would"
  -> ``test_migrate_names_each_destination_and_skips_one_planned_twice``, ``test_a_dry_run_says_would_and_writes_nothing``
- ``--burn-version`` picks the Burn release the Burnpack loads in -> ``test_migrate_writes_for_the_burn_version_asked``
- the summary counts every record that failed, not just whether one did -> ``test_two_broken_records_are_two_failed``
- each record's writing shows a ``writing NAME`` line on a terminal, none with ``-q``
  -> ``test_migrate_draws_a_writing_line_per_record_on_a_terminal``
- ``migrate`` refuses what is no folder -> ``test_migrate_refuses_a_file_as_its_folder``
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from engine import open_store
from engine.cli import main
from engine.cli.progress import ERASE
from tests.helpers.formats_burn_record_writers import Data, Settings, Unit, Variant, id_text, model_item, write_record
from tests.terminals import cli_on_a_terminal


def checkpoint_folder(root: Path) -> dict[str, Path]:
    folder = root / "checkpoint"
    folder.mkdir(parents=True)
    item, _ = model_item()
    optim = {id_text(42): Variant("Rank1", 0, {"momentum": {"time": 3, "moment_1": Data(np.ones(4, "<f4"))}})}
    files = {
        "model": write_record(folder, "model-2", item, Settings(recorder="NamedMpk")),
        "optim": write_record(folder, "optim-2", optim, Settings(recorder="NamedMpkGz")),
        "scheduler": write_record(folder, "scheduler-2", {"lr": 0.01, "step": 2, "warmup": Unit},
                                  Settings(recorder="NamedMpk")),
        "bin": write_record(root, "deploy", item, Settings(recorder="BinGz", half=True)),
    }
    (root / "notes.bin").write_bytes(b"not a record")
    (root / "archive.gz").write_bytes(b"\x1f\x8b" + bytes(30))
    return files


def test_migrate_converts_every_record_beside_itself_and_keeps_the_originals(tmp_path, capsys):
    files = checkpoint_folder(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert main(["migrate", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "converted checkpoint/model-2.mpk -> model-2.bpk (11 tensors, 260 B)",
        "converted checkpoint/optim-2.mpk.gz -> optim-2.bpk (1 tensor, 16 B)",
        "converted checkpoint/scheduler-2.mpk -> scheduler-2.bpk (0 tensors, 0 B)",
        "converted deploy.bin.gz -> deploy.bpk (11 tensors, 130 B, names positional)",
        f"migrated 4 of 4 records in {tmp_path} (406 B): 0 skipped, 0 failed",
    ]
    assert all(p.read_bytes() == raw for p, raw in before.items())
    _, expected = model_item()
    with open_store(files["model"].with_name("model-2.bpk")) as model:
        assert model.names == list(expected)
        assert [e.param_id for e in model.entries] == [pid for _, pid in expected.values()]
        np.testing.assert_array_equal(model.read("embed.weight"), expected["embed.weight"][0])
        assert model.metadata["burn.recorder"] == "NamedMpkFileRecorder"
    with open_store(files["optim"].with_name("optim-2.bpk")) as optim:
        assert optim.scalars == {"42.__rank": {"UInt": 1}, "42.momentum.time": {"UInt": 3}}  # current Burn's layout
    with open_store(files["scheduler"].with_name("scheduler-2.bpk")) as scheduler:
        assert scheduler.scalars == {"lr": {"Float": 0.01}, "step": {"Int": 2}}


def test_migrate_again_skips_what_is_converted_and_dry_run_writes_nothing(tmp_path, capsys):
    checkpoint_folder(tmp_path)
    assert main(["migrate", str(tmp_path), "--to", "safetensors", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would convert checkpoint/model-2.mpk -> model-2.safetensors" in out
    assert not list(tmp_path.rglob("*.safetensors"))
    (tmp_path / "checkpoint" / "model-2.safetensors").write_bytes(b"kept")
    assert main(["migrate", str(tmp_path), "--to", "safetensors"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "skipped   checkpoint/model-2.mpk: model-2.safetensors already exists" in out
    assert out[-1].startswith("migrated 3 of 4 records") and out[-1].endswith("1 skipped, 0 failed")
    assert (tmp_path / "checkpoint" / "model-2.safetensors").read_bytes() == b"kept"


def test_migrate_reports_a_broken_record_and_converts_the_rest(tmp_path, capsys):
    files = checkpoint_folder(tmp_path)
    files["model"].write_bytes(files["model"].read_bytes()[:200])
    assert main(["migrate", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("failed    checkpoint/model-2.mpk: model-2.mpk: file is truncated") for line in out)
    assert out[-1].endswith("0 skipped, 1 failed")
    assert not (tmp_path / "checkpoint" / "model-2.bpk").exists()
    assert (tmp_path / "checkpoint" / "optim-2.bpk").exists()


def test_migrate_refuses_a_file_as_its_folder(checkpoint, capsys):
    assert main(["migrate", checkpoint]) == 1
    assert capsys.readouterr().err == f"store-studio: {checkpoint}: not a folder\n"


def two_models(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    item, _ = model_item()
    return (write_record(folder, "a", item, Settings(recorder="NamedMpk")),
            write_record(folder, "b", item, Settings(recorder="NamedMpk")))


def test_two_broken_records_are_two_failed(tmp_path, capsys):
    for record in two_models(tmp_path):
        record.write_bytes(record.read_bytes()[:200])
    assert main(["migrate", str(tmp_path)]) == 1
    assert capsys.readouterr().out.splitlines()[-1].endswith(": 0 skipped, 2 failed")


def migrate_on_a_terminal(monkeypatch, *args: str) -> str:
    return cli_on_a_terminal(monkeypatch, ["migrate", *args])


def test_migrate_draws_a_writing_line_per_record_on_a_terminal(tmp_path, monkeypatch):
    two_models(tmp_path / "loud")
    drawn = [text for text in migrate_on_a_terminal(monkeypatch, str(tmp_path / "loud")).split(ERASE) if text]
    assert [text.split("  ")[0] for text in drawn if "(100%)" in text] == ["writing a.bpk", "writing b.bpk"]
    two_models(tmp_path / "quiet")
    assert migrate_on_a_terminal(monkeypatch, str(tmp_path / "quiet"), "-q") == ""


def test_migrate_names_each_destination_and_skips_one_planned_twice(tmp_path, capsys):
    item, _ = model_item()
    write_record(tmp_path, "model", item, Settings(recorder="NamedMpk"))
    write_record(tmp_path, "model", item, Settings(recorder="NamedMpkGz"))  # model.mpk.gz: also model.bpk
    (tmp_path / "model.mpk").rename(tmp_path / "a.mpk")
    (tmp_path / "model.mpk.gz").rename(tmp_path / "a.mpk.gz")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "weights").write_bytes((tmp_path / "a.mpk").read_bytes())  # a record without extension
    assert main(["migrate", str(tmp_path), "-q"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "converted a.mpk -> a.bpk (11 tensors, 260 B)",
        "skipped   a.mpk.gz: a.bpk already exists",
        "converted sub/weights -> weights.bpk (11 tensors, 260 B)",
        f"migrated 2 of 3 records in {tmp_path} (520 B): 1 skipped, 0 failed",
    ]
    assert sorted(p.name for p in tmp_path.rglob("*.bpk")) == ["a.bpk", "weights.bpk"]
    with open_store(tmp_path / "sub" / "weights.bpk") as store:
        assert len(store.entries) == 11


def test_a_dry_run_says_would_and_writes_nothing(tmp_path, capsys):
    item, _ = model_item()
    write_record(tmp_path, "only", item, Settings(recorder="NamedMpkGz"))
    assert main(["migrate", str(tmp_path), "--dry-run", "--to", "safetensors"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "would convert only.mpk.gz -> only.safetensors (11 tensors, 260 B)",
        f"would migrate 1 of 1 record in {tmp_path} (260 B): 0 skipped, 0 failed",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["only.mpk.gz"]


def test_an_empty_folder_migrates_nothing(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("no record")
    assert main(["migrate", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"migrated 0 of 0 records in {tmp_path} (0 B): 0 skipped, 0 failed\n"


def test_migrate_writes_for_the_burn_version_asked(tmp_path, capsys):
    """A bool tensor's spelling differs between Burn 0.20 and 0.21 (README "Burn versions"): the file loads in the
    release asked for, and the newest by default."""
    from tests.helpers.formats_burn_record_writers import Param, id_text
    item = {"mask": Param(id_text(3), np.array([True, False])), "w": Param(id_text(4), np.ones(2, "<f4"))}
    loads_in = {}
    for flags in (["--burn-version", "0.20"], ["--burn-version", "0.21"], []):
        folder = tmp_path / (flags[-1] if flags else "default")
        folder.mkdir()
        write_record(folder, "m", item, Settings(recorder="NamedMpk"))
        assert main(["migrate", str(folder), "-q", *flags]) == 0
        capsys.readouterr()
        assert main(["inspect", str(folder / "m.bpk"), "--json"]) == 0
        loads_in[folder.name] = json.loads(capsys.readouterr().out)["burn"]["loads_in"]
        with open_store(folder / "m.bpk") as store:
            assert store.read("mask").astype(bool).tolist() == [True, False]
    assert loads_in == {"0.20": ["0.20"], "0.21": ["0.21", "0.22"], "default": ["0.21", "0.22"]}


def test_a_file_that_cannot_be_read_is_passed_over_and_the_search_goes_on(tmp_path, capsys):
    """``a_mem`` links to /proc/self/mem, a regular file whose first read fails (EIO) even for root: migrate
    skips it and still finds the record after it."""
    os.symlink("/proc/self/mem", tmp_path / "a_mem")
    item, _ = model_item()
    write_record(tmp_path, "b", item, Settings(recorder="NamedMpk"))
    assert main(["migrate", str(tmp_path), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "would convert b.mpk -> b.bpk (11 tensors, 260 B)",
        f"would migrate 1 of 1 record in {tmp_path} (260 B): 0 skipped, 0 failed"]


def test_a_dry_run_skips_records_planned_to_the_same_destination(tmp_path, capsys):
    """``a.mpk``, ``a.mpk.gz`` and ``a.json`` all become ``a.bpk``: a dry run writes nothing, yet plans one."""
    item, _ = model_item()
    for recorder in ("NamedMpk", "NamedMpkGz", "PrettyJson"):
        write_record(tmp_path, "a", item, Settings(recorder=recorder))
    assert main(["migrate", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"would migrate 1 of 3 records in {tmp_path} (260 B): 2 skipped, 0 failed"
    assert sum(line.startswith("skipped   ") and line.endswith(": a.bpk already exists") for line in out) == 2
    assert not (tmp_path / "a.bpk").exists()
