"""SafeTensors files written by hand: a header (a dict, or raw bytes to break the format) and the data after it."""

from __future__ import annotations

import json
import struct


def write(tmp_path, header: dict | bytes, data: bytes, name: str = "m.safetensors"):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path = tmp_path / name
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path
