"""A zip checkpoint's storage entries, refused exactly: each refusal names the file, the storage and what is wrong
with its entry. Checkpoints are built as torch.save lays them out
(``tests.helpers.pytorch_checkpoints.zip_checkpoint``), then one entry is taken out, compressed, or its header
forged.

Promises (README, "PyTorch files": bad input is refused with one line naming the file and what is wrong) -> tests:
- a storage with no entry, a compressed one, one of another size
  -> test_a_storage_entry_that_is_missing_compressed_or_resized_is_refused
- a storage whose bytes would run past the end of the file, even by a few, is refused, never read from what
  follows -> test_a_storage_running_past_the_file_is_refused_saying_where,
  test_a_storage_starting_in_the_files_last_bytes_is_refused
- a storage whose entry header is damaged, or lies past the file's end
  -> test_a_damaged_storage_entry_header_is_refused_naming_the_storage,
  test_a_storage_header_past_the_files_end_is_refused_naming_the_storage
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

from tests.helpers.pytorch_checkpoints import Storage, Tensor, zip_checkpoint

from tests.refusals import refusal

FOUR = struct.pack("<4f", 1, 2, 3, 4)
W = {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}


def header_offset(path: Path, name: str) -> int:
    with zipfile.ZipFile(path) as archive:
        return archive.getinfo(name).header_offset


def test_a_storage_entry_that_is_missing_compressed_or_resized_is_refused(tmp_path: Path) -> None:
    missing = zip_checkpoint(tmp_path / "gone.pt", {"w": Tensor(Storage("7", 4), 0, (4,), (1,))}, {"0": FOUR})
    assert refusal(missing) == "gone.pt: storage 7 has no data/7 entry in the archive"
    compressed = zip_checkpoint(tmp_path / "z.pt", W, {})
    with zipfile.ZipFile(compressed, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ckpt/data/0", FOUR)
    assert refusal(compressed) == "z.pt: storage 0 is compressed; PyTorch stores storages uncompressed"
    resized = zip_checkpoint(tmp_path / "big.pt", {"w": Tensor(Storage("0", 5), 0, (4,), (1,))}, {"0": FOUR})
    assert refusal(resized) == "big.pt: storage 0 holds 16 bytes but the checkpoint says 20 (F32)"


def test_a_storage_running_past_the_file_is_refused_saying_where(tmp_path: Path) -> None:
    """The storage's local header claims 65,535 bytes of extra field: its data would start past the file."""
    path = zip_checkpoint(tmp_path / "far.pt", W, {"0": FOUR})
    at = header_offset(path, "ckpt/data/0")
    data = bytearray(path.read_bytes())
    data[at + 28:at + 30] = struct.pack("<H", 0xFFFF)
    path.write_bytes(bytes(data))
    start = at + 30 + len("ckpt/data/0") + 0xFFFF
    assert refusal(path) == (f"far.pt: file is truncated: it has {len(data)} bytes, but a tensor storage of 16 bytes "
                             f"at byte {start} needs {start + len(FOUR)}")


def test_a_damaged_storage_entry_header_is_refused_naming_the_storage(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "hurt.pt", W, {"0": FOUR})
    at = header_offset(path, "ckpt/data/0")
    data = bytearray(path.read_bytes())
    data[at:at + 4] = b"XXXX"
    path.write_bytes(bytes(data))
    assert refusal(path) == f"hurt.pt: storage 0: the zip entry header at byte {at} is damaged"


def test_a_storage_starting_in_the_files_last_bytes_is_refused(tmp_path: Path) -> None:
    """Its header's extra field moves its 16 bytes to start 8 bytes before the end: half would be the zip's own
    end record, and none of it is the storage."""
    path = zip_checkpoint(tmp_path / "edge.pt", W, {"0": FOUR})
    at = header_offset(path, "ckpt/data/0")
    data = bytearray(path.read_bytes())
    data[at + 28:at + 30] = struct.pack("<H", len(data) - 8 - (at + 30 + len("ckpt/data/0")))
    path.write_bytes(bytes(data))
    assert refusal(path) == (f"edge.pt: file is truncated: it has {len(data)} bytes, but a tensor storage of 16 "
                             f"bytes at byte {len(data) - 8} needs {len(data) + 8}")


def test_a_storage_header_past_the_files_end_is_refused_naming_the_storage(tmp_path: Path) -> None:
    """The central directory (which zipfile trusts) sends the storage's local header to 10 bytes before the end."""
    path = zip_checkpoint(tmp_path / "lost.pt", W, {"0": FOUR})
    data = bytearray(path.read_bytes())
    entry = data.rindex(b"ckpt/data/0") - 46  # the storage's central directory record (its name is at 46)
    data[entry + 42:entry + 46] = struct.pack("<I", len(data) - 10)
    path.write_bytes(bytes(data))
    assert refusal(path) == (f"lost.pt: file is truncated: the zip header of storage 0 needs bytes {len(data) - 10}.."
                             f"{len(data) + 20} but the file has {len(data)}")
