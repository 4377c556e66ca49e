"""A two-value F32 tensor and a SafeTensors file written by hand, shared by the tests of each reader's limits."""

from __future__ import annotations

import json
import struct

import numpy as np

F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
VALUES = np.array([1.5, -2.25], "<f4")


def safetensors_file(path, header: dict | bytes, data: bytes):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path
