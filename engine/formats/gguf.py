"""GGUF (``.gguf``), llama.cpp's format: read only, the header alone at open, values through ``gguf.quants``.

Layout (llama.cpp ``docs/gguf.md``; gguf 0.19.0 ``gguf_reader.py:132-330`` reads the same): magic ``GGUF``, u32
version (2 or 3), u64 tensor count, u64 key-value count, the key-values (a string key, a u32 value type, the
value), then per tensor a string name, u32 dimension count, u64 dimensions innermost first (``ne[0]``), u32 GGML
type and u64 offset into the data section, which starts at the next multiple of ``general.alignment`` (32 by
default). Strings are a u64 length and UTF-8 bytes; an array is a u32 item type, a u64 count and the items.

Why not ``gguf.GGUFReader`` for the header: it maps the whole file with ``np.memmap`` (a local file only, where
every other format here also opens remotely by ranges), and it turns every array item into its own numpy view with
no bound on counts, so a tokenizer of 150,000 strings costs 450,000 objects and a hostile count never ends. This
reader takes the header through positioned reads a window at a time, checks every count and length against the
bytes left before it loops, and keeps an array's length and first items; the type table and every value still come
from the ``gguf`` package (``engine/ggml.py``). Its results are tested against ``GGUFReader`` on every test file.
Shapes are in numpy/PyTorch order (``ne`` reversed), as every other format here gives them.
"""

from __future__ import annotations

import os
import struct
from typing import Any

from .. import ggml
from ..errors import FormatError, shown
from ..sources.byte_source import ByteSource, read_with
from ..store import TensorEntry
from .mapped import RangeStore, build_entries

NAME = "gguf"
LABEL = "GGUF"
EXTENSIONS = (".gguf",)
MAGIC = b"GGUF"
VERSIONS = (2, 3)  # version 1 (2023) had 32-bit counts; GGUFReader reads 2 and 3 too (gguf_reader.py:36)
DEFAULT_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT
MAX_TENSORS = 100_000  # as Burnpack's limit; the largest published models have a few thousand
MAX_KEYS = 100_000
MAX_DIMS = 4  # GGML_MAX_DIMS (ggml.h): llama.cpp refuses more
MAX_STRING = 16 << 20  # bytes of a text value (a chat template is a few KiB)
MAX_NAME = 4096  # bytes of a key or tensor name (llama.cpp's GGML_MAX_NAME is 64; longer names are shown, not refused)
MAX_ARRAY_DEPTH = 4  # arrays of arrays (llama.cpp writes none)
KEPT_ITEMS = 8  # an array's first items kept to show (its length is always kept)
MAX_TENSOR_BYTES = 1 << 40
MAX_ITEMS = 1 << 24  # items of one array (the largest tokenizers hold a few hundred thousand)
MAX_HEADER = 256 << 20  # bytes of key-values and tensor infos (a tokenizer takes tens of MiB at most)
WINDOW = 1 << 20  # header bytes read at a time
SCALARS = {0: ("UINT8", "<B"), 1: ("INT8", "<b"), 2: ("UINT16", "<H"), 3: ("INT16", "<h"), 4: ("UINT32", "<I"),
           5: ("INT32", "<i"), 6: ("FLOAT32", "<f"), 7: ("BOOL", "<?"), 10: ("UINT64", "<Q"), 11: ("INT64", "<q"),
           12: ("FLOAT64", "<d")}  # GGUFValueType (gguf constants.py) with the struct codes of its scalars
STRING, ARRAY = 8, 9
U32, U64 = struct.Struct("<I"), struct.Struct("<Q")


def sniff(head: bytes) -> bool:
    return head[:4] == MAGIC


class GGUFArray(dict):
    """A key's array value as kept: its item type, its length and its first ``KEPT_ITEMS`` items (JSON-able)."""

    def text(self) -> str:
        items = ", ".join(_item_text(v) for v in self["first"])
        more = ", …" if self["length"] > len(self["first"]) else ""
        return f"[{self['length']:,} × {self['type']}] {items}{more}"


def _item_text(value: Any) -> str:
    return value.text() if isinstance(value, GGUFArray) else repr(value) if isinstance(value, str) else str(value)


class GGUFStore(RangeStore):
    """A GGUF file: dense types read as they are stored, block types (Q4_K, Q8_0...) as ``gguf``'s F32 values.

    ``keys`` holds the key-values as read (arrays as ``GGUFArray``); ``metadata`` shows each as text.
    """

    format = NAME

    def read_entry(self, entry: TensorEntry) -> Any:
        if entry.dtype.kind != ggml.KIND:
            return super().read_entry(entry)
        self._check_open()
        read = self._file(entry.name)
        offset = entry.offset or 0
        try:
            return ggml.BlockValues(entry.dtype.name, entry.shape,
                                    lambda start, length: read.pread(offset + start, length, f"tensor {entry.name!r}")
                                    ).array()
        except ValueError as exc:
            raise FormatError(self.path, f"tensor {entry.name!r}: {exc}") from None


def open(where: "str | os.PathLike | ByteSource", **options: Any) -> GGUFStore:
    return read_with(where, _open)


def _open(source: ByteSource) -> GGUFStore:
    path, header = source.path, _Header(source)
    if header.take(4, "the magic number") != MAGIC:
        raise FormatError(path, "not a GGUF file (wrong magic number)")
    version = header.u32("the version")
    if version not in VERSIONS:
        swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
        raise FormatError(path, "is a big-endian GGUF file, which is not read (llama.cpp writes little-endian)"
                          if swapped in VERSIONS else
                          f"GGUF version {version} is not read (versions {' and '.join(map(str, VERSIONS))} are)")
    n_tensors, n_keys = header.u64("the tensor count"), header.u64("the key-value count")
    _check_count(path, n_tensors, MAX_TENSORS, "tensors", header.left(), 24)
    _check_count(path, n_keys, MAX_KEYS, "key-values", header.left(), 12)
    keys: dict[str, Any] = {}
    for _ in range(n_keys):
        key = header.string("a key", MAX_NAME)
        if key in keys:
            raise FormatError(path, f"key {shown(key)} is given twice")
        keys[key] = header.value(header.u32(f"the type of key {shown(key)}"), key, 0)
    alignment = keys.get("general.alignment", DEFAULT_ALIGNMENT)
    if type(alignment) is not int or alignment <= 0 or alignment & (alignment - 1):
        raise FormatError(path, f"general.alignment is {shown(alignment)}, not a power of two")
    infos = [_tensor_info(header) for _ in range(n_tensors)]
    data_start = -(-header.position // alignment) * alignment
    rows = [_row(path, info, alignment) for info in infos]
    entries = build_entries(path, rows, data_start, max(0, source.size - data_start), contiguous=False,
                            max_tensor_bytes=MAX_TENSOR_BYTES)
    store = GGUFStore(path, _file_order(entries, [info[0] for info in infos]), source, version=f"v{version}",
                      metadata={key: value if isinstance(value, str) else _item_text(value)
                                for key, value in keys.items()})
    store.keys = keys
    return store


def _check_count(path: os.PathLike, count: int, limit: int, what: str, left: int, least: int) -> None:
    """A count within its limit and within what the bytes left can hold at ``least`` bytes an item."""
    if count > limit:
        raise FormatError(path, f"claims {count:,} {what}, over the limit of {limit:,}")
    if count * least > left:
        raise FormatError(path, f"file is truncated or its header is wrong: {count:,} {what} need at least "
                                f"{count * least:,} bytes, and {left:,} are left")


def _tensor_info(header: "_Header") -> tuple[str, tuple[int, ...], int, int]:
    """(name, ne as stored, GGML type code, offset) of the next tensor."""
    name = header.string("a tensor name", MAX_NAME)
    n_dims = header.u32(f"the dimension count of tensor {shown(name)}")
    if n_dims > MAX_DIMS:
        raise FormatError(header.path, f"tensor {shown(name)} has {n_dims} dimensions; GGML has at most {MAX_DIMS}")
    ne = tuple(header.u64(f"the dimensions of tensor {shown(name)}") for _ in range(n_dims))
    return name, ne, header.u32(f"the type of tensor {shown(name)}"), header.u64(f"the offset of tensor {shown(name)}")


def _row(path: os.PathLike, info: tuple[str, tuple[int, ...], int, int], alignment: int) -> tuple:
    """One tensor as a row for ``build_entries``: numpy-order shape, byte range in the data section."""
    name, ne, code, offset = info
    kind = ggml.types().get(code)
    if kind is None:
        raise FormatError(path, f"tensor {shown(name)} has GGML type {code}, which the gguf library does not know")
    if ne and ne[0] % kind.block:
        raise FormatError(path, f"tensor {shown(name)}: rows of {ne[0]} values are not whole {kind.name} blocks "
                                f"of {kind.block}")
    if offset % alignment:
        raise FormatError(path, f"tensor {shown(name)} starts at offset {offset}, not a multiple of the "
                                f"alignment {alignment}")
    shape = tuple(reversed(ne))
    if any(d >= 1 << 63 for d in shape):
        raise FormatError(path, f"tensor {shown(name)} has a dimension no array can hold: {shown(list(shape))}")
    nbytes = kind.nbytes(shape)
    return name, kind.dtype, shape, offset, offset + nbytes, None


def _file_order(entries: list[TensorEntry], names: list[str]) -> list[TensorEntry]:
    """Entries in the order the header lists them (a model's own order), not the data's."""
    by_name = {e.name: e for e in entries}
    return [by_name[n] for n in names] if len(by_name) == len(entries) else entries


class _Header:
    """The header read front to back through positioned reads, ``WINDOW`` bytes at a time; every read past the
    file's end is one line saying what was being read."""

    def __init__(self, source: ByteSource):
        self.source, self.path, self.size = source, source.path, source.size
        self.position, self._window, self._window_start = 0, b"", 0

    def left(self) -> int:
        return self.size - self.position

    def take(self, n: int, what: str) -> bytes:
        if n > self.left():
            raise FormatError(self.path, f"file is truncated: {what} needs {n:,} bytes at byte {self.position:,}, "
                                         f"and the file has {self.size:,}")
        start = self.position - self._window_start
        if start + n > len(self._window):
            length = min(max(n, WINDOW), self.left())
            self._window, self._window_start, start = self.source.pread(self.position, length, "the header"), \
                self.position, 0
        self.position += n
        self._bounded()
        return self._window[start:start + n]

    def skip(self, n: int, what: str) -> None:
        if n > self.left():
            self.take(n, what)  # raises: truncated
        self.position += n
        self._bounded()

    def _bounded(self) -> None:
        """Counts are checked against the bytes left; this bounds the walk itself on a file of many gigabytes."""
        if self.position > MAX_HEADER:
            raise FormatError(self.path, f"its header runs past {MAX_HEADER >> 20} MiB, over the limit for a GGUF "
                                         "header (its key-values and tensor list)")

    def u32(self, what: str) -> int:
        return U32.unpack(self.take(4, what))[0]

    def u64(self, what: str) -> int:
        return U64.unpack(self.take(8, what))[0]

    def string(self, what: str, limit: int | None = None) -> str:
        length = self.u64(what)
        if limit is not None and length > limit:
            raise FormatError(self.path, f"{what} is {length:,} bytes long, over the limit of {limit:,}")
        return self.take(length, what).decode("utf-8", "replace")

    def value(self, code: int, key: str, depth: int) -> Any:
        """The value of type ``code`` for ``key``; arrays kept as their length and first items."""
        if code in SCALARS:
            name, fmt = SCALARS[code]
            return struct.unpack(fmt, self.take(struct.calcsize(fmt), f"the value of key {shown(key)}"))[0]
        if code == STRING:
            return self.string(f"the value of key {shown(key)}", MAX_STRING)
        if code == ARRAY:
            return self._array(key, depth)
        raise FormatError(self.path, f"key {shown(key)} has value type {code}, which GGUF does not define")

    def _array(self, key: str, depth: int) -> GGUFArray:
        if depth >= MAX_ARRAY_DEPTH:
            raise FormatError(self.path, f"key {shown(key)} nests arrays over {MAX_ARRAY_DEPTH} deep")
        code = self.u32(f"the item type of key {shown(key)}")
        count = self.u64(f"the length of key {shown(key)}")
        least = struct.calcsize(SCALARS[code][1]) if code in SCALARS else 12 if code == ARRAY else 8
        if code not in SCALARS and code not in (STRING, ARRAY):
            raise FormatError(self.path, f"key {shown(key)} is an array of type {code}, which GGUF does not define")
        _check_count(self.path, count, MAX_ITEMS, f"items in key {shown(key)}", self.left(), least)
        kept = [self.value(code, key, depth + 1) for _ in range(min(count, KEPT_ITEMS))]
        rest = count - len(kept)
        if code in SCALARS:
            self.skip(rest * least, f"the items of key {shown(key)}")
        else:
            for _ in range(rest):
                self._skip_value(code, key, depth + 1)
        type_name = SCALARS[code][0] if code in SCALARS else "STRING" if code == STRING else "ARRAY"
        return GGUFArray(type=type_name, length=count, first=kept)

    def _skip_value(self, code: int, key: str, depth: int) -> None:
        if code == STRING:
            self.skip(self.u64(f"an item of key {shown(key)}"), f"an item of key {shown(key)}")
        else:
            self._array(key, depth)
