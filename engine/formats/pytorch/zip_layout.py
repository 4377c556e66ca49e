"""The zip layout (torch >= 1.6): ``<folder>/data.pkl`` plus one stored entry per storage.

Only the central directory and ``data.pkl`` are read (and, in a TorchScript archive, the class
sources' parameter and buffer lists: ``torchscript``). Each storage's bytes are located by its
local file header and mapped from the archive later; the archive itself is never extracted.
"""

from __future__ import annotations

import bz2
import lzma
import os
import struct
import zipfile
import zlib
from typing import Any

from ...errors import FormatError
from ...sources.byte_source import ByteSource, SourceReader
from . import torchscript
from .tensors import StorageRef, storage_from_pid
from .unpickler import PickleStream
from .unpickler import load as unpickle

LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., file name length, extra field length
LOCAL_SIGNATURE = b"PK\x03\x04"
MAX_PICKLE_BYTES = 1 << 30
# torch stores data.pkl uncompressed; a compressed one may not claim to expand more than this
# (deflate of real pickles gives 3-10x; a zip bomb gives 1000x and more). It is inflated here,
# never past its stated size, whatever its headers say.
MAX_EXPANSION = 64
FREE_EXPANSION = 16 << 20  # expanding to this many bytes is harmless at any ratio
BYTEORDERS = ("little", "big")
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, NotImplementedError, RuntimeError,
               EOFError, OSError, KeyError, ValueError, struct.error)


def load(mapped: ByteSource, refused_by_torch: set[str] | None = None) -> tuple[Any, dict[str, str], bool]:
    """The unpickled checkpoint (storages located, not read), the archive's text metadata, and
    whether it is a TorchScript archive (its modules then rewritten as pickled modules)."""
    path = mapped.path
    try:
        with SourceReader(mapped) as file, zipfile.ZipFile(file) as archive:
            infos = {info.filename: info for info in archive.infolist()}
            prefix = _prefix(mapped, infos)
            metadata = {"byteorder": _text(mapped, archive, infos, prefix + "byteorder") or "little"}
            version = _text(mapped, archive, infos, prefix + "version")
            if version:
                metadata["version"] = version
            pickle_info = infos[prefix + "data.pkl"]
            _check_compressed_size(mapped, pickle_info)
            if pickle_info.file_size > MAX_PICKLE_BYTES:
                raise FormatError(path, f"data.pkl claims {pickle_info.file_size} bytes, over the limit of "
                                        f"{MAX_PICKLE_BYTES}")
            data = archive.read(pickle_info) if pickle_info.compress_type == zipfile.ZIP_STORED else \
                _inflate(mapped, pickle_info)
            scripted = torchscript.is_torchscript(list(infos), prefix)
    except FormatError:
        raise
    except zipfile.BadZipFile as exc:
        if str(exc) == "File is not a zip file":  # it starts as a zip (that is how it came here) but has no end
            raise FormatError(path, f"file is truncated: it has {mapped.size} bytes and lacks the directory that "
                                    "ends every complete zip archive") from None
        raise FormatError(path, f"not a readable zip archive: {exc}") from None
    except _ZIP_ERRORS as exc:
        raise FormatError(path, f"not a readable zip archive: {exc}") from None
    if metadata["byteorder"] not in BYTEORDERS:
        raise FormatError(path, f"byteorder entry says {metadata['byteorder']!r:.40}, not little or big")
    records = {name[len(prefix) + 5:]: info for name, info in infos.items() if name.startswith(prefix + "data/")}
    # each storage is located by its 30-byte local header: ask for them all at once (remote: concurrently)
    mapped.prefetch([(info.header_offset, LOCAL_HEADER.size) for info in records.values()
                     if 0 <= info.header_offset <= mapped.size - LOCAL_HEADER.size])
    storages: dict[str, StorageRef] = {}
    big_endian = metadata["byteorder"] == "big"

    def persistent_load(pid: Any) -> StorageRef:
        storage, _ = storage_from_pid(path, pid, legacy=False)
        if storage.key not in storages:  # torch keeps the first reference to a key, as here
            storage.file_offset = _data_offset(mapped, storage, records.get(storage.key))
            storage.big_endian = big_endian
            storages[storage.key] = storage
        return storages[storage.key]

    root = unpickle(PickleStream.over_bytes(path, data, "data.pkl"), persistent_load,
                    refused_by_torch=refused_by_torch)
    if scripted:
        root = torchscript.as_modules(path, root, lambda file: _code(mapped, infos.get(prefix + "code/" + file)))
    return root, metadata, scripted


def _code(mapped: ByteSource, info: zipfile.ZipInfo | None) -> bytes | None:
    """One class source under code/ (torch deflates them), within the same bounds as data.pkl."""
    if info is None:
        return None
    _check_compressed_size(mapped, info)
    if info.file_size > torchscript.MAX_CODE_BYTES:
        raise FormatError(mapped.path, f"zip entry {info.filename!r:.80} claims {info.file_size} bytes, over the "
                                       f"limit of {torchscript.MAX_CODE_BYTES}")
    if info.compress_type == zipfile.ZIP_STORED:
        return mapped.pread(_member_offset(mapped, info, info.filename), info.file_size, f"the zip entry "
                                                                                         f"{info.filename!r:.80}")
    return _inflate(mapped, info)


def _prefix(mapped: ByteSource, infos: dict[str, zipfile.ZipInfo]) -> str:
    """The top folder (any name) holding data.pkl, or none: torch.load refuses a data.pkl at the archive's top
    ("file in archive is not in a subdirectory"), this reader reads it (nothing is lost by reading it)."""
    found = [name[:-len("data.pkl")] for name in infos if name == "data.pkl"
             or (name.endswith("/data.pkl") and name.count("/") == 1)]
    if not found:
        raise FormatError(mapped.path, "zip archive has no data.pkl: not a PyTorch checkpoint")
    if len(found) > 1:
        raise FormatError(mapped.path, f"zip archive has {len(found)} data.pkl entries; a checkpoint has one")
    return found[0]


def _text(mapped: ByteSource, archive: zipfile.ZipFile, infos: dict[str, zipfile.ZipInfo], name: str) -> str | None:
    info = infos.get(name)
    if info is None or info.file_size > 64:
        return None
    _check_compressed_size(mapped, info)
    data = archive.read(info) if info.compress_type == zipfile.ZIP_STORED else _inflate(mapped, info)
    return data.decode("ascii", "replace").strip()


def _check_compressed_size(mapped: ByteSource, info: zipfile.ZipInfo) -> None:
    """zipfile allocates an entry's stated compressed size in one read: a forged one must not exceed the file."""
    if info.compress_size > mapped.size:
        raise FormatError(mapped.path, f"zip entry {info.filename!r:.80} claims {info.compress_size} compressed bytes, "
                                       f"more than the whole file ({mapped.size})")


def _inflate(mapped: ByteSource, info: zipfile.ZipInfo) -> bytes:
    """A compressed member's bytes, decompressed no further than its stated size (a bomb stops there)."""
    path, name = mapped.path, info.filename
    ratio = info.file_size / max(1, info.compress_size)
    if info.file_size > max(FREE_EXPANSION, MAX_EXPANSION * info.compress_size):
        raise FormatError(path, f"zip entry {name!r:.80} would expand {ratio:.0f} times ({info.compress_size} to "
                                f"{info.file_size} bytes), over the limit of {MAX_EXPANSION} (a zip bomb?)")
    if info.flag_bits & 1:
        raise FormatError(path, f"zip entry {name!r:.80} is encrypted")
    raw = mapped.pread(_member_offset(mapped, info, name), info.compress_size, f"the zip entry {name!r:.80}")
    if info.compress_type == zipfile.ZIP_DEFLATED:
        decompressor: Any = zlib.decompressobj(-15)
    elif info.compress_type == zipfile.ZIP_BZIP2:
        decompressor = bz2.BZ2Decompressor()
    elif info.compress_type == zipfile.ZIP_LZMA and len(raw) >= 9:
        decompressor, raw = _lzma_decompressor(path, name, raw)
    else:
        raise FormatError(path, f"zip entry {name!r:.80} uses compression method {info.compress_type}, which "
                                "PyTorch never writes")
    try:
        data = decompressor.decompress(raw, info.file_size + 1)
    except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError) as exc:
        raise FormatError(path, f"zip entry {name!r:.80} does not decompress: {exc}") from None
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise FormatError(path, f"zip entry {name!r:.80} decompresses to other bytes than its header states "
                                f"({'more than ' + str(info.file_size) if len(data) > info.file_size else len(data)} "
                                f"bytes, {info.file_size} stated)")
    return data


def _lzma_decompressor(path: str | os.PathLike, name: str, raw: bytes) -> tuple[lzma.LZMADecompressor, bytes]:
    """A zip LZMA entry's decoder and stream: a 4-byte header (version, properties' size), then the properties
    (lc, lp and pb packed in one byte, the dictionary size), then raw LZMA1. liblzma refuses forged properties
    (lc + lp over 4, pb over 4) as it is built, not as it decodes."""
    (props_size,) = struct.unpack("<H", raw[2:4])
    packed, = struct.unpack("<B", raw[4:5])
    filters = [{"id": lzma.FILTER_LZMA1, "dict_size": struct.unpack("<I", raw[5:9])[0],
                "lc": packed % 9, "lp": packed // 9 % 5, "pb": packed // 45}]
    try:
        return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters), raw[4 + props_size:]
    except lzma.LZMAError as exc:
        raise FormatError(path, f"zip entry {name!r:.80} does not decompress: {exc}") from None


def _member_offset(mapped: ByteSource, info: zipfile.ZipInfo, what: str) -> int:
    """Where a zip entry's (stored or compressed) bytes start, from its local header."""
    signature, name_length, extra_length = LOCAL_HEADER.unpack(
        mapped.pread(info.header_offset, LOCAL_HEADER.size, f"the zip header of {what}"))
    if signature != LOCAL_SIGNATURE:
        raise FormatError(mapped.path, f"{what}: the zip entry header at byte {info.header_offset} is damaged")
    return info.header_offset + LOCAL_HEADER.size + name_length + extra_length


def _data_offset(mapped: ByteSource, storage: StorageRef, info: zipfile.ZipInfo | None) -> int:
    """Where a storage's bytes start in the file, after checking they are stored, whole and in it."""
    path, key = mapped.path, storage.key
    if info is None:
        raise FormatError(path, f"storage {key} has no data/{key} entry in the archive")
    if info.compress_type != zipfile.ZIP_STORED:
        raise FormatError(path, f"storage {key} is compressed; PyTorch stores storages uncompressed")
    if info.file_size != storage.nbytes:
        raise FormatError(path, f"storage {key} holds {info.file_size} bytes but the checkpoint says "
                                f"{storage.nbytes} ({storage.dtype})")
    offset = _member_offset(mapped, info, f"storage {key}")
    if offset + info.file_size > mapped.size:
        raise FormatError(path, f"file is truncated: it has {mapped.size} bytes, but a tensor storage of "
                                f"{info.file_size} bytes at byte {offset} needs {offset + info.file_size}")
    return offset
