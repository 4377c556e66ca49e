"""SafeTensors (``.safetensors``) and Hugging Face sharded checkpoints (``*.index.json``).

Validated as strictly as the official reader: a header under 100 MB of UTF-8 JSON, unique
names, ranges that match dtype x shape and tile the buffer with no gap and no overlap.
"""

from __future__ import annotations

import math
import operator
import os
import re
import struct
from collections import Counter
from itertools import chain, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Callable, Iterable, Literal, NoReturn, Sequence

import msgspec

from .. import dtypes
from ..errors import FormatError, nesting, shown
from ..sources.byte_source import ByteSource, open_source
from ..store import Store, TensorEntry, TensorSource, make_entries
from .mapped import MAX_NDIM, RangeStore, build_entries, entries_from_columns

if TYPE_CHECKING:
    pass

NAME = "safetensors"
EXTENSIONS = (".safetensors",)
LABEL = "SafeTensors"
MAX_HEADER = 100_000_000
HEADER_ALIGN = 8
METADATA_KEY = "__metadata__"
MAX_DEPTH = 64  # a header nests 3 levels (name, descriptor, shape); refused past this, with its depth
FIELD_NAMES = ("dtype", "shape", "data_offsets")
FIELDS = tuple(f'"{name}"'.encode() for name in FIELD_NAMES)
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_DIGITS_AS_9 = bytes.maketrans(b"0123456789", b"9" * 10)
_MAX_INT_DIGITS = 4300  # Python's default cap on int() of text; the reader holds JSON integers to it whatever the cap


def sniff(head: bytes) -> bool:
    """A u64 header length then ``{``, or a sharded index (a JSON object naming a weight map)."""
    if len(head) >= 9 and head[8:9] == b"{":
        return struct.unpack("<Q", head[:8])[0] > 0
    return head.lstrip()[:1] == b"{" and b'"weight_map"' in head


def sniff_file(head: bytes) -> bool:
    """A SafeTensors file's first bytes: a u64 header length from 1 to ``MAX_HEADER``, then ``{``."""
    return len(head) >= 9 and head[8:9] == b"{" and 0 < struct.unpack_from("<Q", head)[0] <= MAX_HEADER


class SafeTensorsStore(RangeStore):
    """Its names come from a JSON object's keys, refused when given twice or not text (``names_checked``);
    a sharded index keeps each name from the one shard the index maps it to."""

    format = NAME


def open(where: "str | os.PathLike | ByteSource", open_shard: "Callable[[ByteSource], Store] | None" = None,
         **options: Any) -> Store:
    """A SafeTensors file, or a sharded index (SafeTensors or PyTorch shards) as one store. Shards that are not
    SafeTensors open through ``open_shard`` (``formats.open_store`` passes itself: each opens by its bytes)."""
    mapped = open_source(where)
    try:
        first = mapped.pread(0, min(mapped.size, 9), "the header")
        if first[8:9] != b"{":
            return _open_index(mapped, open_shard)
        entries, metadata = _parse(mapped, _header_size(mapped, first))
    except BaseException:
        mapped.close()
        raise
    return SafeTensorsStore(mapped.path, entries, mapped, metadata=metadata, names_checked=True)


def _header_size(mapped: ByteSource, first: bytes) -> int:
    """The u64 a SafeTensors file starts with, from its ``first`` bytes already read (a file of fewer than 8
    bytes is truncated: ``pread`` says so in the reader's words)."""
    if len(first) < 8:
        first = mapped.pread(0, 8, "the 8-byte header length")
    return struct.unpack_from("<Q", first)[0]


def _parse(mapped: ByteSource, size: int) -> tuple[list[TensorEntry], dict[str, str]]:
    """The entries and metadata of a header of ``size`` bytes (the u64 the file starts with)."""
    path = mapped.path
    if size > MAX_HEADER:
        raise FormatError(path, f"header claims {size} bytes, over the limit of {MAX_HEADER}")
    raw = mapped.pread(8, size, f"the {size}-byte header")
    data_start = 8 + size
    try:
        return _parse_fast(path, raw, data_start, mapped.size - data_start)
    except _NotFast:
        pass
    header = _json(path, raw, "header", object_pairs_hook=_Marked.of)
    if not isinstance(header, dict):
        raise FormatError(path, "header is not a JSON object")
    _refuse_marked(path, header)
    for name, desc in header.items():  # a field the official reader skips is held to the limit too
        if name != METADATA_KEY and isinstance(desc, dict):
            for value in (value for field, value in desc.items() if field not in FIELD_NAMES):
                _refuse_deep(path, value, f"tensor {name!r}")
    metadata = header.pop(METADATA_KEY, None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        _refuse_deep(path, metadata, "__metadata__")
        raise FormatError(path, "__metadata__ must map text to text")
    rows = []
    for name, desc in header.items():
        try:
            start, end = desc["data_offsets"]
            rows.append((name, _DTYPES[desc["dtype"]], desc["shape"], start, end, None))
        except (KeyError, TypeError, ValueError):
            _refuse_deep(path, desc, f"tensor {name!r}")
            raise FormatError(path, _describe_bad(name, desc)) from None
    for row in rows:
        if type(row[2]) is not list or not all(type(d) is int for d in row[2]):
            _refuse_deep(path, row[2], f"tensor {row[0]!r}")
    return build_entries(path, rows, data_start, mapped.size - data_start, contiguous=True), dict(metadata)


class _NotFast(Exception):
    """The fast path met something it does not judge itself: the reference path below decides (and words) it."""


# What ``entries_from_columns(typed=True)`` takes as checked. msgspec bounds only fit int64: a dimension or
# offset from 2**63 on (none real) goes to the reference path, which judges it against the u64 limit.
_Size = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
_Shape = Annotated[tuple[_Size, ...], msgspec.Meta(max_length=MAX_NDIM)]
_DtypeName = Literal[tuple(sorted(dtypes.SAFETENSORS_NAMES))]  # type: ignore[valid-type]  # the names, as one Literal


class _Descriptor(msgspec.Struct, gc=False):
    """One tensor as the header states it, typed: msgspec checks every field as it parses, in C.

    Unknown fields (Burn writes ``param_id``) are skipped, as the reference path ignores them; a
    missing field is left ``None``, and an unknown dtype is a validation error: the fast path hands both
    to the reference path. A dtype decodes to the one shared string of its name, not new text per tensor
    (3% of the parse for 146 tensors, and a file's dtypes then compare and hash as the same objects)."""

    dtype: _DtypeName | None = None
    shape: _Shape | None = None
    data_offsets: tuple[_Size, _Size] | None = None


class _Metadata(msgspec.Struct, rename={"text": METADATA_KEY}):
    """Only ``__metadata__``: every other key is skipped unread (a second, quicker pass over the header)."""

    text: dict[str, str] = msgspec.field(default_factory=dict)


_HEADER = msgspec.json.Decoder(dict[str, _Descriptor])
_METADATA = msgspec.json.Decoder(_Metadata)
_DTYPE, _SHAPE, _OFFSETS = (operator.attrgetter(field) for field in ("dtype", "shape", "data_offsets"))
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _parse_fast(path: os.PathLike, raw: bytes, data_start: int, buffer_size: int
                ) -> tuple[list[TensorEntry], dict[str, str]]:
    """The header parsed by msgspec into typed descriptors, then entries built in bulk.

    It only ever accepts what the reference path accepts. msgspec refuses NaN, a shape or offset that is
    not a non-negative integer, and nesting past Python's recursion limit (a ``RecursionError``, not a
    crash); headers with escapes (where a lone surrogate could hide) or with text that is not UTF-8
    (msgspec skips an unknown field's text without decoding it), an unknown field holding a container or a
    number that may be past float64's range (skipped unchecked too), and anything else unusual (a missing
    field, an unknown dtype, a range that does not fit) raise ``_NotFast``, so the reference path gives
    its own verdict and message. msgspec keeps the last of a key given twice: the colon count below
    finds repeats.
    """
    if b"\\" in raw or not (raw.isascii() or _is_utf8(raw)):
        raise _NotFast
    try:
        header = _HEADER.decode(raw)
        metadata = _METADATA.decode(raw).text if METADATA_KEY in header else {}
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):  # the reference parser explains each
        raise _NotFast from None
    has_metadata = header.pop(METADATA_KEY, None) is not None
    descriptors = list(header.values())
    # Every key in the text has a colon after it, and a descriptor with its three fields has three keys:
    # as many colons as keys parsed means no key was given twice (a repeat parses to one key fewer). More
    # colons (one in a name, Burn's param_id) leave it to _refuse_repeats' counts; fewer (a field missing)
    # too, and the missing field then sends the header to the reference path.
    if raw.count(b":") != len(header) + 3 * len(descriptors) + has_metadata * (1 + len(metadata)):
        _refuse_repeats(path, raw, len(descriptors))
        # An unknown field's colon: msgspec skipped its value unread, so a container in it (whose depth the
        # reference path bounds) or a number that may be past float64's range (which it checks) goes there.
        if raw.count(b"[") + raw.count(b"{") > 1 + has_metadata + 3 * len(descriptors) or _may_be_huge(raw):
            raise _NotFast
    names = list(header)
    return _entries_as_written(names, descriptors, data_start, buffer_size) or \
        _entries_in_columns(path, names, descriptors, data_start, buffer_size), metadata


def _entries_as_written(names: list[str], descriptors: list[_Descriptor], data_start: int, buffer_size: int
                        ) -> list[TensorEntry] | None:
    """The entries of a header as the official writer writes it, checked in a few passes in C; ``None`` for
    any other (a dtype not of whole bytes or unknown, a field missing, an empty tensor, ranges not listed in
    data order, a size or range that does not fit), which ``entries_from_columns`` then judges in full.

    What is accepted is what that accepts: each range holds exactly its dtype x shape in bytes, so it does
    not end before it starts, and each starts where the one before it ends, from 0 to the buffer's end
    (the tiling in listed order that it checks first). The shapes and offsets are typed by the decode.
    """
    shapes = list(map(_SHAPE, descriptors))
    try:
        kinds, itemsizes = _kinds_and_itemsizes(list(map(_DTYPE, descriptors)))
        bounds = list(chain.from_iterable(map(_OFFSETS, descriptors)))  # start, end, start, end, ...
        needed = list(map(operator.mul, map(math.prod, shapes), itemsizes))
    except (KeyError, TypeError):  # an unknown or sub-byte dtype; a shape or offsets missing (None)
        return None
    starts, ends = bounds[0::2], bounds[1::2]
    sizes = list(map(operator.sub, ends, starts))
    if not (names and starts[0] == 0 and ends[-1] == buffer_size and starts[1:] == ends[:-1]
            and needed == sizes and 0 not in sizes):
        return None
    return make_entries(names, kinds, shapes, sizes, [None] * len(names),
                        list(map(operator.add, starts, repeat(data_start))))


def _kinds_and_itemsizes(dtype_names: list[str]) -> tuple[list[dtypes.DType], Iterable[int]]:
    """Each tensor's dtype and the bytes of one of its values; a file of one dtype (most are) looks it up once."""
    distinct = set(dtype_names)
    if len(distinct) == 1:
        (only,) = distinct
        return [_DTYPES[only]] * len(dtype_names), repeat(_ITEMSIZE[only])
    return list(map(_DTYPES.__getitem__, dtype_names)), list(map(_ITEMSIZE.__getitem__, dtype_names))


def _entries_in_columns(path: os.PathLike, names: list[str], descriptors: list[_Descriptor], data_start: int,
                        buffer_size: int) -> list[TensorEntry]:
    """Any other typed header, through the shared column checks (a refusal goes to the reference path)."""
    shapes, offsets = list(map(_SHAPE, descriptors)), list(map(_OFFSETS, descriptors))
    if None in shapes or None in offsets:
        raise _NotFast
    try:
        kinds = list(map(_DTYPES.__getitem__, map(_DTYPE, descriptors)))
        return entries_from_columns(path, names, kinds, shapes, list(map(_FIRST, offsets)),
                                    list(map(_SECOND, offsets)), [None] * len(kinds), data_start, buffer_size,
                                    contiguous=True, typed=True)
    except (KeyError, FormatError):  # an unknown dtype, a size or range refused: the reference path words it
        raise _NotFast from None


def _may_be_huge(raw: bytes) -> bool:
    """Whether the text may hold a number past float64's range: 309 digits in a row, or a digit then a positive
    exponent. Byte searches on the digits made alike (2 ms for a 2 MB header; a regex took 49 ms, three times
    msgspec's whole parse); a name that matches only sends the header to the reference path."""
    digits = raw.translate(_DIGITS_AS_9)
    return b"9" * 309 in digits or any(mark in digits for mark in (b"9e9", b"9e+9", b"9E9", b"9E+9"))


def _refuse_repeats(path: os.PathLike, raw: bytes, descriptors: int) -> None:
    """A name, a descriptor's field or __metadata__ given twice in a header msgspec parsed (it keeps the last of
    each). Counting is the quick filter: a repeat shows as a field's name more often than there are descriptors
    (a name may hold the word too, which only parses more often); a field it misses is missing elsewhere, and
    that sends the header to the reference path, which always marks repeats."""
    if max(map(raw.count, FIELDS)) > descriptors or raw.count(b'"__metadata__"') > 1:
        _refuse_marked(path, _json(path, raw, "header", object_pairs_hook=_Marked.of))


def _refuse_marked(path: os.PathLike, header: _Marked) -> None:
    """Refuse the first repeat of a header parsed into ``_Marked`` objects: a descriptor's field and
    __metadata__, as the official reader refuses them, and a name, of which the official reader keeps the
    last (which of the two tensors is meant would be a guess here). A key repeated in __metadata__ keeps its
    last value, as the official reader's map does; repeats inside unknown fields are skipped, as it skips
    those fields unread."""
    repeated = [key for name, desc in header.items() if name != METADATA_KEY and isinstance(desc, _Marked)
                for key in desc.repeated if key in FIELD_NAMES] + list(header.repeated)
    if repeated:
        raise FormatError(path, f"header names {repeated[0]!r} twice")


class _Marked(dict):
    """A JSON object with the keys its text gave more than once (each keeps its last value, as ``json`` does),
    so that ``_refuse_marked`` can tell where a repeat is."""

    repeated: tuple[str, ...] = ()

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> _Marked:
        marked = cls(pairs)
        if len(marked) < len(pairs):  # rare: only then count (one pass, however many keys a hostile header has)
            marked.repeated = tuple(key for key, times in Counter(key for key, _ in pairs).items() if times > 1)
        return marked


def _refusing_repeats(path: os.PathLike, what: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """An object hook that refuses any key given twice (a shard index: which shard holds a tensor named
    twice would be a guess)."""
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise FormatError(path, f"{what} names {key!r} twice")
            result[key] = value
        return result
    return unique


def _refuse_deep(path: os.PathLike, value: Any, what: str) -> None:
    """Refuse a value nested past ``MAX_DEPTH`` with its depth, before anything prints it."""
    if nesting(value, MAX_DEPTH) > MAX_DEPTH:
        raise FormatError(path, f"{what} is nested {nesting(value, 1 << 62) + 2} levels deep in the header, over "
                                f"the limit of {MAX_DEPTH} (a header has 3)")


_DTYPES = {name: dtypes.from_safetensors(name) for name in dtypes.SAFETENSORS_NAMES}
_ITEMSIZE = {name: dtype.bits // 8 for name, dtype in _DTYPES.items() if dtype.bits % 8 == 0}  # all but F4, F6s


def _describe_bad(name: str, desc: Any) -> str:
    if not isinstance(desc, dict) or not {"dtype", "shape", "data_offsets"} <= set(desc):
        return f"tensor {name!r} needs dtype, shape and data_offsets"
    if not isinstance(desc["dtype"], str) or desc["dtype"] not in _DTYPES:
        return f"tensor {name!r} has an unknown dtype {shown(desc['dtype'])}"
    return f"tensor {name!r} has invalid data_offsets {shown(desc['data_offsets'])}"


def _json(path: os.PathLike, raw: bytes, what: str, *,
          object_pairs_hook: Callable[[list[tuple[str, Any]]], dict[str, Any]] | None = None) -> Any:
    """Parse JSON, each object made by ``object_pairs_hook`` when given (``json``'s own keeps the last of a
    repeated key). Only a header msgspec's fast path leaves (or a shard index) comes here, so ``json`` is
    imported here, not at start-up."""
    import json
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(path, f"{what} is not valid UTF-8 (byte {exc.start})") from None
    if not text.lstrip().startswith("{"):
        raise FormatError(path, f"{what} is not a JSON object")
    try:
        value = json.loads(text, object_pairs_hook=object_pairs_hook, **_json_numbers(path, what))
    except RecursionError:
        raise FormatError(path, f"{what} is nested deeper than {MAX_DEPTH} levels ({_bracket_depth(raw)} levels)") \
            from None
    except json.JSONDecodeError as exc:
        raise FormatError(path, f"{what} is not valid JSON: {exc.msg} at character {exc.pos}") from None
    if _SURROGATE.search(raw):  # rare: only then look for a lone one (a valid pair decodes to one character)
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise FormatError(path, f"{what} holds a lone surrogate ({exc.object[exc.start]!a}), which is not "
                                    "text: the official reader refuses it") from None
    return value


def _json_numbers(path: os.PathLike, what: str) -> dict[str, Callable[[str], Any]]:
    """``json``'s number hooks, refusing what the official reader refuses as not JSON, also in a field it
    otherwise skips: NaN, Infinity and -Infinity (``json`` reads them), and a number past float64's range
    ("number out of range": ``json`` reads 1e400 as infinity and a 400-digit integer whole)."""
    def refuse(why: str) -> NoReturn:
        raise FormatError(path, f"{what} is not valid JSON: {why}")

    def checked_int(text: str) -> int:
        # Measured before int() parses it (quadratic in the digits, and unbounded under PYTHONINTMAXSTRDIGITS=0).
        digits = len(text.lstrip("-"))
        if digits > _MAX_INT_DIGITS:
            raise FormatError(path, f"{what} holds a number too long to be real")
        value = int(text)
        if len(text) > 308:  # float64 holds every integer of fewer digits
            try:
                float(value)
            except OverflowError:
                refuse(f"a number is out of range ({text[:12]}..., {digits} digits)")
        return value

    def checked_float(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            refuse(f"a number is out of range ({text})")
        return value

    return {"parse_int": checked_int, "parse_float": checked_float,
            "parse_constant": lambda text: refuse(f"{text} is not a JSON value")}


# A JSON string, or an unclosed one to the end: possessive, and an unclosed string ends the scan, so each byte
# is looked at once (a string-only pattern restarted at each of 20,000 escaped quotes took 5 s on 40 KB).
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)', re.DOTALL)


def _bracket_depth(raw: bytes) -> int:
    """How deeply JSON brackets nest outside strings (only called to explain a refusal)."""
    import numpy as np
    text = np.frombuffer(_STRINGS.sub(b"", raw), np.uint8)
    steps = np.isin(text, (0x5B, 0x7B)).astype(np.int64) - np.isin(text, (0x5D, 0x7D))
    return int(np.cumsum(steps).max(initial=0))


def _open_index(index_file: ByteSource, open_shard: "Callable[[ByteSource], Store] | None") -> Store:
    """Open a sharded checkpoint's index as one store over all its shard files (read once, then closed).

    Shards sit next to the index, on the same disk or server (``sibling``); only their headers are
    read now. SafeTensors shards become one ``SafeTensorsStore``; PyTorch shards
    (``pytorch_model.bin.index.json``) each open as a checkpoint under one ``ShardedStore``.
    """
    path = index_file.path
    try:
        if index_file.size > MAX_HEADER:
            raise FormatError(path, "index file is larger than 100 MB")
        index = _json(path, index_file.pread(0, index_file.size, "the index"), "index",
                      object_pairs_hook=_refusing_repeats(path, "index"))
    finally:
        index_file.close()
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise FormatError(path, "index has no 'weight_map' of tensor names to shard files")
    if not isinstance(index.get("metadata") or {}, dict):
        raise FormatError(path, "index 'metadata' is not a map")
    metadata = {str(k): v if isinstance(v, str) else shown(v) for k, v in (index.get("metadata") or {}).items()}
    # Aliases of one shard ("a.safetensors", "./a.safetensors") are one file: each is parsed once.
    wanted: dict[str, dict[str, str]] = {}  # shard path -> {tensor name: shard name as the index spells it}
    spellings: dict[str, str] = {}
    for name, shard_name in weight_map.items():
        if shard_name not in spellings:
            spellings[shard_name] = _shard_path(path, shard_name)
        wanted.setdefault(spellings[shard_name], {})[name] = shard_name
    shards: list[ByteSource] = []
    entries: list[TensorEntry] = []
    locations: dict[str, ByteSource] = {}
    header_bytes = 0  # held to one file's limit: split or not, a model's header holds the same names
    try:
        for shard_path, names in wanted.items():
            mapped = index_file.sibling(shard_path)
            shards.append(mapped)
            first = mapped.pread(0, min(mapped.size, 9), "the shard's header")
            if not sniff(first) and not entries:
                return _open_other_shards(index_file, shards.pop(), wanted, metadata, open_shard)
            size = _header_size(mapped, first)
            header_bytes += size
            if size <= MAX_HEADER < header_bytes:  # a shard's own header past the limit is refused by _parse
                raise FormatError(path, f"the shards' headers together exceed {MAX_HEADER} bytes, the limit of one "
                                        "file's header")
            shard_entries, shard_meta = _parse(mapped, size)
            for key, value in shard_meta.items():
                metadata.setdefault(key, value)
            for entry in shard_entries:
                if entry.name in names:
                    entries.append(entry)
                    locations[entry.name] = mapped
            missing = next((n for n in names if n not in locations), None)
            if missing is not None:
                raise FormatError(path, f"shard {names[missing]} lacks tensor {missing!r} that the index maps to it")
    except BaseException:
        for mapped in shards:
            mapped.close()
        raise
    return SafeTensorsStore(path, entries, locations, metadata=metadata, version="sharded", names_checked=True)


def _open_other_shards(index_file: ByteSource, first: ByteSource, wanted: dict[str, dict[str, str]],
                       metadata: dict[str, str], open_shard: "Callable[[ByteSource], Store] | None") -> Store:
    """An index whose shards are not SafeTensors (PyTorch's ``.bin`` shards): each opens by its own bytes."""
    from .sharded import ShardedStore
    path = index_file.path
    if open_shard is None:
        first.close()
        raise FormatError(path, "index names shards that are not SafeTensors; open it with engine.open_store")
    stores: list[Store] = []
    try:
        for i, (shard_path, names) in enumerate(wanted.items()):
            shard = open_shard(first if i == 0 else index_file.sibling(shard_path))
            stores.append(shard)
            missing = next((n for n in names if n not in shard), None)
            if missing is not None:
                raise FormatError(path, f"shard {names[missing]} lacks tensor {missing!r} that the index maps to it")
    except BaseException:
        first.close()
        for store in stores:
            store.close()
        raise
    return ShardedStore(path, stores, [set(names) for names in wanted.values()], metadata=metadata)


def _shard_path(index: Path, shard_name: str) -> str:
    """A shard's path relative to the index's folder, the same for every spelling of it."""
    normal = os.path.normpath(shard_name) if shard_name else ""
    if Path(shard_name).is_absolute() or normal.split(os.sep)[0] == ".." or "\0" in shard_name:
        raise FormatError(index, f"shard {shown(shard_name)} lies outside the index's folder")
    if normal in ("", ".") or shard_name.endswith(("/", os.sep)):
        raise FormatError(index, f"the index maps a tensor to {shown(shard_name)}, which names no file")
    return normal


# --- writing ------------------------------------------------------------------------------------

def layout(items: Sequence[TensorSource], metadata: dict[str, str]) -> tuple[bytes, list[int]]:
    """The header bytes (length, JSON padded with spaces to 8 bytes) and each item's file offset."""
    import json  # here: only writing SafeTensors needs it
    header: dict[str, Any] = {}
    if metadata:
        header[METADATA_KEY] = dict(metadata)
    offsets, position = [], 0
    for item in items:
        header[item.name] = {"dtype": dtypes.to_safetensors(item.dtype), "shape": list(item.shape),
                             "data_offsets": [position, position + item.nbytes]}
        offsets.append(position)
        position += item.nbytes
    body = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    body += b" " * (-(len(body) + 8) % HEADER_ALIGN)
    head = struct.pack("<Q", len(body)) + body
    return head, [len(head) + o for o in offsets]


def write_header(out: BinaryIO, items: Sequence[TensorSource], metadata: dict[str, str],
                 scalars: dict[str, Any]) -> list[int]:
    head, offsets = layout(items, metadata)
    out.write(head)
    return offsets
