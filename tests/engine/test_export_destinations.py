"""Where export writes and how it moves bytes, checked by outcome: destinations that are not files are refused by
what they are (real special files: a FIFO, the null device, a Unix socket, a block device), partial files are
named after the destination's bytes and only dead ones of the same destination are cleaned, the range copier
copies each range once and refuses one past the source's end, and a source changed under the copy is caught.

Promise -> test (README, "Export": bad input is one line naming the file and what is wrong):
- a destination that is a device, socket or FIFO is refused by kind -> test_special_files_are_refused_by_their_kind
- the kernel copy is checked (a range past the source's end is an error) -> test_a_range_past_the_source_end_is_an_error_not_a_loop
- partial files of killed exports are cleaned, live ones kept -> test_a_partial_of_another_users_live_process_is_kept,
  test_a_name_that_is_not_utf8_gets_partials_of_the_same_bytes
- a file that changes while open is caught -> test_a_source_changed_under_the_copy_of_its_last_tensor_is_caught
- exports are atomic (a cancel leaves the destination) -> test_a_cancel_says_the_destination_was_left_as_it_was
- the longest name a folder allows still exports on every machine: its partial file (shortened ``.NAME.``, the pid,
  8 random hex digits, ``.partial``) fits the folder's name limit even when the pid has Linux's most digits, seven
  (pid_max is at most 2**22) -> test_the_longest_name_exports_when_the_pid_has_seven_digits
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

from engine import ArrayStore, ExportCancelled, ExportError, FormatError, export, open_store
from engine.exporting import PARTIAL, _RangeCopier, _partial_prefix

export_module = importlib.import_module("engine.exporting")  # the package re-exports the function under this name


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
    with open(src, "rb") as i, open(dst, "wb") as o:  # as export opens its partial file (O_APPEND would refuse the kernel)
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


def test_a_source_changed_under_the_copy_of_its_last_tensor_is_caught(tmp_path, monkeypatch):
    """The check after each kernel copy is what catches it: no later tensor's read would."""
    source = tmp_path / "src.safetensors"
    export(ArrayStore({"w": np.arange(1000, dtype=np.float32)}).entries, source)
    real = os.copy_file_range

    def copy_then_grow(src: int, dst: int, count: int, offset: int) -> int:
        n = real(src, dst, count, offset)
        with open(source, "ab") as grow:
            grow.write(b"later")
        return n
    monkeypatch.setattr(export_module.os, "copy_file_range", copy_then_grow)
    with open_store(source) as store, pytest.raises(FormatError) as info:
        export(store.entries, tmp_path / "out.bpk")
    assert str(info.value) == "src.safetensors: changed on disk since it was opened; reload it to read the new contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.safetensors"]


@pytest.mark.parametrize("kind", ["file", "arrays"])
def test_a_cancel_says_the_destination_was_left_as_it_was(tmp_path, kind):
    """Cancelled in the kernel copy (tensors of an open file) or in the chunked one (arrays in memory)."""
    arrays = ArrayStore({"w": np.arange(10, dtype=np.float32)})
    dest = tmp_path / "out.bpk"
    dest.write_bytes(b"old")
    if kind == "file":
        export(arrays.entries, tmp_path / "src.safetensors")
        store = open_store(tmp_path / "src.safetensors")
    else:
        store = arrays
    with pytest.raises(ExportCancelled) as info:
        export(store.entries, dest, overwrite=True, cancel=lambda: True)
    store.close()
    assert str(info.value) == "export cancelled; the destination was left as it was"
    assert dest.read_bytes() == b"old"


def test_a_name_that_is_not_utf8_gets_partials_of_the_same_bytes(tmp_path):
    """Linux names are bytes: one that is not UTF-8 (Python shows it with surrogates) is exported, its partial
    files are named after the same bytes, and a stale one of them is cleaned."""
    name = os.fsdecode(b"\xffmodel.bpk")
    dest = tmp_path / name
    assert _partial_prefix(dest) == f".{name}."
    stale = tmp_path / f".{name}.{2**22 + 7}-0a1b2c3d{PARTIAL}"
    stale.write_bytes(b"partial")
    export(ArrayStore({"w": np.ones(2, np.float32)}).entries, dest)
    assert [p.name for p in tmp_path.iterdir()] == [name]
    with open_store(dest) as store:
        assert store.names == ["w"]
    room = os.pathconf(tmp_path, "PC_NAME_MAX") - len(f"..{2**22}-{'0' * 8}{PARTIAL}")
    exactly = os.fsdecode(b"\xff" + b"a" * (room - 1))  # as long as a partial's name allows: kept whole
    assert _partial_prefix(tmp_path / exactly) == f".{exactly}."


def test_a_tensor_of_many_chunks_is_written_whole(tmp_path):
    values = np.arange(4_300_000, dtype=np.float32)  # 17.2 MB: two 16 MiB chunks of the in-memory path
    out = export(ArrayStore({"w": values}).entries, tmp_path / "out.safetensors")
    with open_store(out) as store:
        assert store.read("w").tobytes() == values.tobytes()


def test_a_dead_partial_of_another_destination_is_not_removed(tmp_path):
    """Only this destination's partials are cleaned, even when another's name is as long and its pid is dead."""
    other = tmp_path / f".n.bpk.{2**22 + 7}-0a1b2c3d{PARTIAL}"  # ".n.bpk." is as long as ".m.bpk."
    other.write_bytes(b"partial")
    export(ArrayStore({"w": np.ones(2, np.float32)}).entries, tmp_path / "m.bpk")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.bpk", other.name])

LARGEST_PID = 2**22 - 1  # the largest pid Linux can give (pid_max's upper bound is 2**22)


def test_the_longest_name_exports_when_the_pid_has_seven_digits(tmp_path, monkeypatch):
    longest = os.pathconf(tmp_path, "PC_NAME_MAX")
    name = "m" * (longest - len(".bpk")) + ".bpk"
    seen: list[str] = []

    def progress(done: int, total: int) -> None:  # while writing, the partial file is in the folder
        seen.extend(p.name for p in tmp_path.iterdir())

    with monkeypatch.context() as m:
        m.setattr(os, "getpid", lambda: LARGEST_PID)  # this machine's pids have 5 digits; another's have 7
        export(ArrayStore({"w": np.arange(4, dtype=np.float32)}).entries, tmp_path / name, progress=progress)
    partial = seen[0]
    assert partial.startswith(f".{name[:longest - len(f'..{LARGEST_PID}-00000000{PARTIAL}')]}.{LARGEST_PID}-")
    assert partial.endswith(PARTIAL) and len(partial) == longest
    assert [p.name for p in tmp_path.iterdir()] == [name]
    with open_store(tmp_path / name) as store:
        assert store.read("w").tolist() == [0.0, 1.0, 2.0, 3.0]
