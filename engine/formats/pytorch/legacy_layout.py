"""A row of pickles in one stream: the legacy layout, and plain pickles without tensors.

Legacy (torch 0.1.10 to 1.5, and ``_use_new_zipfile_serialization=False`` today): the magic
number, the protocol version (1001), a sys_info dict, the checkpoint (storages as persistent
ids), the list of storage keys, then each storage as a u64 element count and its raw bytes.
Only the pickles and the eight-byte counts are read; the storages are mapped later.
"""

from __future__ import annotations

from typing import Any

from ...errors import FormatError
from ...sources.byte_source import ByteSource
from .allowlist import Global
from .tensors import StorageRef, storage_from_pid, storage_view
from .unpickler import PickleStream
from .unpickler import load as unpickle

MAGIC = 0x1950A86A20F9469CFC6C
PROTOCOL = 1001


def load(mapped: ByteSource, refused_by_torch: set[str] | None = None) -> tuple[Any, str, dict[str, str]]:
    """The checkpoint, ``"legacy"`` or ``"pickle"``, and text metadata."""
    path = mapped.path
    stream = PickleStream(path, mapped.pread, 0, mapped.size)
    first = unpickle(stream, refused_by_torch=refused_by_torch)  # a plain pickle is the checkpoint
    if type(first) is not int or first != MAGIC:
        return first, "pickle", {}
    protocol = unpickle(stream)
    if protocol != PROTOCOL:
        raise FormatError(path, f"legacy checkpoint protocol {protocol!r:.40} is not {PROTOCOL}")
    sys_info = unpickle(stream, refused_by_torch=refused_by_torch)
    little = not isinstance(sys_info, dict) or sys_info.get("little_endian", True) is not False
    roots: dict[str, StorageRef] = {}
    views: dict[str, StorageRef] = {}

    def persistent_load(pid: Any) -> Any:
        if isinstance(pid, tuple) and pid[:1] == ("module",) and len(pid) == 4 and isinstance(pid[1], Global):
            return pid[1]  # torch.save(model) names each module class with its source; torch returns the class
        storage, view = storage_from_pid(path, pid, legacy=True)
        root = roots.setdefault(storage.key, storage)
        if view is None:
            return root
        storage = storage_view(path, root, view)
        return views.setdefault(storage.key, storage)

    stream.what = "the checkpoint pickle"
    root_object = unpickle(stream, persistent_load, refused_by_torch=refused_by_torch)
    stream.what = "the storage key list"
    keys = unpickle(stream)
    if not isinstance(keys, list):
        raise FormatError(path, "the legacy storage key list is not a list")
    _locate(mapped, roots, [str(k) for k in keys], stream.pos, little)
    for view in views.values():
        root_key, offset = view.view_of  # type: ignore[misc]
        root = roots[root_key]
        if offset + view.nbytes > root.nbytes:
            raise FormatError(path, f"storage view {view.key} reaches past the end of storage {root_key}")
        view.file_offset, view.big_endian = root.file_offset + offset, root.big_endian  # type: ignore[operator]
    return root_object, "legacy", {"byteorder": "little" if little else "big"}


def _locate(mapped: ByteSource, roots: dict[str, StorageRef], keys: list[str], pos: int, little: bool) -> None:
    """Walk the storages after the pickles: a count, then the bytes, in key-list order."""
    path = mapped.path
    order = "little" if little else "big"
    for key in keys:
        storage = roots.get(key)
        if storage is None or storage.file_offset is not None:
            raise FormatError(path, f"storage {key} is listed {'twice' if storage else 'but never used'}")
        count = int.from_bytes(mapped.pread(pos, 8, f"the size of storage {key}"), order, signed=True)
        itemsize = storage.dtype.itemsize or 1
        if count < 0 or count * itemsize != storage.nbytes:
            raise FormatError(path, f"storage {key} holds {count} elements but the checkpoint says "
                                    f"{storage.nbytes // itemsize}")
        if pos + 8 + storage.nbytes > mapped.size:
            raise FormatError(path, f"file is truncated: it has {mapped.size} bytes, but a tensor storage of "
                                    f"{storage.nbytes} bytes at byte {pos + 8} needs {pos + 8 + storage.nbytes}")
        storage.file_offset, storage.big_endian = pos + 8, not little
        pos += 8 + storage.nbytes
    missing = [key for key, storage in roots.items() if storage.file_offset is None]
    if missing:
        raise FormatError(path, f"storage {missing[0]} has no data (it is not in the storage key list)")
