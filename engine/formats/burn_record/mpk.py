"""NamedMpk records (``rmp_serde::encode::write_named``): index the msgpack once, map the tensors.

The ``msgpack`` package decodes everything except byte strings: a tensor's ``bytes`` is located
from its header (``bin 8/16/32``) and left in the file, and decoding restarts after it. So opening
a 1 GB record reads a few kilobytes per tensor and holds none of their bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack

from ...errors import FormatError
from ...sources.byte_source import ByteSource
from .named import Blob
from .record import MAX_DEPTH

READ_SIZE = 4096  # bytes the decoder reads ahead; a restart after each tensor rereads at most this
MAX_BUFFER = 100 << 20  # the longest string or non-tensor byte string, as Burnpack's metadata limit
_BIN_LENGTH = {0xC4: 1, 0xC5: 2, 0xC6: 4}
_MAPS = {0xDE, 0xDF}
_ARRAYS = {0xDC, 0xDD}
_ERRORS = (msgpack.OutOfData, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError, TypeError,
           UnicodeDecodeError)


def sniff(head: bytes) -> bool:
    """``write_named`` of ``BurnRecord``: a map whose first key is "metadata"."""
    return len(head) >= 10 and (0x81 <= head[0] <= 0x8F or head[0] == 0xDE) and b"\xa8metadata" in head[:12]


def index(mapped: ByteSource, shown: Path) -> dict:
    """The record's root map, with every ``bin`` payload as a ``Blob`` (offset and length in the file)."""
    cursor = _Cursor(mapped, shown)
    root = cursor.value([], 0)
    if not isinstance(root, dict):
        raise FormatError(shown, "the msgpack record is not a map")
    return root


def _where(parts: list[str]) -> str:
    return ".".join(parts) or "the root"


class _Reader:
    """The file from a position on, for the decoder: positioned reads, never the whole file."""

    def __init__(self, mapped: ByteSource, pos: int):
        self.mapped, self.pos = mapped, pos

    def read(self, n: int) -> bytes:
        data = self.mapped.pread(self.pos, max(0, min(n, self.mapped.size - self.pos)))
        self.pos += len(data)
        return data


class _Cursor:
    def __init__(self, mapped: ByteSource, shown: Path):
        self.mapped, self.shown = mapped, shown
        self._peeked = (0, b"")  # a block of the file, so that telling each value's type is no syscall
        self._restart(0)

    def _restart(self, pos: int) -> None:
        self.base = pos
        self.unpacker = msgpack.Unpacker(_Reader(self.mapped, pos), read_size=READ_SIZE, raw=False,
                                         strict_map_key=False, max_buffer_size=MAX_BUFFER)

    @property
    def pos(self) -> int:
        return self.base + self.unpacker.tell()

    def _type_at(self, pos: int) -> int:
        start, block = self._peeked
        if not start <= pos < start + len(block):
            block = self.mapped.pread(pos, min(READ_SIZE, self.mapped.size - pos), "a msgpack type")
            self._peeked = start, block = pos, block
        return block[pos - start]

    def value(self, parts: list[str], depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise FormatError(self.shown, f"the record is nested deeper than {MAX_DEPTH} levels at "
                                          f"{'.'.join(parts[:8])}...")
        pos = self.pos
        if pos >= self.mapped.size:
            raise FormatError(self.shown, f"file is truncated: {_where(parts)} starts at byte {pos}, the end of "
                                          "the file")
        kind = self._type_at(pos)
        try:
            if 0x80 <= kind <= 0x8F or kind in _MAPS:
                result = {}
                for _ in range(self.unpacker.read_map_header()):
                    key = self.value(parts + ["<key>"], depth + 1)
                    if not isinstance(key, (str, int)):
                        raise FormatError(self.shown, f"{_where(parts)}: a map key at byte {pos} is not text or a "
                                                      "number")
                    result[key] = self.value(parts + [str(key)], depth + 1)
                return result
            if 0x90 <= kind <= 0x9F or kind in _ARRAYS:
                return [self.value(parts + [str(i)], depth + 1) for i in range(self.unpacker.read_array_header())]
            if kind in _BIN_LENGTH:
                return self._blob(pos, _BIN_LENGTH[kind], _where(parts))
            return self.unpacker.unpack()
        except FormatError:
            raise
        except _ERRORS as exc:
            problem = "file is truncated" if isinstance(exc, msgpack.OutOfData) else f"not valid msgpack ({exc})"
            raise FormatError(self.shown, f"{problem} at {_where(parts)} (byte {pos})") from None

    def _blob(self, pos: int, width: int, where: str) -> Blob:
        length = int.from_bytes(self.mapped.pread(pos + 1, width, f"the length of {where}"), "big")
        start = pos + 1 + width
        if start + length > self.mapped.size:
            raise FormatError(self.shown, f"file is truncated: {where} needs bytes {start}..{start + length} "
                                          f"but the file has {self.mapped.size}")
        self._restart(start + length)
        return Blob(start, length)
