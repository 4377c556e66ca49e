"""The CBOR Burnpack needs: decode with Burn's limits, encode exactly as Rust's ciborium does.

ciborium writes definite-length items, the shortest integer heads and the shortest float that
keeps the value (f16, f32, then f64); we do the same so a Burnpack round trip is byte-exact.
"""

from __future__ import annotations

import math
import struct
from typing import Any

MAX_DEPTH = 128  # Burn's reader refuses deeper CBOR
MAX_INT = 1 << 64  # CBOR integer heads hold 64 bits; wider ones are tagged bignums


class _Refused(ValueError):
    """A CBOR feature Burn never writes and we refuse to decode."""


def _refuse_sharing(*args: Any) -> None:
    raise _Refused("CBOR value sharing (tags 28/29), which Burn never writes")


# Sharing is how a few bytes become a cycle or an exponentially large DAG (cbor2 itself can hang on one).
_SEMANTIC = {28: _refuse_sharing, 29: _refuse_sharing}


def decode(data: bytes) -> Any:
    """Decode one CBOR item; raises ValueError for malformed, too deeply nested or non-plain data.

    Bytes after the item are ignored, as Burn's reader ignores them (it reads one item from the metadata
    slice: crates/burn-store/src/burnpack/reader.rs:209 at v0.21.0).

    Map keys must be text or bytes (as Burn's are): integer keys can be made to collide in Python's
    hash table and turn decoding quadratic.
    """
    import cbor2  # here: writing a Burnpack encodes below and never decodes (1.3 ms of a conversion's start-up)
    try:
        value = cbor2.loads(data, semantic_decoders=_SEMANTIC, strict_hashable_types=True)
    except (cbor2.CBORDecodeError, RecursionError, OverflowError, MemoryError) as exc:
        if "nesting depth" in str(exc) or isinstance(exc, RecursionError):  # cbor2 stops at 400 levels
            raise ValueError(f"CBOR nested deeper than {MAX_DEPTH} levels (over 400)") from None
        reason = exc.__cause__ if isinstance(exc.__cause__, _Refused) else exc
        raise ValueError(f"invalid CBOR: {reason}") from None
    _check_plain(value)
    return value


_PLAIN_LEAVES = {str, bytes, int, float, bool, type(None)}
_CONTAINERS = {dict, list}


def _check_plain(value: Any) -> None:
    """Burn's limit on depth, and the plain data its serde writes: no tagged values, no bignums.

    Tagged values (rationals, bignums, ...) would put unbounded integers and exotic objects into
    error messages, where printing them can itself fail.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if type(item) not in _CONTAINERS:
            _check_leaf(item)
            continue
        if item and depth >= MAX_DEPTH:  # its items would sit deeper than the limit
            raise ValueError(f"CBOR nested deeper than {MAX_DEPTH} levels")
        for child in (item.values() if type(item) is dict else item):
            if type(child) is not str:
                stack.append((child, depth + 1))


def _check_leaf(value: Any) -> None:
    if type(value) is int and not -MAX_INT <= value < MAX_INT:
        raise ValueError("CBOR integer wider than 64 bits (Burn writes none)")
    if type(value) not in _PLAIN_LEAVES:
        raise ValueError(f"CBOR holds a {type(value).__name__} value (a tag Burn never writes)")


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
