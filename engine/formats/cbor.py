"""The CBOR Burnpack needs: decode with Burn's limits, encode exactly as Rust's ciborium does.

ciborium writes definite-length items, the shortest integer heads and the shortest float that
keeps the value (f16, f32, then f64); we do the same so a Burnpack round trip is byte-exact.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import cbor2

MAX_DEPTH = 128  # Burn's reader refuses deeper CBOR


def decode(data: bytes) -> Any:
    """Decode one CBOR item; raises ValueError for malformed, trailing or too deeply nested data."""
    try:
        value = cbor2.loads(data)
    except (cbor2.CBORDecodeError, RecursionError, OverflowError, MemoryError) as exc:
        raise ValueError(f"invalid CBOR: {exc}") from None
    _check_depth(value)
    return value


def _check_depth(value: Any) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"CBOR nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)


def encode(value: Any) -> bytes:
    out = bytearray()
    _encode(value, out)
    return bytes(out)


def _head(major: int, n: int, out: bytearray) -> None:
    if n < 24:
        out.append(major << 5 | n)
    elif n < 1 << 8:
        out += bytes((major << 5 | 24, n))
    elif n < 1 << 16:
        out.append(major << 5 | 25)
        out += n.to_bytes(2, "big")
    elif n < 1 << 32:
        out.append(major << 5 | 26)
        out += n.to_bytes(4, "big")
    else:
        out.append(major << 5 | 27)
        out += n.to_bytes(8, "big")


def _encode(value: Any, out: bytearray) -> None:
    if value is True or value is False:
        out.append(0xF5 if value else 0xF4)
    elif value is None:
        out.append(0xF6)
    elif isinstance(value, int):
        _head(0, value, out) if value >= 0 else _head(1, -1 - value, out)
    elif isinstance(value, float):
        _encode_float(value, out)
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        _head(3, len(raw), out)
        out += raw
    elif isinstance(value, (bytes, bytearray)):
        _head(2, len(value), out)
        out += value
    elif isinstance(value, (list, tuple)):
        _head(4, len(value), out)
        for item in value:
            _encode(item, out)
    elif isinstance(value, dict):
        _head(5, len(value), out)
        for key, item in value.items():
            _encode(key, out)
            _encode(item, out)
    else:
        raise TypeError(f"cannot encode {type(value).__name__} as CBOR")


def _encode_float(value: float, out: bytearray) -> None:
    if math.isnan(value):
        out += b"\xf9\x7e\x00"
        return
    for code, fmt in ((0xF9, ">e"), (0xFA, ">f")):
        try:
            packed = struct.pack(fmt, value)
        except OverflowError:
            continue
        if struct.unpack(fmt, packed)[0] == value:
            out.append(code)
            out += packed
            return
    out.append(0xFB)
    out += struct.pack(">d", value)
