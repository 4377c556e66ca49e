"""The local byte source (``MappedFile`` in engine/sources/local.py), where session 12's mutation run showed no test
looking: a file that shrinks under a streamed read, the default words of a positioned read, closing (twice, and
when the file got descriptor 0), a folder the system itself refuses to open, and a caller's own path object.

Promises (README, "Hostile and changing files": a file that changes while open is "changed on disk", never the
wrong bytes, and bad input is one line naming the file; closing a store releases its files; engine/formats/
source.py: every ``ByteSource`` says which bytes a read wanted, "data" unless told) -> tests:
- a file shrunk while open is "changed on disk", naming the file, when streamed (an export) as when read
  -> test_streaming_a_file_shrunk_while_open_says_changed_on_disk_naming_it
- a positioned read past the end, given no description, says "data needs bytes a..b"
  -> test_a_read_past_the_end_without_a_description_says_data
- closing a source twice is harmless, also after a value was memory-mapped
  -> test_closing_a_source_twice_after_a_mapped_read_is_harmless
- closing a store releases its file even when the file got descriptor 0 (a process started with stdin closed)
  -> test_closing_a_store_whose_file_got_descriptor_0_releases_it
- a folder is one line naming it also where opening it fails with EISDIR (a system or a FUSE file system that
  refuses a folder at open, where Linux's own file systems open it and the fstat check refuses it)
  -> test_a_folder_the_system_refuses_to_open_is_one_line_naming_it
- the path a caller gives (a ``Path`` subclass included) is the one the store names as its file
  -> test_a_store_names_its_file_by_the_callers_own_path_object
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from test_mapped_file_checks import CHANGED, VALUES, two_tensors

from engine import FormatError, open_store
from engine.sources import local as mapped
from engine.sources.local import MappedFile


def test_streaming_a_file_shrunk_while_open_says_changed_on_disk_naming_it(tmp_path: Path) -> None:
    path = two_tensors(tmp_path)
    with open_store(path) as store:
        os.truncate(path, os.path.getsize(path) - 8)  # the last tensor's final bytes are gone
        with pytest.raises(FormatError) as info:
            list(store.iter_bytes("b"))
    assert str(info.value) == CHANGED


def test_a_read_past_the_end_without_a_description_says_data(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(10))
    source = MappedFile(path)
    try:
        with pytest.raises(FormatError) as info:
            source.pread(8, 3)
    finally:
        source.close()
    assert str(info.value) == "f.bin: file is truncated: data needs bytes 8..11 but the file has 10"


def test_closing_a_source_twice_after_a_mapped_read_is_harmless(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """MAP_ABOVE (1 GiB) lowered to 16 bytes so that a small value is memory-mapped, as a huge one is."""
    monkeypatch.setattr(mapped, "MAP_ABOVE", 16)
    path = tmp_path / "f.bin"
    path.write_bytes(VALUES.tobytes())
    source = MappedFile(path)
    assert source.array(0, np.dtype("<f4"), (12,)).tobytes() == VALUES.tobytes()
    source.close()
    source.close()
    assert source.fileno() is None


def open_descriptors_naming(path: Path) -> list[int]:
    """The process's descriptors open on ``path`` (from /proc, what the system itself holds)."""
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                fds.append(int(fd))
        except OSError:  # the descriptor listdir itself used, gone by now
            pass
    return fds


@contextmanager
def stdin_closed() -> Iterator[None]:
    """As in a process started with its standard input closed (a service, ``store-studio <&-``): the next file
    opened gets descriptor 0. This process's own stdin is back when the block ends."""
    stdin = os.dup(0)
    os.close(0)
    try:
        yield
    finally:
        os.dup2(stdin, 0)
        os.close(stdin)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to list open descriptors")
def test_closing_a_store_whose_file_got_descriptor_0_releases_it(tmp_path: Path) -> None:
    path = two_tensors(tmp_path)
    with stdin_closed():
        store = open_store(path)
        assert open_descriptors_naming(path) == [0]
        store.close()
        assert open_descriptors_naming(path) == []


def test_a_folder_the_system_refuses_to_open_is_one_line_naming_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "model.safetensors"
    folder.mkdir()
    real_open = os.open

    def refusing_folders(name, flags, *args, **kwargs):  # the answer of a system that refuses a folder at open
        if os.path.isdir(name):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(name))
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_folders)
    with pytest.raises(FormatError) as info:
        open_store(folder)
    assert str(info.value) == "model.safetensors: is a folder, not a model file"


class TaggedPath(type(Path())):  # a caller's own path class (a GUI's, carrying what it shows)
    """A path that carries a label."""

    label = ""


def test_a_store_names_its_file_by_the_callers_own_path_object(tmp_path: Path) -> None:
    given = TaggedPath(two_tensors(tmp_path))
    given.label = "my model"
    with open_store(given) as store:
        assert store.files == [given]
        assert [(type(f), f.label) for f in store.files] == [(TaggedPath, "my model")]
