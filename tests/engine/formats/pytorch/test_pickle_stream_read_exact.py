"""Binary arguments read from a streamed pickle, which is fetched 64 KiB at a time (unpickler.READ_AHEAD), and
persistent ids told apart from data (session 12's mutation run of PickleStream.read and load). Files are written
by torch.save itself, legacy (``_use_new_zipfile_serialization=False``: its pickles are streamed) or zip.

Promises (README, "PyTorch files": the legacy layout is read as torch reads it; a value nothing here knows is shown
as data, never taken for a tensor) -> tests:
- a name longer than a whole fetch (a BINUNICODE argument of over 64 KiB) is read whole, and the pickle goes on
  from the byte after it: the tensors after it (one named just as long) read as torch reads them
  -> test_names_longer_than_a_fetch_read_whole_and_the_pickle_goes_on_after_them
- an argument longer than a fetch that runs past its member's end is refused as truncated, naming the byte it starts
  at within the member, even when the next member holds enough bytes
  -> test_an_argument_longer_than_a_fetch_cut_at_its_members_end_is_refused_not_read_past_it
- in a zip checkpoint, a plain tuple that starts with "storage" (a slice's start) is data, as torch reads it, not a
  storage reference (only burn-store's tar layout names storages by such tuples)
  -> test_a_storage_like_tuple_in_a_zip_checkpoint_is_data_not_a_storage
"""

from __future__ import annotations

import struct
from pathlib import Path

import torch

from engine.formats import open_store
from engine.formats.pytorch.unpickler import READ_AHEAD
from tests.engine.formats.pytorch.test_pickle_stream_readline_exact import (STORAGES_HEAD, name_of,
                                                                            tar_with_storages)
from tests.engine.formats.pytorch.test_pytorch_python2 import assert_reads_as_torch
from tests.refusals import refusal


def test_names_longer_than_a_fetch_read_whole_and_the_pickle_goes_on_after_them(tmp_path: Path) -> None:
    first, second = name_of(READ_AHEAD + 5000), "b" + name_of(2 * READ_AHEAD)
    checkpoint = {first: torch.arange(6.0).reshape(2, 3), second: torch.arange(4, dtype=torch.int64) - 2}
    path = tmp_path / "long_names.pt"
    torch.save(checkpoint, path, _use_new_zipfile_serialization=False)
    assert_reads_as_torch(path)
    with open_store(path) as store:
        assert store.names == [first, second]
        assert store.read(second).tolist() == [-2, -1, 0, 1]


def test_an_argument_longer_than_a_fetch_cut_at_its_members_end_is_refused_not_read_past_it(tmp_path: Path) -> None:
    # The storages member (always streamed) ends 100 bytes into a BINUNICODE view list of READ_AHEAD + 1000 bytes;
    # the tensors member right after it is longer than that.
    head = STORAGES_HEAD + b"X"
    path = tar_with_storages(tmp_path / "cut.tar", head + struct.pack("<I", READ_AHEAD + 1000) + b"v" * 100)
    assert refusal(path) == (f"cut.tar: the tar 'storages' member is truncated: it needs {READ_AHEAD + 1000} bytes "
                             f"at byte {len(head) + 4} but only 100 remain")


def test_a_storage_like_tuple_in_a_zip_checkpoint_is_data_not_a_storage(tmp_path: Path) -> None:
    path = tmp_path / "slice.pt"
    torch.save({"w": torch.arange(6.0), "s": slice(("storage", 1), 2)}, path)
    assert torch.load(path, weights_only=False)["s"] == slice(("storage", 1), 2)
    with open_store(path) as store:
        assert store.names == ["w"]
        assert store.values == {"s": ["('storage', 1)", 2, None]}
        assert store.read("w").tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
