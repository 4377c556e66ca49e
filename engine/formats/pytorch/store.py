"""The opened checkpoint: each tensor a strided view into a storage mapped from the file.

Reads touch only the tensor's own span of its storage. A tensor laid out densely in a
little-endian storage is also a plain byte range of the file, which export copies in the kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from ...errors import FormatError
from ...sources import CHUNK
from ...sources.byte_source import ByteSource
from ...sources.locations import Location
from ...store import Store, TensorEntry, make_entries
from .tensors import StorageRef, TensorRef, check_total

if TYPE_CHECKING:
    import numpy as np

NAME = "pytorch"


class PyTorchStore(Store):
    format = NAME
    # Globals the file names that torch.load(weights_only=True) refuses by default (placeholders, numpy ...)
    foreign_classes: tuple[str, ...] = ()
    # Names made from keys burn-store refuses (tuples, floats, booleans): str(key), as the note says
    guessed_keys: tuple[str, ...] = ()
    # The checkpoint's top-level keys, when it is a dict opened whole: what its branches are named by
    top_level_keys: tuple[str, ...] = ()

    def __init__(self, path: Location, mapped: ByteSource, tensors: list[tuple[str, TensorRef]],
                 **kwargs: Any):
        self._mapped = mapped
        self._tensors = dict(tensors)
        offsets, sizes = [], []
        for name, ref in tensors:
            ref.check(path, name)
            where = self._file_range(ref)
            offsets.append(where[0] if where else None)
            sizes.append(ref.nbytes)
        check_total(path, sum(sizes), mapped.size)
        refs = [ref for _, ref in tensors]
        entries = make_entries([name for name, _ in tensors], [ref.dtype for ref in refs], [ref.shape for ref in refs],
                               sizes, [None] * len(refs), offsets)
        super().__init__(path, entries, **kwargs)

    # --- data -----------------------------------------------------------------------------
    def _read(self, entry: TensorEntry) -> np.ndarray:
        import numpy as np
        ref = self._tensors[entry.name]
        dtype = ref.dtype.numpy
        if ref.numel == 0:
            return np.zeros(ref.shape, dtype)
        base = self._span(ref)
        # np.ndarray over the span, not as_strided: the latter cannot hold ml_dtypes (bf16, float8)
        # a dim of size 1 never steps, so its stride (which may be forged past int64 bytes) is irrelevant
        strides = tuple(s * ref.itemsize if d > 1 else 0 for d, s in zip(ref.shape, ref.stride))
        view = np.ndarray(ref.shape, base.dtype, buffer=base, strides=strides)
        view.flags.writeable = False
        return _to_little_endian(view, ref) if ref.storage.big_endian else view

    def byte_range(self, name: str) -> tuple[int, int, int] | None:
        self._check_open()
        return self.entry_byte_range(self.entry(name))

    def verify(self, name: str) -> None:
        self._check_open()
        self._mapped.verify()

    def iter_bytes(self, name: str, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        """Plain ranges stream from the file; other views a block of rows at a time."""
        self._check_open()
        return self.entry_iter_bytes(self.entry(name), chunk_size)

    def release(self, name: str) -> None:
        self.entry_release(self.entry(name))

    def entry_byte_range(self, entry: TensorEntry) -> tuple[int, int, int] | None:
        self._check_open()
        where = self._file_range(self._tensors[entry.name])
        fd = self._mapped.fileno()
        if where is None or fd is None:  # no plain range, or a remote file: export streams ``iter_bytes``
            return None
        self._mapped.verify()
        return fd, *where

    def entry_iter_bytes(self, entry: TensorEntry, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        self._check_open()
        ref = self._tensors[entry.name]
        where = self._file_range(ref)
        if where:
            return self._mapped.chunks(*where, chunk_size)
        return _row_blocks(self.read(entry.name), chunk_size)

    def entry_release(self, entry: TensorEntry) -> None:
        ref = self._tensors[entry.name]
        if ref.storage.file_offset is not None and ref.numel:
            self._mapped.release(ref.storage.file_offset + ref.offset * ref.itemsize, ref.span * ref.itemsize)

    def close(self) -> None:
        if not self.closed:
            self._mapped.close()
        super().close()

    # --- helpers --------------------------------------------------------------------------
    def _file_range(self, ref: TensorRef) -> tuple[int, int] | None:
        """``(absolute offset, length)`` when the tensor's bytes lie as-is in the file."""
        storage = ref.storage
        if storage.file_offset is None or storage.big_endian or not ref.contiguous or ref.numel == 0:
            return None
        return storage.file_offset + ref.offset * ref.itemsize, ref.nbytes

    def _span(self, ref: TensorRef) -> np.ndarray:
        """The storage elements from the view's first to its last, as a flat array."""
        import numpy as np
        storage: StorageRef = ref.storage
        dtype = ref.dtype.numpy
        start = ref.offset * ref.itemsize
        if storage.data is not None:
            return np.frombuffer(storage.data, dtype, ref.span, start)
        if storage.file_offset is None:
            raise FormatError(self.path, f"storage {storage.key} has no data in the file")
        return self._mapped.array(storage.file_offset + start, dtype, (ref.span,))


def _to_little_endian(view: np.ndarray, ref: TensorRef) -> np.ndarray:
    """Swap each number's bytes (each half of a complex number separately)."""
    import numpy as np
    unit = ref.itemsize // 2 if ref.dtype.kind == "complex" else ref.itemsize
    raw = np.ascontiguousarray(view).reshape(-1).view(np.uint8).reshape(-1, unit)[:, ::-1]
    return np.ascontiguousarray(raw).reshape(-1).view(view.dtype).reshape(ref.shape)


def _row_blocks(array: np.ndarray, chunk_size: int) -> Iterator[memoryview]:
    """Contiguous bytes of a strided view, copying only a block of rows at a time."""
    import numpy as np
    if array.ndim == 0 or array.size == 0:
        yield memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
        return
    row_bytes = max(1, array[0].nbytes)
    rows = max(1, chunk_size // row_bytes)
    for start in range(0, array.shape[0], rows):
        block = np.ascontiguousarray(array[start:start + rows])
        yield memoryview(block.reshape(-1).view(np.uint8))
