"""Hostile checkpoints are refused by name, and nothing in them ever runs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.errors import FormatError
from engine.formats import open_store

HOSTILE = Path(__file__).parents[3] / "fixtures" / "hostile"
MANIFEST = json.loads((HOSTILE / "HOSTILE.json").read_text())


def _make_hostile():
    spec = importlib.util.spec_from_file_location("make_hostile", HOSTILE / "make_hostile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_are_at_least_twenty_in_every_layout() -> None:
    assert len(MANIFEST) >= 20
    assert {info["layout"] for info in MANIFEST.values()} == {"zip", "legacy", "raw"}


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_hostile_file_is_refused_naming_the_global_and_nothing_runs(name: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # payloads act on the current folder: HOSTILE_RAN appears, hostile_canary goes
    (tmp_path / "hostile_canary").mkdir()
    with pytest.raises(FormatError) as error:
        open_store(HOSTILE / name)
    assert MANIFEST[name]["refuses"] in str(error.value)
    assert str(error.value).startswith(f"{name}: ")
    assert sorted(os.listdir(tmp_path)) == ["hostile_canary"]


def test_committed_fixtures_are_what_the_script_makes(tmp_path: Path) -> None:
    _make_hostile().build(tmp_path)
    for name in [*MANIFEST, "HOSTILE.json"]:
        assert (tmp_path / name).read_bytes() == (HOSTILE / name).read_bytes(), name


@pytest.mark.child
@pytest.mark.skipif(os.name != "posix", reason="payloads use posix commands")
def test_every_payload_really_runs_under_torch_load(tmp_path: Path) -> None:
    """Without this the sentinel checks above would prove nothing. Runs the payloads for real
    (torch.load with weights_only=False), each in a throwaway folder, in a child process."""
    result = subprocess.run([sys.executable, str(HOSTILE / "make_hostile.py"), "--verify"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "did not run: none" in result.stdout


def test_an_unknown_class_is_a_placeholder_not_an_import(tmp_path: Path) -> None:
    """``__main__.MyNet`` cannot be imported here; its state shows, and nothing was looked up."""
    path = tmp_path / "main.pt"
    path.write_bytes(b"\x80\x02c__main__\nMyNet\n)\x81}X\x01\x00\x00\x00aK\x07sb.")
    with open_store(path) as store:
        assert store.values == {"__class__": "__main__.MyNet", "a": 7}
        assert store.foreign_classes == ("__main__.MyNet",)
