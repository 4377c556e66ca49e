"""Destinations that are not files, and how export names them: the refusal must say what the path is, so the
user knows why a name they typed cannot take a model. Checked on real special files (a FIFO, the null device,
a Unix socket), before a byte is written.

Promise -> test (README, "Export": bad input is one line naming the file and what is wrong):
- a destination that is a device, socket or FIFO is refused by kind -> test_special_files_are_refused_by_their_kind
- the kernel copy is checked (a range past the source's end is an error) -> test_a_range_past_the_source_end_is_an_error_not_a_loop
- partial files of killed exports are cleaned, live ones kept -> test_a_partial_of_another_users_live_process_is_kept
"""

from __future__ import annotations

import errno
import importlib
import os
import socket
import stat
from pathlib import Path

import numpy as np
import pytest

from engine import ArrayStore, ExportError, export
from engine.export import PARTIAL, _partial_prefix, _RangeCopier

export_module = importlib.import_module("engine.export")  # the package re-exports the function under this name


def refusal(dest: Path) -> str:
    with pytest.raises(ExportError) as info:
        export(ArrayStore({"w": np.ones(2, np.float32)}).entries, dest, "burnpack", overwrite=True)
    return str(info.value)


def test_special_files_are_refused_by_their_kind(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock"))
        assert refusal(tmp_path / "sock") == "sock is a socket, not a file: choose a file name to export to"
    assert refusal(tmp_path / "pipe") == "pipe is a FIFO, not a file: choose a file name to export to"
    assert refusal(Path(os.devnull)) == "null is a device, not a file: choose a file name to export to"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "sock"]


def is_block_device(path: Path) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def test_a_block_device_is_refused_as_a_device():
    block = next((p for p in sorted(Path("/dev").iterdir()) if is_block_device(p)), None)
    if block is None:
        pytest.skip("this machine shows no block device")
    assert refusal(block) == f"{block.name} is a device, not a file: choose a file name to export to"


def copy_range(src: Path, dst: Path, offset: int, count: int, ways: list | None = None) -> int:
    copier = _RangeCopier()
    if ways is not None:
        copier.ways = ways
    with open(src, "rb") as i, open(dst, "ab") as o:
        return copier.copy(i.fileno(), offset, o.fileno(), count)


@pytest.mark.parametrize("ways", [None, []], ids=["kernel", "buffer"])
def test_a_one_byte_range_is_copied_once(tmp_path, ways):
    """One byte is a whole copy, not a refusal: a way that copied it is not followed by another copying it again."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(bytes(range(10)))
    assert copy_range(src, dst, 3, 1, ways) == 1
    assert dst.read_bytes() == b"\x03"


@pytest.mark.parametrize("ways", [None, []], ids=["kernel", "buffer"])
def test_a_range_past_the_source_end_is_an_error_not_a_loop(tmp_path, ways):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_bytes(bytes(range(10)))
    with pytest.raises(ExportError) as info:
        copy_range(src, dst, 10, 5, ways)
    assert str(info.value) == "source ended early at byte 10"
    assert dst.read_bytes() == b""


def test_a_partial_of_another_users_live_process_is_kept(tmp_path, monkeypatch):
    """os.kill(pid, 0) on another user's process raises PermissionError: it is alive, so its partial stays.
    (This runs as root, where no process is another user's; the refusal is what the kernel would say.)"""
    dest = tmp_path / "m.bpk"
    theirs = tmp_path / f"{_partial_prefix(dest)}{2**22 + 9}-0a1b2c3d{PARTIAL}"
    theirs.write_bytes(b"partial")
    real_kill = os.kill

    def kill(pid: int, sig: int) -> None:
        if pid == 2**22 + 9:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        real_kill(pid, sig)
    monkeypatch.setattr(export_module.os, "kill", kill)
    export(ArrayStore({"w": np.ones(2, np.float32)}).entries, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([dest.name, theirs.name])
