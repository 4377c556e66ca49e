"""Export's edge cases: permissions kept, signals clean up, the real error wins, odd destinations."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import numpy as np
import pytest

from engine import ArrayStore, ExportError, FormatError, export, open_store
from tests.helpers import hard_child as child

ARRAYS = {f"w{i}": np.full((64, 64), i, np.float32) for i in range(4)}


def _source(folder: Path) -> Path:
    return export(ArrayStore(ARRAYS).entries, folder / "src.safetensors")


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755])
def test_replacing_a_file_keeps_its_permission_bits(mode: int, tmp_path: Path) -> None:
    dest = tmp_path / "model.bpk"
    dest.write_bytes(b"old")
    dest.chmod(mode)
    export(ArrayStore(ARRAYS).entries, dest, overwrite=True)
    assert stat.S_IMODE(dest.stat().st_mode) == mode
    with open_store(dest) as store:
        assert store.read("w3")[0, 0] == 3


# Export in the main thread of a child, which sends itself SIGNAL after the first tensor is written.
KILLED_MIDWAY = """
import os, signal, sys
from engine import export, open_store
source, dest, signum = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open_store(source) as store:
    export(store.entries, dest, progress=lambda done, total: os.kill(os.getpid(), signum))
print("not reached")
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_remove_the_partial_file_and_still_end_the_process(signum: int, tmp_path: Path) -> None:
    source = _source(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    run = child.snippet(KILLED_MIDWAY, source, out / "model.bpk", int(signum))
    assert run.status == -signum, run.describe()  # the signal still ends the process, as it would have
    assert "not reached" not in run.output
    assert list(out.iterdir()) == []  # no hidden .model.bpk.PID.partial left behind


def test_a_partial_file_of_a_running_export_is_left_alone(tmp_path: Path) -> None:
    live = tmp_path / f".model.bpk.{os.getpid()}-0badc0de.partial"  # this process is alive
    live.write_bytes(b"someone else's export")
    export(ArrayStore(ARRAYS).entries, tmp_path / "model.bpk")
    assert live.read_bytes() == b"someone else's export"


def test_a_cleanup_that_fails_does_not_hide_the_real_error(tmp_path: Path) -> None:
    """The source changes midway (the real error); the partial file has become a folder, so removing it fails."""
    source = _source(tmp_path)
    out = tmp_path / "out"
    out.mkdir()

    sabotaged = []

    def sabotage(done: int, total: int) -> None:
        for partial in out.glob(".*.partial"):
            if partial.is_file():
                sabotaged.append(partial)
                partial.unlink()
                partial.mkdir()
                (partial / "keep").write_bytes(b"x")  # a non-empty folder: unlink raises IsADirectoryError
        os.truncate(source, 100)

    with open_store(source) as store:
        with pytest.raises(FormatError, match="changed on disk since it was opened"):
            export(store.entries, out / "model.bpk", progress=sabotage)
    assert sabotaged, "no partial file was there to sabotage: the cleanup failure went untested"
    assert not (out / "model.bpk").exists()


def test_a_destination_name_too_long_for_a_partial_name_beside_it_still_exports(tmp_path: Path) -> None:
    dest = tmp_path / ("m" * 245 + ".bpk")  # 249 bytes: ".NAME.PID-XXXXXXXX.partial" would pass 255
    export(ArrayStore(ARRAYS).entries, dest)
    with open_store(dest) as store:
        assert store.read("w2")[1, 1] == 2
    assert [p.name for p in tmp_path.iterdir()] == [dest.name]
    export(ArrayStore(ARRAYS).entries, dest, overwrite=True)  # and replaces it
    assert [p.name for p in tmp_path.iterdir()] == [dest.name]


def test_a_dangling_symlink_destination_needs_overwrite(tmp_path: Path) -> None:
    dest = tmp_path / "model.bpk"
    dest.symlink_to(tmp_path / "nowhere.bpk")
    with pytest.raises(ExportError, match="already exists in"):
        export(ArrayStore(ARRAYS).entries, dest)
    assert dest.is_symlink()
    export(ArrayStore(ARRAYS).entries, dest, overwrite=True)
    assert not dest.is_symlink() and dest.is_file() and not (tmp_path / "nowhere.bpk").exists()


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_fifo_destination_is_refused(overwrite: bool, tmp_path: Path) -> None:
    fifo = tmp_path / "model.bpk"
    os.mkfifo(fifo)
    with pytest.raises(ExportError, match="model.bpk is a FIFO, not a file" if overwrite else "already exists"):
        export(ArrayStore(ARRAYS).entries, fifo, overwrite=overwrite)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and [p.name for p in tmp_path.iterdir()] == ["model.bpk"]


def test_a_device_destination_is_refused_even_with_overwrite(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="null is a device, not a file"):
        export(ArrayStore(ARRAYS).entries, "/dev/null", format="burnpack", overwrite=True)


def test_the_command_line_refuses_a_fifo_in_one_line(tmp_path: Path) -> None:
    source = _source(tmp_path)
    os.mkfifo(tmp_path / "out.bpk")
    run = child.cli("convert", source, tmp_path / "out.bpk", "--overwrite")
    assert run.status == 1 and run.output.strip() == "store-studio: out.bpk is a FIFO, not a file: choose a file name " \
                                                     "to export to", run.describe()
