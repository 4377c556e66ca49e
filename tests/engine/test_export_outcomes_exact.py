"""engine/export.py's promises checked by their outcomes on real files: the bytes written, the metadata kept,
the permissions a replaced file keeps, what is refused before a byte is written and the words saying so.

Promise -> test (README, "Export"):
- exports are atomic; sources never modified -> test_a_refused_export_leaves_the_folder_as_it_was
- a replaced file keeps its permissions -> test_a_replaced_file_keeps_its_permissions_and_a_new_one_gets_the_umask
- producer, format and version are written unless given -> test_metadata_gets_producer_format_and_version_unless_given
- bad destinations are one line saying what is wrong -> test_bad_destinations_are_refused_by_what_is_wrong
- partial files of killed exports are cleaned, and their live owners (this process too) are not signalled
  -> test_only_partials_of_dead_processes_are_removed
- the kernel copy is checked -> test_a_source_that_ends_early_is_an_error_naming_the_byte
"""

from __future__ import annotations

import errno
import os
import stat

import numpy as np
import pytest
import safetensors.numpy
from test_export import no_signal_arrives

from engine import ArrayStore, ExportError, __version__, export, open_store
from engine.exporting import PARTIAL, _os_message, _partial_prefix, _RangeCopier


def arrays() -> dict[str, np.ndarray]:
    return {"b": np.arange(6, dtype="<f4").reshape(2, 3), "a": np.array([1, -2, 3], "<i8")}


def test_bytes_are_written_in_the_order_given_with_each_tensors_own_values(tmp_path):
    out = export(ArrayStore(arrays()).entries, tmp_path / "m.safetensors")
    assert out == tmp_path / "m.safetensors"
    loaded = safetensors.numpy.load_file(out)
    assert {k: v.tobytes() for k, v in loaded.items()} == {k: v.tobytes() for k, v in arrays().items()}
    with open_store(out) as store:
        assert store.names == ["b", "a"]  # written in the order given, read in data order


def test_copying_a_file_keeps_every_byte_of_every_tensor(tmp_path):
    """A copy from a file goes through the kernel (byte ranges), not through numpy: same bytes either way."""
    source = export(ArrayStore(arrays()).entries, tmp_path / "src.bpk")
    with open_store(source) as store:
        copy = export(store.entries, tmp_path / "copy.bpk", metadata={"k": "v"})
    with open_store(copy) as store:
        assert {n: store.read(n).tobytes() for n in store.names} == {k: v.tobytes() for k, v in arrays().items()}
        assert store.metadata["k"] == "v"


def test_metadata_gets_producer_format_and_version_unless_given(tmp_path):
    entries = ArrayStore(arrays()).entries
    with open_store(export(entries, tmp_path / "m.bpk")) as store:
        assert store.metadata == {"producer": "store-studio", "format": "burnpack", "version": __version__}
    with open_store(export(entries, tmp_path / "m.safetensors")) as store:
        assert store.metadata == {"producer": "store-studio"}
    given = {"producer": "burn", "format": "x", "version": "0.20.0", "k": "v"}
    with open_store(export(entries, tmp_path / "given.bpk", metadata=given)) as store:
        assert store.metadata == given


def test_scalars_go_to_burnpack_only(tmp_path):
    entries = ArrayStore(arrays()).entries
    with open_store(export(entries, tmp_path / "m.bpk", scalars={"epoch": {"Int": 3}})) as store:
        assert store.scalars == {"epoch": {"Int": 3}}
    with open_store(export(entries, tmp_path / "m.safetensors", scalars={"epoch": {"Int": 3}})) as store:
        assert store.scalars == {} and "epoch" not in store.metadata


def test_a_replaced_file_keeps_its_permissions_and_a_new_one_gets_the_umask(tmp_path):
    entries = ArrayStore(arrays()).entries
    dest = export(entries, tmp_path / "m.bpk")
    os.chmod(dest, 0o600)
    export(entries, dest, overwrite=True)
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
    old = os.umask(0o027)
    try:
        fresh = export(entries, tmp_path / "fresh.bpk")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o640


def test_a_refused_export_leaves_the_folder_as_it_was(tmp_path):
    entries = ArrayStore(arrays()).entries
    dest = tmp_path / "m.bpk"
    dest.write_bytes(b"old")
    with pytest.raises(ExportError) as info:
        export(entries, dest)
    assert str(info.value) == f"m.bpk already exists in {tmp_path}; nothing was written"
    assert dest.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["m.bpk"]


def test_bad_destinations_are_refused_by_what_is_wrong(tmp_path):
    entries = ArrayStore(arrays()).entries
    (tmp_path / "folder.bpk").mkdir()
    os.mkfifo(tmp_path / "pipe.bpk")
    (tmp_path / "link.bpk").symlink_to(tmp_path / "nowhere")
    cases = {
        tmp_path / "m.npz": "m.npz: choose a format (burnpack or safetensors); the extension names neither "
                            "(.pt and .pth files are read only)",
        tmp_path / "folder.bpk": f"{tmp_path / 'folder.bpk'}: is a folder",
        tmp_path / "missing" / "m.bpk": f"m.bpk: the folder {tmp_path / 'missing'} does not exist; create it first",
        tmp_path / "link.bpk": f"link.bpk already exists in {tmp_path}; nothing was written",
    }
    for dest, words in cases.items():
        with pytest.raises(ExportError) as info:
            export(entries, dest)
        assert str(info.value) == words
    with pytest.raises(ExportError) as info:
        export(entries, tmp_path / "pipe.bpk", overwrite=True)
    assert str(info.value) == "pipe.bpk is a FIFO, not a file: choose a file name to export to"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.bpk", "link.bpk", "pipe.bpk"]


def test_a_format_given_by_name_wins_over_the_extension(tmp_path):
    out = export(ArrayStore(arrays()).entries, tmp_path / "weights.bin", "safetensors")
    with open_store(out) as store:
        assert store.format == "safetensors"


def test_a_tensor_name_given_twice_is_refused_before_writing(tmp_path):
    entries = ArrayStore(arrays()).entries
    with pytest.raises(ExportError) as info:
        export([*entries, entries[0]], tmp_path / "m.bpk")
    assert str(info.value) == "m.bpk: two tensors would be named 'b'"
    assert list(tmp_path.iterdir()) == []


def test_only_partials_of_dead_processes_are_removed(tmp_path):
    dest = tmp_path / "m.bpk"
    prefix = _partial_prefix(dest)
    assert prefix == ".m.bpk."
    dead = tmp_path / f"{prefix}{2**22 + 7}-0a1b2c3d{PARTIAL}"  # above Linux's largest pid: no such process
    live = tmp_path / f"{prefix}{os.getpid()}-0a1b2c3d{PARTIAL}"
    other = tmp_path / f".other.bpk.{2**22 + 7}-0a1b2c3d{PARTIAL}"
    odd = tmp_path / f"{prefix}x-0a1b2c3d{PARTIAL}"
    for path in (dead, live, other, odd):
        path.write_bytes(b"partial")
    with no_signal_arrives():  # the owner of `live` is this process
        export(ArrayStore(arrays()).entries, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([dest.name, live.name, other.name, odd.name])


def test_a_long_destination_name_gets_a_partial_name_the_folder_accepts(tmp_path):
    dest = tmp_path / ("é" * 120 + ".bpk")  # 244 bytes: with the partial's suffix, over 255
    prefix = _partial_prefix(dest)
    assert prefix.startswith(".é") and prefix.endswith(".")
    assert len(f"{prefix}{2**22}-{'0' * 8}{PARTIAL}".encode()) <= os.pathconf(tmp_path, "PC_NAME_MAX")
    with open_store(export(ArrayStore(arrays()).entries, dest)) as store:
        assert store.names == ["b", "a"]


def test_a_source_that_ends_early_is_an_error_naming_the_byte(tmp_path):
    src = tmp_path / "src"
    src.write_bytes(bytes(range(10)))
    dst = tmp_path / "dst"
    copier = _RangeCopier()
    copier.ways = []  # the buffered way, as where the kernel refuses to copy
    with open(src, "rb") as i, open(dst, "wb") as o:
        assert copier.copy(i.fileno(), 2, o.fileno(), 5) == 5
        with pytest.raises(ExportError) as info:
            copier.copy(i.fileno(), 10, o.fileno(), 5)
    assert str(info.value) == "source ended early at byte 10"
    assert dst.read_bytes() == bytes([2, 3, 4, 5, 6])


@pytest.mark.parametrize("code, words", [
    (errno.ENOSPC, "m.bpk: the disk is full; nothing was changed (free space and try again)"),
    (errno.EACCES, "m.bpk: cannot write in {folder} (Permission denied); nothing was changed"),
    (errno.EROFS, "m.bpk: cannot write in {folder} (Read-only file system); nothing was changed"),
    (errno.EIO, "m.bpk: Input/output error; nothing was changed"),
])
def test_os_errors_say_what_happened_and_that_nothing_changed(tmp_path, code, words):
    assert _os_message(tmp_path / "m.bpk", OSError(code, os.strerror(code))) == words.format(folder=tmp_path)
