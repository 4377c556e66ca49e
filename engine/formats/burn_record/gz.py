"""The ``.gz`` recorders: decompress once, streaming, to a temporary file that is then mapped.

A gzip bomb is stopped while it inflates: by an absolute size and by the ratio of output to
input, both checked before each chunk is written.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from ... import humanize
from ...errors import FormatError

if TYPE_CHECKING:
    from ...sources.byte_source import ByteSource

MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20
MAX_SIZE = 64 << 30  # a record larger than this decompressed is refused
MAX_RATIO = 1000  # weights compress a few percent; zeros (a bomb) compress about 1000:1
MIN_ALLOWANCE = 64 << 20  # small files may expand past the ratio up to this size
PREFIX = "store-studio-record-"


def sniff(head: bytes) -> bytes | None:
    """The first decompressed bytes of a gzip stream (or None when ``head`` is not gzip)."""
    if head[:2] != MAGIC:
        return None
    try:
        return zlib.decompressobj(wbits=31).decompress(head, 4096)
    except zlib.error:
        return None


def inflate(source: "ByteSource") -> Path:
    """Decompress ``source`` (local or remote, read a chunk at a time) to a new temporary file; the caller removes it."""
    path = source.path
    limit = min(MAX_SIZE, max(MIN_ALLOWANCE, source.size * MAX_RATIO))
    fd, name = tempfile.mkstemp(prefix=PREFIX, suffix=".record")
    out_path = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            decoder, written = zlib.decompressobj(wbits=31), 0
            for chunk in source.chunks(0, source.size, CHUNK):
                while chunk:
                    data = decoder.decompress(chunk, CHUNK)
                    chunk = decoder.unconsumed_tail
                    written += len(data)
                    if written > limit:
                        raise FormatError(path, f"decompresses to more than {humanize.size(limit)} (over "
                                                f"{MAX_RATIO}x its size or {humanize.size(MAX_SIZE)}): refused as a "
                                                "possible gzip bomb")
                    out.write(data)
                    if decoder.eof:
                        break
                if decoder.eof:
                    break
            if not decoder.eof:
                raise FormatError(path, f"the gzip stream is truncated (ends after {written} decompressed bytes)")
    except zlib.error as exc:
        out_path.unlink(missing_ok=True)
        raise FormatError(path, f"the gzip stream is corrupt: {exc}") from None
    except OSError as exc:
        out_path.unlink(missing_ok=True)
        raise FormatError(path, f"cannot decompress: {exc.strerror or exc}") from None
    except BaseException:
        out_path.unlink(missing_ok=True)
        raise
    return out_path
