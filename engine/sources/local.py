"""The local byte source: a regular file read with positioned reads, mapped only for very large values.

A file can change while it is open (a training job saving in place). Every data read checks, after reading,
that the open file's size and modification time are still those seen at open, so a change gives a
``FormatError`` ("changed on disk"), never the other file's bytes. A file *replaced* by a new one (a rename
over it, as atomic savers do) is another inode: the open one keeps its old, consistent bytes.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from ..errors import FormatError
from . import CHUNK
from .regular_files import NotRegularFile, open_regular

if TYPE_CHECKING:
    import numpy as np

# Tensors up to this size are read into private memory; a larger one is memory-mapped (after a
# check that the file is unchanged) so that viewing a slice of it does not copy it whole.
MAP_ABOVE = 1 << 30


def changed_on_disk(path: str | os.PathLike) -> FormatError:
    return FormatError(path, "changed on disk since it was opened; reload it to read the new contents")


class MappedFile:
    """The local ``ByteSource``: positioned reads, a lazy memory map for very large values, change checks.

    Only a regular file is opened (``regular_files``): a FIFO, device, socket or folder is refused by its kind."""

    def __init__(self, path: str | os.PathLike):
        self.path = path if isinstance(path, Path) else Path(path)
        try:
            self.fd, info = open_regular(path)
        except NotRegularFile as exc:
            raise FormatError(path, "is a folder, not a model file" if exc.kind == "folder" else exc.strerror) from None
        except OSError as exc:
            raise FormatError(path, f"cannot open it in {self.path.absolute().parent}: {exc.strerror or exc}") from None
        self.size = info.st_size
        self._seen = (info.st_size, info.st_mtime_ns)
        self._map: mmap.mmap | None = None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def identity(self) -> tuple[int, int]:
        """Size and modification time (ns) as seen at open: what ``verify`` compares against."""
        return self._seen

    def fileno(self) -> int | None:
        return self.fd if self.fd >= 0 else None

    def sibling(self, name: str) -> "MappedFile":
        """The file ``name`` (a relative path, checked by the caller) next to this one."""
        return MappedFile(self.path.parent / name)

    def prefetch(self, ranges: list[tuple[int, int]]) -> None:
        """Nothing to do locally: a positioned read costs no round trip."""

    def verify(self) -> None:
        """Raise ``FormatError`` if the open file was written or resized since it was opened."""
        info = os.fstat(self.fd)
        if (info.st_size, info.st_mtime_ns) != self._seen:
            raise changed_on_disk(self.path)

    def pread(self, offset: int, length: int, what: str = "data") -> bytes:
        """Exactly ``length`` bytes at ``offset``, or a FormatError saying the file is truncated."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FormatError(self.path, f"file is truncated: {what} needs bytes {offset}..{offset + length} "
                                         f"but the file has {self.size}")
        data = os.pread(self.fd, length, offset)
        if len(data) != length:  # it had them when opened
            raise changed_on_disk(self.path)
        return data

    def array(self, offset: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        """A read-only array of the bytes at ``offset``, read now, from the file as it was opened."""
        import numpy as np
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count == 0:
            return np.zeros(shape, dtype)
        nbytes = count * dtype.itemsize
        if offset < 0 or offset + nbytes > self.size:
            raise FormatError(self.path, f"file is truncated: a tensor needs bytes {offset}..{offset + nbytes} "
                                         f"but the file has {self.size}")
        if nbytes > MAP_ABOVE:
            self.verify()
            if self._map is None:
                self._map = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ)
            array = np.frombuffer(self._map, dtype=dtype, count=count, offset=offset)
            if offset % dtype.alignment:
                array = array.copy()
            return array.reshape(shape)
        raw = np.empty(nbytes, np.uint8)
        self._read_into(memoryview(raw), offset)
        self.verify()  # after reading: the bytes are from the file as opened, or this raises
        array = raw.view(dtype).reshape(shape)
        array.flags.writeable = False
        return array

    def _read_into(self, view: memoryview, offset: int) -> None:
        done = 0
        while done < len(view):
            n = os.preadv(self.fd, [view[done:]], offset + done)
            if n <= 0:
                raise changed_on_disk(self.path)
            done += n

    def release(self, offset: int, length: int) -> None:
        if self._map is None or length <= 0:
            return
        page = mmap.PAGESIZE
        start = offset - offset % page
        end = min(self.size, offset + length)
        try:
            self._map.madvise(mmap.MADV_DONTNEED, start, end - start)
        except (AttributeError, OSError, ValueError):
            pass

    def chunks(self, offset: int, length: int, chunk_size: int = CHUNK) -> Iterator[bytes]:
        end = offset + length
        while offset < end:
            n = min(chunk_size, end - offset)
            chunk = self.pread(offset, n)
            self.verify()
            yield chunk
            offset += n

    def close(self) -> None:
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass  # arrays still view the map; it closes when they are gone
            self._map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
