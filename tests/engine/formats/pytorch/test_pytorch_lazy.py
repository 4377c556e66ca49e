"""Opening a multi-GB checkpoint reads its pickle, not its storages."""

from __future__ import annotations

import pickle
import struct
import zlib
from pathlib import Path

import numpy as np

from engine.formats import open_store

from tests.helpers.pytorch_checkpoints import Storage, Tensor, checkpoint_pickle, legacy_head

FOUR = struct.pack("<4f", 1, 2, 3, 4)
LOCAL = struct.Struct("<4s5H3I2H")
CENTRAL = struct.Struct("<4s6H3I5H2I")
HUGE = 3 << 30  # bytes of the big storage, left as a hole in a sparse file


def bytes_read() -> int:
    """Bytes this process has read through system calls (mmap page faults excluded)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def sparse_zip64_checkpoint(path: Path) -> Path:
    """A zip checkpoint whose 3 GiB storage is a ZIP64 entry never written (its CRC is not real)."""
    numel = HUGE // 4
    data_pkl = checkpoint_pickle({"small": Tensor(Storage("1", 4), 0, (4,), (1,)),
                                  "huge": Tensor(Storage("0", numel), 0, (numel,), (1,))})
    central = []
    with path.open("wb") as f:
        for name, data in ((b"ckpt/data.pkl", data_pkl), (b"ckpt/byteorder", b"little"), (b"ckpt/data/1", FOUR)):
            offset, crc = f.tell(), zlib.crc32(data)
            f.write(LOCAL.pack(b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), len(data), len(name), 0) + name + data)
            central.append(CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, len(data), len(data), len(name), 0,
                                        0, 0, 0, 0, offset) + name)
        name, offset, extra = b"ckpt/data/0", f.tell(), struct.pack("<HHQQ", 1, 16, HUGE, HUGE)
        pad = -(offset + LOCAL.size + len(name) + len(extra) + 4) % 64  # torch aligns storages to 64 bytes
        extra += struct.pack("<HH", 0x4246, pad) + bytes(pad)
        f.write(LOCAL.pack(b"PK\x03\x04", 45, 0, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF, len(name), len(extra)) + name + extra)
        f.seek(HUGE, 1)
        central.append(CENTRAL.pack(b"PK\x01\x02", 45, 45, 0, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF, len(name), len(extra),
                                    0, 0, 0, 0, offset) + name + extra)
        directory, directory_at = b"".join(central), f.tell()
        f.write(directory)
        record_at = f.tell()
        f.write(struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, len(central), len(central),
                            len(directory), directory_at))
        f.write(struct.pack("<4sIQI", b"PK\x06\x07", 0, record_at, 1))
        f.write(struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, len(central), len(central), 0xFFFFFFFF, 0xFFFFFFFF, 0))
    return path


def sparse_legacy_checkpoint(path: Path, numel: int) -> Path:
    obj = {"huge": Tensor(Storage("0", numel), 0, (numel,), (1,)), "small": Tensor(Storage("1", 4), 1, (3,), (1,))}
    with path.open("wb") as f:
        f.write(legacy_head() + checkpoint_pickle(obj, legacy=True) + pickle.dumps(["1", "0"], protocol=2))
        f.write(struct.pack("<q", 4) + FOUR + struct.pack("<q", numel))
        f.truncate(f.tell() + numel * 4)
    return path


def test_multi_gb_zip_checkpoint_opens_reading_only_its_pickle(tmp_path: Path) -> None:
    path = sparse_zip64_checkpoint(tmp_path / "huge.pt")
    assert path.stat().st_size > HUGE
    before = bytes_read()
    store = open_store(path)
    assert bytes_read() - before < 1 << 20
    with store:
        entry = store.entry("huge")
        assert entry.nbytes == HUGE and entry.shape == (HUGE // 4,)
        fd, offset, length = store.byte_range("huge")
        assert length == HUGE and offset + length < path.stat().st_size
        np.testing.assert_array_equal(store.read("small"), [1, 2, 3, 4])
        before = bytes_read()
        assert not store.read("huge")[:1024].any()  # mapped: only the touched page is loaded
        assert bytes_read() - before < 1 << 20


def test_large_legacy_checkpoint_opens_reading_only_its_pickles(tmp_path: Path) -> None:
    path = sparse_legacy_checkpoint(tmp_path / "big_legacy.pt", 50 << 20)  # 200 MiB
    before = bytes_read()
    with open_store(path) as store:
        assert bytes_read() - before < 1 << 20
        assert store.version == "legacy" and store.entry("huge").nbytes == 200 << 20
        np.testing.assert_array_equal(store.read("small"), [2, 3, 4])
