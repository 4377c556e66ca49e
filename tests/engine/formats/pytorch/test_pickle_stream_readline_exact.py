"""Text arguments (the newline-ended lines of pickle protocols 0-1: UNICODE names, GLOBAL, INT...) read from a streamed
pickle, which is fetched 64 KiB at a time (unpickler.READ_AHEAD): a line that spans a fetch, one whose newline is the
first byte of a fetch, and one that runs to its member's end without a newline (session 12's mutation run of
PickleStream.readline). Legacy files are written opcode by opcode as in test_pytorch_python2.py, a tensor named by a
UNICODE (``V``) line as Python 2's pickler writes a ``unicode`` key; tar files as in test_tar_layout_exact.py.

Promises (README, "PyTorch files": the legacy layout and the tar layout are read as torch reads them; nothing past a
member's end is read; bad input is refused with one line naming the file and what is wrong) -> tests:
- a name whose line spans two fetches is read whole, as torch reads it
  -> test_a_name_whose_line_spans_two_fetches_reads_as_torch_reads_it
- a name whose newline is the first byte of a fetch ends there
  -> test_a_name_whose_newline_opens_a_fetch_ends_at_that_newline
- a text argument that runs to its member's end without a newline is refused as truncated, even when the bytes
  after the member hold a newline -> test_a_text_argument_cut_at_its_members_end_is_refused_not_read_past_it
"""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import numpy as np
import torch

from engine.formats import open_store
from engine.formats.pytorch.unpickler import READ_AHEAD
from tests.engine.formats.pytorch.pytorch_helpers import write_tar
from tests.engine.formats.pytorch.test_pytorch_python2 import glob, k, legacy_file, storage_pid, tensor_v2
from tests.refusals import refusal

WEIGHT = np.arange(6, dtype=np.float32)
# A tar checkpoint's storages member up to its view list's pickle: one float storage (key 101) holding WEIGHT.
STORAGES_HEAD = (pickle.dumps(1, 2) + pickle.dumps((101, "cpu", torch.FloatStorage), 2) + struct.pack("<q", 6)
                 + WEIGHT.tobytes() + b"\x80\x02")


def name_of(length: int) -> str:
    """A name of ``length`` characters whose every 10-character stretch differs (a lost or repeated piece shows)."""
    return "".join(f"{i:09d}." for i in range(length // 10 + 1))[:length]


def checkpoint_named(path: Path, name: str) -> Path:
    """A legacy file holding one 2x3 float tensor under ``name``, written as a UNICODE line."""
    tensor = tensor_v2(storage_pid("1", "cpu", 6), 0, (2, 3), (3, 1))
    return legacy_file(path, b"}V" + name.encode("ascii") + b"\n" + tensor + b"s", {"1": WEIGHT})


def torch_names(path: Path) -> list[str]:
    """The names torch reads: its safe loader has no UNICODE opcode, and the file is this test's own."""
    return list(torch.load(path, map_location="cpu", weights_only=False))


def tar_with_storages(path: Path, storages: bytes) -> Path:
    """A tar checkpoint whose storages member is ``storages``, followed by a tensors member of 10,000 text lines
    (so a read past the storages member's end would find bytes, and newlines, to take)."""
    return write_tar(path, {"sys_info": pickle.dumps({"protocol_version": 1000, "little_endian": True}, 2),
                            "storages": storages, "tensors": b"\x80\x02I0\n." * 10_000,
                            "pickle": b"\x80\x02" + glob("collections", "OrderedDict") + b")R" + k(0) + b"."})


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
