"""One way in for bytes: every reader takes a ``ByteSource``, never a path.

A byte source is a file's bytes as of the moment it was opened: its ``size``, positioned reads
(``pread``, ``array``, ``chunks``), a ``verify`` that refuses a file changed since then, its
``identity`` (size and mtime locally; size, ETag and Last-Modified remotely) and the ``path``
messages name it by. ``mapped.MappedFile`` is the local one (pread, mmap for huge values);
``engine.sources.http.RemoteFile`` reads byte ranges over HTTP(S) through a block cache. Formats, limits
and changed-file checks are written once against this protocol and so work the same on both.

``fileno()`` gives a local descriptor where there is one (export copies in the kernel with it;
a remote source returns ``None`` and export streams ``chunks``). ``sibling(name)`` opens the file
next to this one (a sharded index's shards), on the same disk or the same server.
``prefetch(ranges)`` says which small ranges a reader will want next (a zip's local headers), so a
remote source fetches them together rather than one round trip each.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, TypeVar, runtime_checkable

from ..errors import FormatError
from . import CHUNK
from .downloads import report
from .local import MappedFile
from .locations import Location, RemoteLocation, is_url

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class ByteSource(Protocol):
    path: Location
    size: int

    @property
    def name(self) -> str: ...

    @property
    def identity(self) -> tuple: ...

    def pread(self, offset: int, length: int, what: str = "data") -> bytes: ...

    def array(self, offset: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray: ...

    def chunks(self, offset: int, length: int, chunk_size: int = CHUNK) -> Iterator[bytes]: ...

    def verify(self) -> None: ...

    def release(self, offset: int, length: int) -> None: ...

    def fileno(self) -> int | None: ...

    def prefetch(self, ranges: list[tuple[int, int]]) -> None: ...

    def sibling(self, name: str) -> "ByteSource": ...

    def close(self) -> None: ...




def open_source(where: "str | os.PathLike | RemoteLocation | ByteSource") -> ByteSource:
    """A byte source for a path, a URL (``http(s)://``, ``hf://``) or a source already open (returned as is)."""
    if not isinstance(where, (str, PurePath, RemoteLocation)) and isinstance(where, ByteSource):
        return where
    if isinstance(where, RemoteLocation) or is_url(where):
        from .remote import open_remote  # the network stack loads only when a URL is opened
        return open_remote(str(where))
    refuse_other_schemes(where)
    return MappedFile(where)


T = TypeVar("T")


def read_with(where: "str | os.PathLike | RemoteLocation | ByteSource", read: Callable[[ByteSource], T]) -> T:
    """``read(source)`` of ``where``'s byte source: the store it returns owns the source, and a failure closes it."""
    source = open_source(where)
    try:
        return read(source)
    except BaseException:
        source.close()
        raise


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+)://")


def refuse_other_schemes(where: "str | os.PathLike") -> None:
    """Refuse ``s3://``, ``gs://``, ``ftp://``... by name: read as a path they would fail as a missing folder."""
    scheme = _SCHEME.match(where) if isinstance(where, str) else None
    if scheme:
        raise FormatError(where, f"{scheme.group(1)}:// addresses are not read (only http://, https:// and hf://); "
                                 "download the file and open it from disk")


class SourceReader(io.RawIOBase):
    """A seekable, read-only file object over a byte source (for ``zipfile`` and ``tarfile``)."""

    def __init__(self, source: ByteSource):
        super().__init__()
        self.source = source
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.source.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer) -> int:  # type: ignore[override]
        n = max(0, min(len(buffer), self.source.size - self.position))
        if n:
            buffer[:n] = self.source.pread(self.position, n)
            self.position += n
        return n


def spool(source: ByteSource) -> Path:
    """Download a source whole to a new temporary file, for a reader that must map it; the caller removes it.

    Only a remote source is ever spooled, and only up to the size a full download may have
    (``engine.sources.http.MAX_DOWNLOAD_VARIABLE``); nothing is left behind when it fails.
    """
    from .remote import check_full_download
    check_full_download(source.path, source.size, "this kind of file is read from a whole local copy")
    fd, name = tempfile.mkstemp(prefix="store-studio-download-")
    try:
        with os.fdopen(fd, "wb") as out:
            done = 0
            for chunk in source.chunks(0, source.size):
                out.write(chunk)
                done += len(chunk)
                report(done, source.size)  # the window's status bar; raises to cancel
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)
