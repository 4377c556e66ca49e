"""Only regular files are opened: ``regular_files.open_regular`` names every other kind of file
and refuses it before opening it, and again after, when the name was swapped in between; every local input
(``MappedFile``: models, shards, templates) goes through it.

Promise -> test (README, "Limits": a FIFO, device or socket given as a file is refused at once, naming it):
- each kind is named in the words messages use -> test_each_kind_of_file_is_named
- a regular file opens read-only, its fstat returned -> test_a_regular_file_opens_with_its_fstat
- a missing file is the OSError it always was -> test_a_missing_file_is_a_plain_os_error
- a device, socket or folder is refused by kind, in one line naming it -> test_a_model_that_is_no_regular_file_is_refused_by_kind
- a FIFO swapped in between the look and the open neither blocks nor is read, and leaks no descriptor
  -> test_a_fifo_swapped_in_after_the_look_is_refused_without_blocking (a child: a regression would block it)
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from engine import FormatError, open_store
from engine.sources.regular_files import NotRegularFile, file_kind, open_regular
from tests.helpers import hard_child as child
from tests.helpers.special_files import a_socket


def test_each_kind_of_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"x")
    os.mkfifo(tmp_path / "pipe")
    kinds = {path: file_kind(os.stat(path).st_mode) for path in (tmp_path / "file", tmp_path, tmp_path / "pipe",
                                                                 Path(os.devnull), a_socket(tmp_path))}
    assert list(kinds.values()) == ["regular file", "folder", "FIFO", "device", "socket"]
    assert file_kind(stat.S_IFBLK) == "device" and file_kind(0) == "special file"


def test_a_regular_file_opens_with_its_fstat(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"hello")
    fd, info = open_regular(tmp_path / "file")
    try:
        assert os.pread(fd, 10, 0) == b"hello" and info.st_size == 5 and stat.S_ISREG(info.st_mode)
        assert (info.st_ino, info.st_dev) == (os.stat(tmp_path / "file").st_ino, os.stat(tmp_path / "file").st_dev)
    finally:
        os.close(fd)


def test_a_missing_file_is_a_plain_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "gone")


@pytest.mark.parametrize("make, says", [
    (lambda folder: Path(os.devnull), "null: is a device, not a regular file"),
    (a_socket, "sock: is a socket, not a regular file"),
    (lambda folder: folder, "{folder}: is a folder, not a model file"),
], ids=["device", "socket", "folder"])
def test_a_model_that_is_no_regular_file_is_refused_by_kind(tmp_path: Path, make, says: str) -> None:
    """In-process only for kinds a regression could not block on (the FIFOs run in children, here and in
    tests/hardening/test_hostile_local.py)."""
    with pytest.raises(FormatError) as refused:
        open_store(make(tmp_path))
    assert str(refused.value) == says.format(folder=tmp_path.name)


def test_not_regular_file_is_an_os_error_naming_the_file() -> None:
    error = NotRegularFile("/some/pipe", "FIFO")
    assert isinstance(error, OSError) and error.filename == "/some/pipe" and error.kind == "FIFO"
    assert error.strerror == "is a FIFO, not a regular file" and error.errno is None


SWAPPED_AFTER_THE_LOOK = """
import os, sys
from engine import FormatError, open_store
path, fifo = sys.argv[1], sys.argv[2]
look = os.stat

def look_then_swap(name, *args, **kwargs):
    seen = look(name, *args, **kwargs)
    if os.fspath(name) == path:
        os.replace(fifo, path)  # the name is now a FIFO nobody writes: a blocking open would wait for ever
    return seen

before = sorted(os.listdir("/proc/self/fd"))
os.stat = look_then_swap
try:
    open_store(path)
except FormatError as exc:
    print(exc)
os.stat = look
print(sorted(os.listdir("/proc/self/fd")) == before)
"""


@pytest.mark.child
def test_a_fifo_swapped_in_after_the_look_is_refused_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\x08" + bytes(7) + b"{}      ")
    os.mkfifo(tmp_path / "pipe")
    run = child.snippet(SWAPPED_AFTER_THE_LOOK, tmp_path / "model.safetensors", tmp_path / "pipe")
    assert run.status == 0, run.describe()
    assert run.output.splitlines() == ["model.safetensors: is a FIFO, not a regular file", "True"]
    assert stat.S_ISFIFO(os.stat(tmp_path / "model.safetensors").st_mode)
