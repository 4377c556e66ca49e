"""Arguments read from a streamed pickle, which is fetched 64 KiB at a time: a slip at a fetch's edge would misread
a legacy or tar file's names and tensors, or read past a member's end.

Text arguments (the newline-ended lines of pickle protocols 0-1: UNICODE names, GLOBAL, INT...) read from a streamed
pickle, which is fetched 64 KiB at a time (unpickler.READ_AHEAD): a line that spans a fetch, one whose newline is
the first byte of a fetch, and one that runs to its member's end without a newline (PickleStream.readline). Legacy
files are written opcode by opcode as in test_pytorch_python2.py, a tensor named by a UNICODE (``V``) line as Python
2's pickler writes a ``unicode`` key; tar files as in test_tar_layout_details.py.

Promises (README, "PyTorch files": the legacy layout and the tar layout are read as torch reads them; nothing past a
member's end is read; bad input is refused with one line naming the file and what is wrong) -> tests:
- a name whose line spans two fetches is read whole, as torch reads it
  -> test_a_name_whose_line_spans_two_fetches_reads_as_torch_reads_it
- a name whose newline is the first byte of a fetch ends there
  -> test_a_name_whose_newline_opens_a_fetch_ends_at_that_newline
- a text argument that runs to its member's end without a newline is refused as truncated, even when the bytes
  after the member hold a newline -> test_a_text_argument_cut_at_its_members_end_is_refused_not_read_past_it

Binary arguments read from a streamed pickle, which is fetched 64 KiB at a time (unpickler.READ_AHEAD), and
persistent ids told apart from data (PickleStream.read and load): a slip at a fetch's edge would misread a legacy
file's tensors. Files are written by torch.save itself, legacy (``_use_new_zipfile_serialization=False``: its
pickles are streamed) or zip.

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
from tests.helpers.pytorch_python2_pickles import (
    assert_reads_as_torch,
    legacy_file,
    storage_pid,
    tensor_v2,
)
from tests.helpers.pytorch_streamed_pickles import (
    STORAGES_HEAD,
    WEIGHT,
    name_of,
    tar_with_storages,
)
from tests.refusals import refusal


def checkpoint_named(path: Path, name: str) -> Path:
    """A legacy file holding one 2x3 float tensor under ``name``, written as a UNICODE line."""
    tensor = tensor_v2(storage_pid("1", "cpu", 6), 0, (2, 3), (3, 1))
    return legacy_file(path, b"}V" + name.encode("ascii") + b"\n" + tensor + b"s", {"1": WEIGHT})


def torch_names(path: Path) -> list[str]:
    """The names torch reads: its safe loader has no UNICODE opcode, and the file is this test's own."""
    return list(torch.load(path, map_location="cpu", weights_only=False))




def test_a_name_whose_line_spans_two_fetches_reads_as_torch_reads_it(tmp_path: Path) -> None:
    name = name_of(READ_AHEAD + 5000)  # starts in the first fetch, ends in the second
    path = checkpoint_named(tmp_path / "spans.pth", name)
    assert torch_names(path) == [name]
    with open_store(path) as store:
        assert store.names == [name]
        assert store.read(name).tolist() == WEIGHT.reshape(2, 3).tolist()


def test_a_name_whose_newline_opens_a_fetch_ends_at_that_newline(tmp_path: Path) -> None:
    probe = checkpoint_named(tmp_path / "probe.pth", "x").read_bytes()
    start = probe.index(b"}Vx\n") + 2  # the name's first byte, the same for any name
    name = name_of(READ_AHEAD - start)  # its newline at byte READ_AHEAD: the first byte of the second fetch
    path = checkpoint_named(tmp_path / "edge.pth", name)
    assert path.read_bytes()[READ_AHEAD:READ_AHEAD + 1] == b"\n"
    assert torch_names(path) == [name]
    with open_store(path) as store:
        assert store.names == [name]
        assert store.read(name).tolist() == WEIGHT.reshape(2, 3).tolist()


def test_a_text_argument_cut_at_its_members_end_is_refused_not_read_past_it(tmp_path: Path) -> None:
    # The storages member (always streamed) ends inside its view list's first line, which spans a fetch; the
    # tensors member right after it holds text lines, so a read past the member's end would find a newline.
    path = tar_with_storages(tmp_path / "cut.tar", STORAGES_HEAD + b"V" + b"v" * (READ_AHEAD + 100))
    assert refusal(path) == "cut.tar: the tar 'storages' member is truncated inside a text argument"


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
