"""The tar layout (torch before 0.1.10): members ``sys_info``, ``storages``, ``tensors``, ``pickle``.

``storages``: a pickled count, then per storage a pickled ``(key, location, storage_class)``,
an element count and the raw bytes, then a pickled list of views ``(key, root, offset, size)``.
``tensors``: a pickled count, then per tensor a pickled ``(key, storage_key, tensor_class)``,
``ndim`` (i32 plus 4 padding bytes), sizes and strides (i64 each) and the storage offset (i64).
``pickle``: the checkpoint, whose persistent ids are tensor or storage keys.
burn-store's fixtures have no ``tensors`` member and no view list: their ``pickle`` passes
``('storage', class, key, location, numel)`` tuples straight to ``_rebuild_tensor_v2``.
The tar is never extracted: storages are mapped straight from the member data.
"""

from __future__ import annotations

import struct
import tarfile
from typing import Any

from ...errors import FormatError
from ...sources.byte_source import ByteSource, SourceReader
from .allowlist import Global
from .tensors import MAX_DIMS, StorageRef, TensorRef, storage_dtype, storage_from_pid, tensor
from .unpickler import PickleStream
from .unpickler import load as unpickle

MEMBERS = ("sys_info", "storages", "tensors", "pickle")
OPTIONAL = ("tensors",)  # absent in the layout burn-store's fixtures use


def load(mapped: ByteSource, refused_by_torch: set[str] | None = None) -> tuple[Any, dict[str, str]]:
    path = mapped.path
    members = _members(mapped)
    sys_info = unpickle(_stream(mapped, members["sys_info"], "sys_info"), refused_by_torch=refused_by_torch)
    little = not isinstance(sys_info, dict) or sys_info.get("little_endian", True) is not False
    storages = _storages(mapped, _stream(mapped, members["storages"], "storages"), little)
    if "tensors" not in members:
        root = unpickle(_stream(mapped, members["pickle"], "pickle"), lambda pid: _by_tuple(path, pid, storages),
                        tuple_ids=True, refused_by_torch=refused_by_torch)
        return root, {"byteorder": "little" if little else "big"}
    tensors = _tensors(mapped, _stream(mapped, members["tensors"], "tensors"), storages)

    def persistent_load(pid: Any) -> Any:
        if isinstance(pid, tuple) and pid[:1] == ("module",) and len(pid) == 4 and isinstance(pid[1], Global):
            return pid[1]  # ('module', class, source file, source): a pickled nn.Module names its class
        if isinstance(pid, tuple):
            raise FormatError(path, f"the checkpoint refers to outside data {pid!r:.80}, which is not a tensor")
        key = str(pid)
        if key in tensors:
            return tensors[key]
        if key in storages:
            return storages[key]
        raise FormatError(path, f"the checkpoint refers to tensor {key!r:.40}, which the archive does not hold")

    root = unpickle(_stream(mapped, members["pickle"], "pickle"), persistent_load,
                    refused_by_torch=refused_by_torch)
    return root, {"byteorder": "little" if little else "big"}


def _members(mapped: ByteSource) -> dict[str, tarfile.TarInfo]:
    try:
        with SourceReader(mapped) as file, tarfile.open(fileobj=file, mode="r:") as archive:
            found = {m.name: m for m in archive.getmembers() if m.name in MEMBERS}
    except (tarfile.TarError, OSError, EOFError, ValueError, UnicodeDecodeError) as exc:
        raise FormatError(mapped.path, f"not a readable tar archive: {exc}") from None
    for name in MEMBERS:
        member = found.get(name)
        if member is None and name in OPTIONAL:
            continue
        if member is None or not member.isreg():
            raise FormatError(mapped.path, f"tar archive has no '{name}' member: not a PyTorch checkpoint")
        if member.offset_data + member.size > mapped.size:
            raise FormatError(mapped.path, f"file is truncated: it has {mapped.size} bytes, but tar member '{name}' "
                                           f"needs {member.offset_data + member.size}")
    return found


IN_MEMORY_MEMBER = 16 << 20  # a pickle member up to this size is read whole and decoded by index, as data.pkl is


def _stream(mapped: ByteSource, member: tarfile.TarInfo, name: str) -> PickleStream:
    """The member's pickles: read whole when small (the interpreter's in-memory loop, a fifth of the CPU of a
    buffered read per opcode), streamed otherwise (``storages`` holds the raw tensor bytes too)."""
    what = f"the tar '{name}' member"
    if name != "storages" and member.size <= IN_MEMORY_MEMBER:
        return PickleStream.over_bytes(mapped.path, mapped.pread(member.offset_data, member.size, what), what)
    return PickleStream(mapped.path, mapped.pread, member.offset_data, member.offset_data + member.size, what)


def _storages(mapped: ByteSource, stream: PickleStream, little: bool) -> dict[str, StorageRef]:
    path = mapped.path
    storages: dict[str, StorageRef] = {}
    for _ in range(_number(path, unpickle(stream), stream)):
        record = unpickle(stream)
        if not isinstance(record, tuple) or len(record) != 3:
            raise FormatError(path, f"storage record {record!r:.80} is not (key, location, storage class)")
        key, _location, kind = record
        dtype = storage_dtype(path, kind)
        count = int.from_bytes(stream.read(8), "little" if little else "big", signed=True)
        if count < 0:
            raise FormatError(path, f"storage {key} has a negative size")
        storage = StorageRef(str(key), dtype, count * (dtype.itemsize or 1), file_offset=stream.pos,
                             big_endian=not little)
        stream.skip(storage.nbytes)
        storages[storage.key] = storage
    views = unpickle(stream) if stream.pos < stream.end else []  # burn-store's fixtures end here
    for view in views if isinstance(views, list) else [views]:
        if not isinstance(view, tuple) or len(view) != 4 or str(view[1]) not in storages:
            raise FormatError(path, f"storage view {view!r:.80} is not (key, known root key, offset, size)")
        key, root_key, offset, size = view
        root = storages[str(root_key)]
        ref = tensor(path, root, offset, (size,), (1,))  # checks the numbers like any view
        ref.check(path, f"storage view {key}")
        storages[str(key)] = StorageRef(str(key), root.dtype, ref.nbytes,
                                        file_offset=root.file_offset + ref.offset * ref.itemsize,  # type: ignore[operator]
                                        big_endian=root.big_endian)
    return storages


def _by_tuple(path: Any, pid: Any, storages: dict[str, StorageRef]) -> StorageRef:
    """A ``('storage', class, key, location, numel)`` tuple, checked against the storage it names."""
    wanted, _ = storage_from_pid(path, pid, legacy=False)
    found = storages.get(wanted.key)
    if found is None:
        raise FormatError(path, f"the checkpoint refers to storage {wanted.key!r:.40}, which the archive does not hold")
    if found.dtype != wanted.dtype or found.nbytes < wanted.nbytes:
        raise FormatError(path, f"storage {wanted.key} holds {found.nbytes} bytes of {found.dtype} but the checkpoint "
                                f"says {wanted.nbytes} bytes of {wanted.dtype}")
    return found


def _tensors(mapped: ByteSource, stream: PickleStream, storages: dict[str, StorageRef]) -> dict[str, TensorRef]:
    path = mapped.path
    tensors: dict[str, TensorRef] = {}
    for _ in range(_number(path, unpickle(stream), stream)):
        record = unpickle(stream)
        if not isinstance(record, tuple) or len(record) != 3 or str(record[1]) not in storages:
            raise FormatError(path, f"tensor record {record!r:.80} is not (key, known storage key, tensor class)")
        (ndim,) = struct.unpack("<i", stream.read(4))
        if not 0 <= ndim <= MAX_DIMS:
            raise FormatError(path, f"tensor {record[0]} claims {ndim} dimensions")
        stream.skip(4)  # the legacy encoding wrote ndim as eight bytes
        size = struct.unpack(f"<{ndim}q", stream.read(8 * ndim))
        stride = struct.unpack(f"<{ndim}q", stream.read(8 * ndim))
        (offset,) = struct.unpack("<q", stream.read(8))
        tensors[str(record[0])] = tensor(path, storages[str(record[1])], offset, size, stride)
    return tensors


def _number(path: Any, value: Any, stream: PickleStream) -> int:
    """A record count, which cannot exceed the bytes left to hold the records."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= stream.end - stream.pos:
        raise FormatError(path, f"{stream.what} claims {value!r:.40} records")
    return value
