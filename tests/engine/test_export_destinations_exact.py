"""Destinations that are not files, and how export names them: the refusal must say what the path is, so the
user knows why a name they typed cannot take a model. Checked on real special files (a FIFO, the null device,
a Unix socket), before a byte is written.

Promise -> test (README, "Export": bad input is one line naming the file and what is wrong):
- a destination that is a device, socket or FIFO is refused by kind -> test_special_files_are_refused_by_their_kind
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import numpy as np
import pytest

from engine import ArrayStore, ExportError, export


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
