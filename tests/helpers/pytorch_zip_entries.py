"""Zip checkpoints written entry by entry with the sizes, flags and compression given, for re-zipped and forged
archives torch never writes."""

from __future__ import annotations

import bz2
import lzma
import pickle
import struct
import zipfile
import zlib
from pathlib import Path

STORED, DEFLATED, BZIP2, LZMA = zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA


DEFAULT_LZMA = (3, 0, 2)  # lc, lp, pb: what Python's zipfile writes


def packed(plain: bytes, method: int, lzma_props: tuple[int, int, int] = DEFAULT_LZMA) -> bytes:
    """``plain`` as a zip entry's body compressed with ``method`` (LZMA with the zip's 4-byte header)."""
    if method == STORED:
        return plain
    if method == DEFLATED:
        deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
        return deflater.compress(plain) + deflater.flush()
    if method == BZIP2:
        return bz2.compress(plain)
    lc, lp, pb = lzma_props
    dict_size = 1 << 16
    body = lzma.compress(plain, lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA1, "lc": lc, "lp": lp, "pb": pb,
                                                           "dict_size": dict_size}])
    return struct.pack("<BBHBI", 9, 4, 5, lc + lp * 9 + pb * 45, dict_size) + body


class Entry:
    """One member as written: its body, and what its headers state (forgeable)."""

    def __init__(self, name: str, plain: bytes, method: int = STORED, body: bytes | None = None,
                 stated_size: int | None = None, crc: int | None = None, flags: int = 0) -> None:
        self.name, self.method, self.flags = name.encode(), method, flags
        self.body = packed(plain, method) if body is None else body
        self.size = len(plain) if stated_size is None else stated_size
        self.crc = zlib.crc32(plain) if crc is None else crc


def zip_of(entries: list[Entry]) -> bytes:
    """A zip archive of ``entries`` exactly as given (Python's zipfile would recompute sizes and CRCs)."""
    out, central = bytearray(), bytearray()
    for entry in entries:
        offset = len(out)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, entry.flags, entry.method, 0, 0x21, entry.crc,
                           len(entry.body), entry.size, len(entry.name), 0) + entry.name + entry.body
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, entry.flags, entry.method, 0, 0x21,
                               entry.crc, len(entry.body), entry.size, len(entry.name), 0, 0, 0, 0, 0,
                               offset) + entry.name
    return bytes(out + central + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries),
                                             len(central), len(out), 0))


def small_checkpoint(path: Path, pickle_entry: Entry) -> Path:
    """A checkpoint holding only ``pickle_entry`` (as data.pkl) and a stored byteorder."""
    path.write_bytes(zip_of([pickle_entry, Entry("ckpt/byteorder", b"little")]))
    return path


PICKLE = pickle.dumps({"epoch": 7, "name": "run"}, protocol=2)


def pickle_entry(**forged) -> Entry:
    return Entry("ckpt/data.pkl", PICKLE, DEFLATED, **forged)
