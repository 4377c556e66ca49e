"""The tar layout (torch before 0.1.10), read as torch reads it: its byte order in the metadata, the
globals torch's safe loader would refuse in any of its pickles, a pickled module's class, tensors of 0 and 64
dimensions, and the exact words (and file) of each refusal. Files are real tar archives in torch's old layout,
built member by member as tests/engine/formats/pytorch/test_pytorch_tar_layout.py builds them, and in the layout
burn-store's fixtures use (no ``tensors`` member, storages named by tuples).

Promises (README, "PyTorch files": the tar layout of torch before 0.1.10 is read; bad input is refused with one
line naming the file and what is wrong) -> tests:
- the byte order is read from sys_info (little when it does not say) and shown in the metadata, in both tar
  layouts -> test_the_byte_order_is_shown_in_the_metadata, test_a_sys_info_without_a_byte_order_is_little_endian,
  test_a_big_endian_file_without_a_tensors_member_reads, test_a_big_endian_storage_view_reads_swapped
- the note names the non-weight classes torch.load(weights_only=True) would refuse, from any member
  -> test_classes_torch_would_refuse_are_named_from_every_pickle
- a pickled module names its class by a ('module', class, file, source) id -> test_a_module_pickled_by_its_class_reads
- tensors of 0 up to 64 dimensions read -> test_tensors_of_0_and_64_dimensions_read
- a member that is read whole is read whole up to the limit -> test_a_pickle_member_at_the_in_memory_limit_is_read_whole
- a refusal's byte counts from the member's start, however it was read
  -> test_a_byte_named_in_a_refusal_counts_from_its_members_start_read_whole_or_streamed
- a tar whose last member ends the file reads -> test_a_tar_without_its_end_blocks_reads
- broken members, records, views and counts are refused in words naming the file
  -> test_broken_records_are_refused_in_words, test_a_broken_pickle_without_a_tensors_member_is_refused_in_words,
  test_a_missing_member_is_refused_naming_the_file,
  test_a_member_whose_size_runs_past_the_file_is_refused, test_a_compressed_tar_is_not_decompressed
"""

from __future__ import annotations

import io
import pickle
import struct
import tarfile
import zlib
from pathlib import Path
from typing import Any

import pytest
import torch
from tests.helpers.pytorch_checkpoints import write_tar

from engine.formats import open_store
from engine.formats.pytorch import tar_layout
from tests.helpers.pytorch_tar_archives import (
    FLOATS,
    Ref,
    checkpoint,
    dump,
    storages,
    tensors,
)
from tests.helpers.pytorch_tar_rebuilds import _Rebuild
from tests.refusals import refusal

LITTLE = dump({"protocol_version": 1000, "little_endian": True})
BIG = dump({"protocol_version": 1000, "little_endian": False})


class Thing:
    """An object of a class torch's safe loader does not know."""

    def __init__(self) -> None:
        self.name = "run"


def burn_style(path: Path, *, sys_info: bytes = LITTLE, big: bool = False, extra: Any = None) -> Path:
    """burn-store's layout: one float storage '1000' of FLOATS, the pickle naming it by a tuple."""
    data = (FLOATS.astype(">f4") if big else FLOATS).tobytes()
    body = dump(1, ("1000", "cpu", torch.FloatStorage)) + struct.pack(">q" if big else "<q", FLOATS.size) + data
    state: dict[str, Any] = {"w": _Rebuild("1000", FLOATS, FLOATS.size)}
    if extra is not None:
        state["extra"] = extra
    return write_tar(path, {"sys_info": sys_info, "pickle": dump(state), "storages": body})


def test_the_byte_order_is_shown_in_the_metadata(tmp_path: Path) -> None:
    with open_store(checkpoint(tmp_path / "little.pt")) as store:
        assert store.metadata == {"byteorder": "little"}
    with open_store(burn_style(tmp_path / "burn.pt")) as store:
        assert store.version == "tar" and store.metadata == {"byteorder": "little"}
        assert store.read("w").tolist() == FLOATS.tolist()


def test_a_sys_info_without_a_byte_order_is_little_endian(tmp_path: Path) -> None:
    path = checkpoint(tmp_path / "unsaid.pt", sys_info=dump({"protocol_version": 1000}))
    with open_store(path) as store:
        assert store.metadata == {"byteorder": "little"}
        assert store.read("w").tolist() == FLOATS[2:8].reshape(2, 3).tolist()


def test_a_big_endian_file_without_a_tensors_member_reads(tmp_path: Path) -> None:
    with open_store(burn_style(tmp_path / "big.pt", sys_info=BIG, big=True)) as store:
        assert store.metadata == {"byteorder": "big"}
        assert store.read("w").tolist() == FLOATS.tolist()


def test_a_big_endian_storage_view_reads_swapped(tmp_path: Path) -> None:
    """A view storage (elements 4-7 of storage 1) keeps its root's byte order."""
    path = checkpoint(tmp_path / "big_view.pt", sys_info=BIG, storages=storages(views=[("2", "1", 4, 4)], big=True),
                      tensors=tensors([("10", "2", 1, (3,), (1,), 1)]))
    with open_store(path) as store:
        assert store.metadata == {"byteorder": "big"}
        assert store.read("w").tolist() == FLOATS[5:8].tolist()


def test_classes_torch_would_refuse_are_named_from_every_pickle(tmp_path: Path) -> None:
    thing = f"{__name__}.Thing"
    in_sys_info = checkpoint(tmp_path / "sys_info.pt",
                             sys_info=dump({"protocol_version": 1000, "little_endian": True, "by": Thing()}))
    in_pickle = checkpoint(tmp_path / "pickle.pt", pickle=dump({"w": Ref("10"), "obj": Thing()}, refs=True))
    in_burn_pickle = burn_style(tmp_path / "burn.pt", extra=Thing())
    for path in (in_sys_info, in_pickle, in_burn_pickle):
        with open_store(path) as store:
            assert store.foreign_classes == (thing,), path.name
    with open_store(in_pickle) as store:
        assert store.values == {"obj": {"__class__": thing, "name": "run"}}


class Net:
    """Pickles as a module would: its tables in ``__dict__``."""

    def __init__(self) -> None:
        self.__dict__.update(_parameters={"weight": Ref("10")}, _buffers={}, _modules={}, training=True)


def module_pickle(obj: Any) -> bytes:
    """As torch's legacy save: a module class's first reference is the id ('module', class, file, source)."""
    out, named = io.BytesIO(), set()

    def persistent_id(item: Any) -> Any:
        if isinstance(item, Ref):
            return item.key
        if item is Net and Net not in named:
            named.add(Net)
            return ("module", Net, "net.py", "class Net(Module): ...")
        return None

    pickler = pickle.Pickler(out, protocol=2)
    pickler.persistent_id = persistent_id  # type: ignore[method-assign]
    pickler.dump(obj)
    return out.getvalue()


def test_a_module_pickled_by_its_class_reads(tmp_path: Path) -> None:
    path = checkpoint(tmp_path / "module.pt", pickle=module_pickle({"net": Net(), "epoch": 3}))
    with open_store(path) as store:
        assert store.names == ["net.weight"]
        assert store.read("net.weight").tolist() == FLOATS[2:8].reshape(2, 3).tolist()
        assert store.values == {"net": {"__class__": f"{__name__}.Net", "training": True}, "epoch": 3}


def test_tensors_of_0_and_64_dimensions_read(tmp_path: Path) -> None:
    path = checkpoint(tmp_path / "dims.pt", tensors=tensors([("10", "1", 0, (), (), 3),
                                                              ("11", "1", 64, (1,) * 64, (1,) * 64, 2)]),
                      pickle=dump({"scalar": Ref("10"), "deep": Ref("11")}, refs=True))
    with open_store(path) as store:
        assert store.entry("scalar").shape == () and store.read("scalar").tolist() == 3.0
        assert store.entry("deep").shape == (1,) * 64 and store.read("deep").reshape(-1).tolist() == [2.0]


def test_a_pickle_member_at_the_in_memory_limit_is_read_whole(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A member up to IN_MEMORY_MEMBER (16 MiB, lowered here to this one's size) is read whole: a byte named in
    a refusal is counted from the member's start."""
    member = b"\x80\x02\xff"
    monkeypatch.setattr(tar_layout, "IN_MEMORY_MEMBER", len(member))
    path = checkpoint(tmp_path / "whole.pt", pickle=member)
    assert refusal(path) == "whole.pt: the tar 'pickle' member has an unknown opcode b'\\xff' at byte 2"


@pytest.mark.parametrize("limit", [0, 16 << 20])
def test_a_byte_named_in_a_refusal_counts_from_its_members_start_read_whole_or_streamed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """The same words for the same member bytes, whether the member was read whole or streamed (the
    ``storages`` member always is): not the byte's place in the file, which only a streamed read knows."""
    monkeypatch.setattr(tar_layout, "IN_MEMORY_MEMBER", limit)
    for member in ("pickle", "storages"):
        path = checkpoint(tmp_path / f"{member}.pt", **{member: b"\x80\x02\xff"})
        assert refusal(path) == f"{member}.pt: the tar '{member}' member has an unknown opcode b'\\xff' at byte 2"
    truncated = checkpoint(tmp_path / "short.pt", pickle=b"\x80\x02X\x05\x00\x00\x00ab")
    assert refusal(truncated) == ("short.pt: the tar 'pickle' member is truncated: it needs 5 bytes at byte 7 "
                                  "but only 2 remain")


def test_a_tar_without_its_end_blocks_reads(tmp_path: Path) -> None:
    """The last member's data (512 bytes exactly) ends the file: no end-of-archive blocks follow."""
    base = len(dump({"w": Ref("10"), "pad": ""}, refs=True))
    path = checkpoint(tmp_path / "cut.pt", pickle=dump({"w": Ref("10"), "pad": "x" * (512 - base)}, refs=True))
    with tarfile.open(path) as archive:
        member = archive.getmember("pickle")
    assert member.size == 512
    path.write_bytes(path.read_bytes()[:member.offset_data + member.size])
    with open_store(path) as store:
        assert store.read("w").tolist() == FLOATS[2:8].reshape(2, 3).tolist()


BARE_STORAGES = storages()[:-len(dump([]))]  # storage 1 (FLOATS), no views list yet
TENSOR_RECORD_BYTES = len(tensors()) - len(dump(1))


@pytest.mark.parametrize(("members", "words"), [
    ({"sys_info": b"\x80\x02\xff"}, "the tar 'sys_info' member has an unknown opcode b'\\xff' at byte 2"),
    ({"pickle": b"\x80\x02\xff"}, "the tar 'pickle' member has an unknown opcode b'\\xff' at byte 2"),
    ({"storages": storages(count=True)}, "the tar 'storages' member claims True records"),
    ({"tensors": tensors(count=TENSOR_RECORD_BYTES + 1)},
     f"the tar 'tensors' member claims {TENSOR_RECORD_BYTES + 1} records"),
    ({"storages": storages([("1", "cpu", torch.FloatTensor, 8, FLOATS.tobytes())])},
     "storage type torch.FloatTensor is not a torch storage class or dtype"),
    ({"storages": BARE_STORAGES + dump(5)}, "storage view 5 is not (key, known root key, offset, size)"),
    ({"storages": storages(views=[["2", "1", 4, 4]])},
     "storage view ['2', '1', 4, 4] is not (key, known root key, offset, size)"),
    ({"storages": storages(views=[("2", "1", -1, 4)])},
     "storage offset -1 is not a non-negative whole number (of 64 bits at most)"),
    ({"storages": storages(views=[("2", "1", 6, 4)])},
     "tensor 'storage view 2' (F32 [4], offset 6, stride [1]) reaches byte 40 of its storage, which has 32"),
    ({"tensors": dump(1, ["10", "1", torch.FloatTensor]) + struct.pack("<ii", 1, 0) + bytes(24)},
     "tensor record ['10', '1', torch.FloatTensor] is not (key, known storage key, tensor class)"),
    ({"tensors": tensors([("10", "1", -1, (), (), 0)])}, "tensor 10 claims -1 dimensions"),
    ({"tensors": tensors([("10", "1", 1, (2,), (1,), -1)])},
     "storage offset -1 is not a non-negative whole number (of 64 bits at most)"),
])
def test_broken_records_are_refused_in_words(tmp_path: Path, members: dict[str, bytes], words: str) -> None:
    assert refusal(checkpoint(tmp_path / "broken.pt", **members)) == f"broken.pt: {words}"


def test_a_broken_pickle_without_a_tensors_member_is_refused_in_words(tmp_path: Path) -> None:
    path = write_tar(tmp_path / "burn.pt", {"sys_info": LITTLE, "pickle": b"\x80\x02\xff", "storages": storages()})
    assert refusal(path) == "burn.pt: the tar 'pickle' member has an unknown opcode b'\\xff' at byte 2"


def test_a_missing_member_is_refused_naming_the_file(tmp_path: Path) -> None:
    """Without a ``tensors`` member (burn-store's layout) the ``pickle`` member is still required."""
    path = write_tar(tmp_path / "two.pt", {"sys_info": LITTLE, "storages": storages()})
    assert refusal(path) == "two.pt: tar archive has no 'pickle' member: not a PyTorch checkpoint"


def patch_header(path: Path, name: str, fields: dict[int, bytes]) -> Path:
    """``path`` with bytes of member ``name``'s header replaced (at offsets within it), its checksum redone."""
    with tarfile.open(path) as archive:
        at = archive.getmember(name).offset
    data = bytearray(path.read_bytes())
    header = data[at:at + 512]
    for offset, value in fields.items():
        header[offset:offset + len(value)] = value
    header[148:156] = b" " * 8
    header[148:155] = b"%06o\0" % sum(header)
    data[at:at + 512] = header
    path.write_bytes(bytes(data))
    return path


def as_old_gnu_sparse(path: Path, name: str, real_size: int) -> Path:
    """``path`` with member ``name`` retyped as an old GNU sparse file of ``real_size`` bytes: tarfile steps
    over the data the header stores, and states the real size as the member's size."""
    return patch_header(path, name, {156: tarfile.GNUTYPE_SPARSE, 483: b"%011o\0" % real_size})


def test_a_member_whose_size_runs_past_the_file_is_refused(tmp_path: Path) -> None:
    path = as_old_gnu_sparse(checkpoint(tmp_path / "sparse.pt"), "pickle", 1 << 20)
    with tarfile.open(path) as archive:
        assert archive.getmember("pickle").size == 1 << 20 > path.stat().st_size
    member = tarfile.open(path).getmember("pickle")
    assert refusal(path) == (f"sparse.pt: file is truncated: it has {path.stat().st_size} bytes, but tar member "
                             f"'pickle' needs {member.offset_data + member.size}")


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def xz_stored(data: bytes) -> bytes:
    """``data`` as an xz file of one block whose LZMA2 chunks are all stored: byte i of ``data`` is byte 27 + i
    of the file while it is in the first chunk (64 KiB)."""
    def crc(part: bytes) -> bytes:
        return struct.pack("<I", zlib.crc32(part))

    flags = b"\x00\x01"  # a CRC32 check
    block_header = b"\x02\x00\x21\x01\x00\x00\x00\x00"  # 12 bytes, one filter: LZMA2, its dictionary byte
    block_header += crc(block_header)
    chunks = b"".join((b"\x01" if start == 0 else b"\x02") + struct.pack(">H", len(piece) - 1) + piece
                      for start in range(0, len(data), 1 << 16) for piece in [data[start:start + (1 << 16)]])
    body = chunks + b"\x00"
    block = block_header + body + b"\x00" * (-len(body) % 4) + crc(data)
    index = b"\x00" + varint(1) + varint(len(block_header) + len(body) + 4) + varint(len(data))
    index += b"\x00" * (-len(index) % 4)
    index += crc(index)
    backward = struct.pack("<I", len(index) // 4 - 1) + flags
    return b"\xfd7zXZ\x00" + flags + crc(flags) + block + index + crc(backward) + backward + b"YZ"


def test_a_compressed_tar_is_not_decompressed(tmp_path: Path) -> None:
    """An xz file whose stored bytes put "ustar" where a tar header has it (the first member's link name holds
    it, 27 bytes earlier) is sniffed as a tar, but only a plain tar is opened: nothing is decompressed."""
    inner = patch_header(checkpoint(tmp_path / "inner.pt"), "sys_info", {157 + 73: b"ustar"})
    with open_store(inner) as store:  # the link name of a regular member changes nothing
        assert store.names == ["w"]
    path = tmp_path / "packed.pt"
    path.write_bytes(xz_stored(inner.read_bytes()))
    assert path.read_bytes()[257:262] == b"ustar"
    with tarfile.open(path) as archive:  # Python's own default decompresses it
        assert archive.getnames() == ["sys_info", "storages", "tensors", "pickle"]
    assert refusal(path).startswith("packed.pt: not a readable tar archive: ")
