"""The zip layout's own records and refusals, word for word (engine/formats/pytorch zip_layout.py, store.py,
unpickler.py): where data.pkl may sit and how many there are, the byteorder and version records (their 64-byte limit,
compressed or not ASCII), an entry's stated sizes at their edges, a storage header forged past the end of a remote
file, the byte range of a one-element tensor, and a hash flood through single SETITEMs. Checkpoints are written by
real torch or built with ``tests.helpers.pytorch_checkpoints`` and ``tests.helpers.pytorch_zip_entries``'s exact zip
writer (``zip_of``: sizes and flags as given).

Promises (README, "PyTorch files": bad input is refused with one line naming the file; "Limits") -> tests:
- data.pkl sits in one top folder of any name, or at the archive's top (read here; torch.load refuses that: "file in
  archive is not in a subdirectory"); none, or two, is refused naming the file
  -> test_a_checkpoint_whose_data_pkl_has_no_folder_reads,
  test_an_archive_without_data_pkl_is_refused_naming_the_file,
  test_an_archive_with_two_data_pkl_is_refused_counting_them
- a file that starts as a zip but is none, and a byteorder that is neither little nor big, are refused naming the
  file -> test_a_file_that_is_no_readable_zip_is_refused_naming_it,
  test_a_byteorder_other_than_little_or_big_is_refused_naming_the_file
- data.pkl "at most 1 GiB" -> test_data_pkl_stating_1_gib_reads_and_one_byte_more_is_refused_naming_the_file
- the version and byteorder records are read up to 64 bytes (a longer one is no record), non-ASCII bytes as U+FFFD,
  and a compressed one within data.pkl's bounds (an encrypted one is refused as data.pkl is)
  -> test_a_version_record_of_64_bytes_is_read_and_65_is_ignored, test_a_record_with_bytes_that_are_not_ascii_reads,
  test_an_encrypted_compressed_record_is_refused_as_encrypted
- an entry may not state more compressed bytes than the file holds; stating exactly the file's size is read and
  found truncated -> test_an_entry_stating_more_compressed_bytes_than_the_file_is_refused_naming_both_sizes,
  test_an_entry_stating_the_files_size_in_compressed_bytes_is_truncated
- remote (README, "Remote files"): a storage header forged into the file's last bytes is refused as truncated, as
  locally, never asked of the server -> test_a_remote_storage_header_in_the_files_last_bytes_is_refused_as_truncated
- a dense tensor is a plain byte range of the file, a one-element one too; an empty one is none
  -> test_a_one_element_tensor_is_a_byte_range_of_the_file_and_an_empty_one_is_none
- "Limits", hash flooding: at most 64 equal-hash keys in one dict, when set one SETITEM at a time too
  -> test_64_equal_hash_keys_set_one_at_a_time_open_and_65_are_refused
"""

from __future__ import annotations

import os
import pickle
import struct
from pathlib import Path

import torch
from tests.helpers.pytorch_checkpoints import (
    Storage,
    Tensor,
    checkpoint_pickle,
    raw_bytes,
    torch_flat,
    zip_checkpoint,
)

from engine.formats import open_store
from tests.helpers.remote_http_site import Server, Site
from tests.helpers.pytorch_zip_entries import (
    DEFLATED,
    PICKLE,
    Entry,
    pickle_entry,
    small_checkpoint,
    zip_of,
)
from tests.refusals import refusal

FOUR = struct.pack("<4f", 1, 2, 3, 4)
SAME_HASH = 2**61 - 1  # Python hashes an int modulo this prime: every multiple hashes to 0


def with_version(path: Path, version: bytes) -> Path:
    """A small checkpoint whose version record holds ``version``, stored."""
    path.write_bytes(zip_of([Entry("ckpt/data.pkl", PICKLE), Entry("ckpt/byteorder", b"little"),
                             Entry("ckpt/version", version)]))
    return path


def test_a_checkpoint_whose_data_pkl_has_no_folder_reads(tmp_path: Path) -> None:
    """data.pkl, byteorder, version and data/0 at the archive's top (torch.load refuses such an archive, this reader
    reads it): the records and the storage are found there."""
    obj = {"w": Tensor(Storage("0", 4), 0, (4,), (1,)), "epoch": 3}
    path = tmp_path / "flat.pt"
    path.write_bytes(zip_of([Entry("data.pkl", checkpoint_pickle(obj)), Entry("byteorder", b"little"),
                             Entry("data/0", FOUR), Entry("version", b"3\n")]))
    with open_store(path) as store:
        assert store.names == ["w"] and store.read("w").tolist() == [1.0, 2.0, 3.0, 4.0]
        assert store.values == {"epoch": 3} and store.metadata == {"byteorder": "little", "version": "3"}


def test_an_archive_without_data_pkl_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "other.pt"
    path.write_bytes(zip_of([Entry("readme.txt", b"hi"), Entry("ckpt/data.pk", PICKLE)]))
    assert refusal(path) == "other.pt: zip archive has no data.pkl: not a PyTorch checkpoint"


def test_an_archive_with_two_data_pkl_is_refused_counting_them(tmp_path: Path) -> None:
    path = tmp_path / "two.pt"
    path.write_bytes(zip_of([Entry("a/data.pkl", PICKLE), Entry("a/byteorder", b"little"),
                             Entry("b/data.pkl", PICKLE)]))
    assert refusal(path) == "two.pt: zip archive has 2 data.pkl entries; a checkpoint has one"


def test_a_file_that_is_no_readable_zip_is_refused_naming_it(tmp_path: Path) -> None:
    """A zip's first 100 bytes: it starts as one, but has no central directory."""
    whole = zip_checkpoint(tmp_path / "whole.pt", {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}, {"0": FOUR})
    path = tmp_path / "cut.pt"
    path.write_bytes(whole.read_bytes()[:100])
    assert refusal(path) == ("cut.pt: file is truncated: it has 100 bytes and lacks the directory that ends every "
                             "complete zip archive")


def test_a_byteorder_other_than_little_or_big_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "bo.pt", {}, {}, byteorder="middle")
    assert refusal(path) == "bo.pt: byteorder entry says 'middle', not little or big"


def test_data_pkl_stating_1_gib_reads_and_one_byte_more_is_refused_naming_the_file(tmp_path: Path) -> None:
    """The stated size of a stored data.pkl is forged (zipfile reads a stored entry by its compressed size): 1 GiB
    is within the limit and the pickle reads; one byte more is refused before anything is read."""
    at_limit = small_checkpoint(tmp_path / "gib.pt", Entry("ckpt/data.pkl", PICKLE, stated_size=1 << 30))
    with open_store(at_limit) as store:
        assert store.values == {"epoch": 7, "name": "run"} and store.metadata == {"byteorder": "little"}
    past = small_checkpoint(tmp_path / "huge.pt", Entry("ckpt/data.pkl", PICKLE, stated_size=(1 << 30) + 1))
    assert refusal(past) == "huge.pt: data.pkl claims 1073741825 bytes, over the limit of 1073741824"


def test_a_version_record_of_64_bytes_is_read_and_65_is_ignored(tmp_path: Path) -> None:
    with open_store(with_version(tmp_path / "v64.pt", b"7" * 64)) as store:
        assert store.metadata == {"byteorder": "little", "version": "7" * 64}
    with open_store(with_version(tmp_path / "v65.pt", b"7" * 65)) as store:
        assert store.metadata == {"byteorder": "little"} and store.values == {"epoch": 7, "name": "run"}


def test_a_record_with_bytes_that_are_not_ascii_reads(tmp_path: Path) -> None:
    """Each byte that is not ASCII reads as U+FFFD; the record is still read, and stripped."""
    with open_store(with_version(tmp_path / "odd.pt", b" 3\xff\xe9\n")) as store:
        assert store.metadata == {"byteorder": "little", "version": "3\ufffd\ufffd"}


def test_an_encrypted_compressed_record_is_refused_as_encrypted(tmp_path: Path) -> None:
    """A deflated version record is inflated by the reader (as data.pkl is), so an encrypted one is refused in its
    words, not zipfile's."""
    path = tmp_path / "locked.pt"
    path.write_bytes(zip_of([Entry("ckpt/data.pkl", PICKLE), Entry("ckpt/byteorder", b"little"),
                             Entry("ckpt/version", b"3\n", DEFLATED, flags=1)]))
    assert refusal(path) == "locked.pt: zip entry 'ckpt/version' is encrypted"


def stating_compressed(path: Path, extra: int) -> tuple[Path, int]:
    """A checkpoint whose deflated data.pkl's central record states the file's size plus ``extra`` compressed bytes."""
    small_checkpoint(path, pickle_entry())
    data = bytearray(path.read_bytes())
    record = data.index(b"PK\x01\x02")  # data.pkl's: it is the first entry
    data[record + 20:record + 24] = struct.pack("<I", len(data) + extra)
    path.write_bytes(bytes(data))
    return path, len(data)


def test_an_entry_stating_more_compressed_bytes_than_the_file_is_refused_naming_both_sizes(tmp_path: Path) -> None:
    path, size = stating_compressed(tmp_path / "more.pt", 1)
    assert refusal(path) == (f"more.pt: zip entry 'ckpt/data.pkl' claims {size + 1} compressed bytes, more than "
                             f"the whole file ({size})")


def test_an_entry_stating_the_files_size_in_compressed_bytes_is_truncated(tmp_path: Path) -> None:
    """As many compressed bytes as the whole file is not "more than the file": its bytes are asked for, and they
    would run past the end (they start after the 43-byte local header)."""
    path, size = stating_compressed(tmp_path / "all.pt", 0)
    assert refusal(path) == (f"all.pt: file is truncated: the zip entry 'ckpt/data.pkl' needs bytes 43..{43 + size} "
                             f"but the file has {size}")


def test_a_remote_storage_header_in_the_files_last_bytes_is_refused_as_truncated(tmp_path: Path) -> None:
    """Two storages' central records send their 30-byte local headers to 10 and 5 bytes before the end: neither
    fits, so neither is fetched ahead; the first one read is refused as truncated, as for a local file."""
    obj = {"a": Tensor(Storage("0", 4), 0, (4,), (1,)), "b": Tensor(Storage("1", 4), 0, (4,), (1,))}
    path = zip_checkpoint(tmp_path / "far.pt", obj, {"0": FOUR, "1": FOUR})
    data = bytearray(path.read_bytes())
    size = len(data)
    for key, offset in (("0", size - 10), ("1", size - 5)):
        entry = data.rindex(f"ckpt/data/{key}".encode()) - 46  # the storage's central record (its name is at 46)
        data[entry + 42:entry + 46] = struct.pack("<I", offset)
    server = Server(Site(files={"/far.pt": bytes(data)}))
    try:
        assert refusal(server.url("/far.pt")) == (f"far.pt: file is truncated: the zip header of storage 0 needs "
                                                  f"bytes {size - 10}..{size + 20} but the file has {size}")
    finally:
        server.close()


def test_a_one_element_tensor_is_a_byte_range_of_the_file_and_an_empty_one_is_none(torch_files) -> None:
    """torch's 0-d tensors (a float, an int, a bool) lie densely in their storages: each is its own bytes of the
    file, copied as they are; an empty tensor has no bytes to copy."""
    path = torch_files[("scalars_empty", "zip")]
    expected = torch_flat(torch.load(path, weights_only=True))
    with open_store(path) as store:
        for name in ("f", "i", "b"):
            fd, offset, length = store.byte_range(name)
            assert length == expected[name].element_size() and os.pread(fd, length, offset) == raw_bytes(
                expected[name]), name
        assert store.byte_range("e") is None and store.byte_range("e2") is None


def setitem_flood(count: int) -> bytes:
    """``{"state": {k: None for k in keys}}`` with ``count`` keys hashing to 0, each set by its own SETITEM (torch
    writes SETITEMS; a pickle may not)."""
    keys = b"".join(pickle.dumps(i * SAME_HASH, protocol=2)[2:-1] + b"Ns" for i in range(count))
    return b"\x80\x02}X\x05\x00\x00\x00state}" + keys + b"s."


def test_64_equal_hash_keys_set_one_at_a_time_open_and_65_are_refused(tmp_path: Path) -> None:
    raw = setitem_flood(64)
    assert len(pickle.loads(raw)["state"]) == 64
    with open_store(small_checkpoint(tmp_path / "inside.pt", Entry("ckpt/data.pkl", raw))) as store:
        assert store.names == [] and store.metadata == {"byteorder": "little"}
    past = small_checkpoint(tmp_path / "past.pt", Entry("ckpt/data.pkl", setitem_flood(65)))
    assert refusal(past) == ("past.pt: data.pkl has more than 64 dict keys or set items with the same hash "
                             "(a hash-flooding attack)")
