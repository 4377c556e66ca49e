"""``store-studio migrate DIR``: a Learner's checkpoint folder to Burnpack in one command."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine import open_store
from engine.cli import main

from tests.helpers.formats_burn_record_writers import Data, Settings, Unit, Variant, id_text, model_item, write_record


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
