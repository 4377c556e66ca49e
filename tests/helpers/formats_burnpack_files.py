"""Burnpack files laid out by hand as Burn's writer lays them out (CBOR by a third-party encoder)."""

from __future__ import annotations

import struct

import cbor2


def burn_file(tensors: dict, data: bytes, *, magic: bytes = b"NRUB", version: int = 1, extra: dict | None = None,
              raw_meta: bytes | None = None) -> bytes:
    """Bytes laid out as Burn's writer lays them out (CBOR by a third-party encoder)."""
    meta = raw_meta if raw_meta is not None else cbor2.dumps({"tensors": tensors, **(extra or {})})
    head = magic + struct.pack("<HI", version, len(meta)) + meta
    head += bytes(-len(head) % 256)
    return head + data


def write(tmp_path, content: bytes, name: str = "m.bpk"):
    path = tmp_path / name
    path.write_bytes(content)
    return path
