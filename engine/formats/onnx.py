"""ONNX (``.onnx``) models: read only, the structure alone at open, every initializer as a tensor.

An ONNX file is one protobuf ``ModelProto`` (``onnx/onnx.proto``): its ``graph`` (field 7) holds the ``node``s
(field 1) and the ``initializer``s (field 5), the weights, each a ``TensorProto`` whose values are little-endian
``raw_data`` (field 9), a typed repeated field (``float_data``, ``int32_data``... for small tensors), or bytes of
an external file next to the model (``data_location`` EXTERNAL, ``external_data`` location/offset/length).

Why not ``onnx.load``: it parses every embedded weight into memory (a 2 GB model costs 2 GB and seconds before
one name is shown), and it is a large dependency. This reader walks the protobuf through positioned reads of a
``ByteSource`` a window at a time (locally or remotely by ranges), skips every field it does not need by its
length, and for ``raw_data`` and external data keeps only the offset and length, read when the tensor is asked
for (``RangeStore``). Typed fields are decoded when their tensor is read, from the tensor's message. Each
length is bounded by its enclosing message and the file, varints by 10 bytes and 2**64, counts by the bytes left;
groups (wire types 3 and 4, never written by ONNX) are refused; nothing recurses (only the main graph is walked:
graphs inside node attributes are skipped whole). Its results are tested against ``onnx`` on every test file.

Graph nodes are not listed (this is a weights tool), but ``store.users`` names, for every initializer, each
node that takes it: ``(node name, op_type, input index)``, which is what maps it to a Burn module.
"""

from __future__ import annotations

import math
import os
import posixpath
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import dtypes as dt
from ..errors import FormatError, shown
from ..sources import CHUNK
from ..sources.byte_source import ByteSource, read_with
from ..store import TensorEntry
from .mapped import MAX_ELEMENTS, MAX_NDIM, RangeStore

NAME = "onnx"
LABEL = "ONNX"
EXTENSIONS = (".onnx",)
MAX_IR_VERSION = 100  # ONNX's IR version is 13 at most today; a sniffed first varint above this is no ONNX file
MAX_ITEMS = 1_000_000  # initializers, and nodes, in one graph
MAX_INPUTS = 8_000_000  # node inputs in all (real graphs have a few per node)
MAX_NAME = 64 << 10  # bytes of a tensor, node or graph name
MAX_TEXT = 1 << 20  # bytes of a metadata value (producer name, metadata_props)
MAX_PROPS = 10_000  # metadata_props and opset_import entries kept
MAX_EXTERNAL_KEYS = 64  # external_data entries of one tensor (ONNX writes 3 to 5)
MAX_TENSOR_BYTES = 1 << 40
WINDOW = 1 << 20  # structure bytes read at a time, at most (read-ahead doubles while reads follow each other)
FIRST_WINDOW = 16 << 10  # ...and at least: after a skipped tensor, a small read (not its neighbour's weights)
EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL

# ONNX TensorProto.DataType -> (DType, the typed field its values go in when not raw, values per element)
FLOAT_DATA, INT32_DATA, STRING_DATA, INT64_DATA, DOUBLE_DATA, UINT64_DATA = 4, 5, 6, 7, 10, 11
DATA_TYPES: dict[int, tuple[dt.DType, int, int]] = {
    1: (dt.F32, FLOAT_DATA, 1), 2: (dt.U8, INT32_DATA, 1), 3: (dt.I8, INT32_DATA, 1), 4: (dt.U16, INT32_DATA, 1),
    5: (dt.I16, INT32_DATA, 1), 6: (dt.I32, INT32_DATA, 1), 7: (dt.I64, INT64_DATA, 1), 9: (dt.BOOL, INT32_DATA, 1),
    10: (dt.F16, INT32_DATA, 1), 11: (dt.F64, DOUBLE_DATA, 1), 12: (dt.U32, UINT64_DATA, 1),
    13: (dt.U64, UINT64_DATA, 1), 14: (dt.C64, FLOAT_DATA, 2), 15: (dt.C128, DOUBLE_DATA, 2),
    16: (dt.BF16, INT32_DATA, 1), 17: (dt.F8_E4M3, INT32_DATA, 1), 19: (dt.F8_E5M2, INT32_DATA, 1),
    24: (dt.F8_E8M0, INT32_DATA, 1),
}
TYPE_NAMES = {0: "UNDEFINED", 8: "STRING", 18: "FLOAT8E4M3FNUZ", 20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4",
              23: "FLOAT4E2M1", 25: "UINT2", 26: "INT2", 27: "FLOAT6E2M3", 28: "FLOAT6E3M2"}  # the types refused
FIELD_NAMES = {FLOAT_DATA: "float_data", INT32_DATA: "int32_data", INT64_DATA: "int64_data",
               DOUBLE_DATA: "double_data", UINT64_DATA: "uint64_data"}
FIXED_WIDTH = {FLOAT_DATA: 4, DOUBLE_DATA: 8}  # the others are varints
SCALAR_WIRE = {FLOAT_DATA: 5, INT32_DATA: 0, INT64_DATA: 0, DOUBLE_DATA: 1, UINT64_DATA: 0}  # unpacked encodings
VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
# ModelProto's fields and their wire types (what sniff accepts after ir_version)
MODEL_FIELDS = {1: VARINT, 2: LEN, 3: LEN, 4: LEN, 5: VARINT, 6: LEN, 7: LEN, 8: LEN, 14: LEN, 20: LEN, 25: LEN,
                26: LEN}
_DRIVE = re.compile(r"[A-Za-z]:")


def sniff(head: bytes) -> bool:
    """A ModelProto as ONNX writes it: ``ir_version`` (tag 0x08, a small varint), then ModelProto fields."""
    if len(head) < 4 or head[0] != 0x08:
        return False
    fields = 0
    try:
        version, pos = _varint_at(head, 1)
        if not 1 <= version <= MAX_IR_VERSION:
            return False
        fields = 0
        while pos < len(head) and fields < 8:  # every field the head holds, up to eight
            key, pos = _varint_at(head, pos)
            number, wire = key >> 3, key & 7
            if MODEL_FIELDS.get(number) != wire:
                return False
            fields += 1
            if number == 7:  # the graph: enough seen
                return True
            value, pos = _varint_at(head, pos)
            if wire == LEN:
                pos += value
        return fields > 0
    except IndexError:  # the head ends inside a varint: what came before was all ModelProto
        return fields > 0
    except ValueError:  # a varint over 10 bytes
        return False


def _varint_at(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` of ``data`` (IndexError past its end, ValueError when longer than 10 bytes)."""
    value = shift = 0
    for i in range(10):
        byte = data[pos + i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + i + 1
        shift += 7
    raise ValueError("varint longer than 10 bytes")


class OnnxStore(RangeStore):
    """An ONNX model's initializers: raw and external ones read as byte ranges, typed ones decoded from their
    message when read. ``users`` maps each initializer to the nodes taking it (node name, op_type, input index)."""

    format = NAME

    def __init__(self, path: Any, entries: list[TensorEntry], files: dict[str, ByteSource], model: ByteSource,
                 typed: dict[str, tuple[int, int, int]], **kwargs: Any):
        super().__init__(path, entries, files, **kwargs)
        self._mapped = [model] + [m for m in self._mapped if m is not model]
        self.files = [m.path for m in self._mapped]
        self._model = model
        self._typed = typed  # name -> (message offset, message length, typed field number)
        self.users: dict[str, list[tuple[str, str, int]]] = {}

    def read_entry(self, entry: TensorEntry) -> Any:
        if entry.name not in self._typed:
            return super().read_entry(entry)
        self._check_open()
        offset, length, field = self._typed[entry.name]
        message = self._model.pread(offset, length, f"tensor {entry.name!r}")
        self._model.verify()
        return _typed_values(self.path, entry, message, field)

    def entry_byte_range(self, entry: TensorEntry) -> tuple[int, int, int] | None:
        return None if entry.name in self._typed else super().entry_byte_range(entry)

    def entry_iter_bytes(self, entry: TensorEntry, chunk_size: int = CHUNK) -> Iterator[bytes]:
        if entry.name not in self._typed:
            return super().entry_iter_bytes(entry, chunk_size)
        return _chunks(self.read_entry(entry), chunk_size)

    def entry_release(self, entry: TensorEntry) -> None:
        if entry.name not in self._typed:
            super().entry_release(entry)


def _chunks(array: Any, chunk_size: int) -> Iterator[bytes]:
    import numpy as np
    data = np.ascontiguousarray(array).reshape(-1).view(np.uint8).tobytes() if array.size else b""
    for start in range(0, len(data), chunk_size):
        yield data[start:start + chunk_size]


def open(where: str | os.PathLike | ByteSource, **options: Any) -> OnnxStore:
    return read_with(where, _open)


def _open(source: ByteSource) -> OnnxStore:
    path, r = source.path, _Reader(source)
    metadata: dict[str, str] = {}
    props: dict[str, str] = {}
    opsets: list[str] = []
    version = None
    graph = None
    for number, wire, value in r.fields(0, source.size, "the model"):
        if number == 1:
            version = r.want(value, wire, VARINT, "the model's ir_version")
        elif number in (2, 3, 4):
            key = {2: "producer_name", 3: "producer_version", 4: "domain"}[number]
            metadata[key] = r.string(value, wire, MAX_TEXT, "the model's ", key)
        elif number == 5:
            metadata["model_version"] = str(r.want(value, wire, VARINT, "the model's model_version"))
        elif number == 7:
            if graph is not None:
                raise FormatError(path, "holds two graphs (ModelProto field 7 is given twice)")
            graph = r.want(value, wire, LEN, "the model's graph")
        elif number == 8 and len(opsets) < MAX_PROPS:
            opsets.append(_opset(r, r.want(value, wire, LEN, "an opset_import")))
        elif number == 14 and len(props) < MAX_PROPS:
            key, text = _string_pair(r, r.want(value, wire, LEN, "a metadata_props entry"), "a metadata_props entry")
            props[key] = text
    if opsets:
        metadata["opset"] = ", ".join(opsets)
    tensors, users = _graph(r, graph, metadata) if graph is not None else ([], {})
    for key, text in props.items():
        metadata.setdefault(key, text)
    return _store(source, r, tensors, users, metadata, None if version is None else f"IR v{version}")


def _opset(r: _Reader, span: tuple[int, int]) -> str:
    domain, version = "ai.onnx", 0
    for number, wire, value in r.fields(span[0], span[0] + span[1], "an opset_import"):
        if number == 1:
            domain = r.string(value, wire, MAX_NAME, "an opset domain") or "ai.onnx"
        elif number == 2:
            version = r.want(value, wire, VARINT, "an opset version")
    return f"{domain} {version}"


def _string_pair(r: _Reader, span: tuple[int, int], what: str) -> tuple[str, str]:
    """A StringStringEntryProto: (key, value)."""
    key = text = ""
    for number, wire, value in r.fields(span[0], span[0] + span[1], what):
        if number == 1:
            key = r.string(value, wire, MAX_NAME, "the key of ", what)
        elif number == 2:
            text = r.string(value, wire, MAX_TEXT, "the value of ", what)
    return key, text


class _Tensor:
    """One initializer as its TensorProto states it (values not read)."""

    __slots__ = (
        "data_type",
        "dims",
        "external",
        "index",
        "location",
        "message",
        "name",
        "raw",
        "segment",
        "strings",
        "typed",
    )

    def __init__(self, index: int, message: tuple[int, int]):
        self.index, self.message = index, message
        self.name, self.data_type, self.dims = "", 0, []
        self.raw: tuple[int, int] | None = None
        self.typed: dict[int, list[int]] = {}  # field -> [packed bytes, unpacked values]
        self.external: dict[str, str] = {}
        self.location, self.segment, self.strings = 0, False, False


def _graph(r: _Reader, span: tuple[int, int], metadata: dict[str, str]
           ) -> tuple[list[_Tensor], dict[str, list[tuple[str, str, int]]]]:
    """The graph's initializers (as stated) and, by input name, the nodes that take each input."""
    path = r.path
    tensors: list[_Tensor] = []
    users: dict[str, list[tuple[str, str, int]]] = {}
    nodes = inputs = 0
    for number, wire, value in r.fields(span[0], span[0] + span[1], "the graph"):
        if number == 1:
            nodes += 1
            if nodes > MAX_ITEMS:
                raise FormatError(path, f"the graph has over {MAX_ITEMS:,} nodes, the limit")
            inputs += _node(r, r.want(value, wire, LEN, "node #", nodes), nodes, users)
            if inputs > MAX_INPUTS:
                raise FormatError(path, f"the graph's nodes take over {MAX_INPUTS:,} inputs, the limit")
        elif number == 2:
            metadata["graph"] = r.string(value, wire, MAX_NAME, "the graph's name")
        elif number == 5:
            if len(tensors) >= MAX_ITEMS:
                raise FormatError(path, f"the graph has over {MAX_ITEMS:,} initializers, the limit")
            tensors.append(_tensor(r, r.want(value, wire, LEN, "initializer #", len(tensors) + 1), len(tensors) + 1))
        elif number == 15:
            name = _sparse_name(r, r.want(value, wire, LEN, "a sparse initializer"))
            raise FormatError(path, f"sparse initializer {shown(name)} is not read (sparse tensors are not supported; "
                                    "store it dense)")
    return tensors, users


def _node(r: _Reader, span: tuple[int, int], index: int,
          users: dict[str, list[tuple[str, str, int]]]) -> int:
    """Record the node's inputs in ``users``; return how many it takes."""
    what = f"node #{index}"
    inputs: list[str] = []
    name = op_type = ""
    for number, wire, value in r.fields(span[0], span[0] + span[1], what):
        if number == 1:
            inputs.append(r.string(value, wire, MAX_NAME, "an input of ", what))
        elif number == 3:
            name = r.string(value, wire, MAX_NAME, "the name of ", what)
        elif number == 4:
            op_type = r.string(value, wire, MAX_NAME, "the op_type of ", what)
    for i, input_name in enumerate(inputs):
        if input_name:  # "" is an optional input left out
            users.setdefault(input_name, []).append((name, op_type, i))
    return len(inputs)


def _sparse_name(r: _Reader, span: tuple[int, int]) -> str:
    """The name of a SparseTensorProto: its ``values`` tensor's (field 1, then field 8)."""
    for number, wire, value in r.fields(span[0], span[0] + span[1], "a sparse initializer"):
        if number == 1 and wire == LEN:
            for inner, inner_wire, inner_value in r.fields(value[0], value[0] + value[1], "a sparse initializer"):
                if inner == 8 and inner_wire == LEN:
                    return r.string(inner_value, inner_wire, MAX_NAME, "a sparse initializer's name")
    return ""


def _tensor(r: _Reader, span: tuple[int, int], index: int) -> _Tensor:
    what = f"initializer #{index}"
    t = _Tensor(index, span)
    for number, wire, value in r.fields(span[0], span[0] + span[1], what):
        if number == 1:
            if wire == LEN:
                t.dims.extend(r.packed_varints(value, MAX_NDIM + 1, f"the dims of {what}"))
            else:
                t.dims.append(r.want(value, wire, VARINT, "the dims of ", what))
            if len(t.dims) > MAX_NDIM:
                raise FormatError(r.path, f"{what} has over {MAX_NDIM} dimensions; no array can hold it")
        elif number == 2:
            t.data_type = r.want(value, wire, VARINT, "the data_type of ", what)
        elif number == 3:
            t.segment = True
        elif number in SCALAR_WIRE:
            counts = t.typed.setdefault(number, [0, 0])
            if wire == LEN:
                counts[0] += value[1]
            else:
                r.want(value, wire, SCALAR_WIRE[number], f"the {FIELD_NAMES[number]} of ", what)
                counts[1] += 1
        elif number == STRING_DATA:
            t.strings = True
        elif number == 8:
            t.name = r.string(value, wire, MAX_NAME, "the name of ", what)
        elif number == 9:
            t.raw = r.want(value, wire, LEN, "the raw_data of ", what)
        elif number == 13:
            if len(t.external) >= MAX_EXTERNAL_KEYS:
                raise FormatError(r.path, f"{what} has over {MAX_EXTERNAL_KEYS} external_data entries")
            key, text = _string_pair(r, r.want(value, wire, LEN, "the external_data of ", what),
                                     f"the external_data of {what}")
            t.external[key] = text
        elif number == 14:
            t.location = r.want(value, wire, VARINT, "the data_location of ", what)
    return t


def _store(source: ByteSource, r: _Reader, tensors: list[_Tensor], users: dict[str, list[tuple[str, str, int]]],
           metadata: dict[str, str], version: str | None) -> OnnxStore:
    path = source.path
    entries: list[TensorEntry] = []
    files: dict[str, ByteSource] = {}
    typed: dict[str, tuple[int, int, int]] = {}
    externals: dict[str, ByteSource] = {}
    try:
        for t in tensors:
            name = t.name
            kind, field, per = _data_type(path, t)
            shape = tuple(t.dims)
            if any(d >= 1 << 63 for d in shape):
                raise FormatError(path, f"tensor {shown(name)} has a negative dimension: "
                                        f"{[d - (1 << 64) if d >= 1 << 63 else d for d in shape]}")
            numel = math.prod(shape)
            if numel > MAX_ELEMENTS:
                raise FormatError(path, f"tensor {shown(name)} has a shape no array can hold ({shown(list(shape))})")
            nbytes = numel * (kind.bits // 8)
            if nbytes > MAX_TENSOR_BYTES:
                raise FormatError(path, f"tensor {shown(name)} claims {nbytes:,} bytes, over the limit of "
                                        f"{MAX_TENSOR_BYTES:,} per tensor")
            if t.location == EXTERNAL:
                file, offset = _external(source, t, nbytes, externals)
            elif t.raw is not None:
                file, offset = source, t.raw[0]
                if t.raw[1] != nbytes:
                    raise FormatError(path, f"tensor {shown(name)} has {t.raw[1]:,} bytes of raw_data but {kind} x "
                                            f"{list(shape)} needs {nbytes:,}")
            else:
                _check_typed(path, t, kind, field, numel * per)
                file, offset = source, None
                typed[name] = (t.message[0], t.message[1], field)
            files[name] = file
            entries.append(TensorEntry(name, kind, shape, nbytes, None, offset))
        store = OnnxStore(path, entries, files, source, typed, metadata=metadata, version=version)
    except BaseException:
        for external in externals.values():
            external.close()
        raise
    store.users = {t.name: users.get(t.name, []) for t in tensors}
    return store


def _data_type(path: Any, t: _Tensor) -> tuple[dt.DType, int, int]:
    name = t.name
    if t.segment:
        raise FormatError(path, f"tensor {shown(name)} is stored in segments, which are not read (nor by onnx)")
    known = DATA_TYPES.get(t.data_type)
    if known is not None:
        return known
    if t.data_type == 8 or t.strings:
        raise FormatError(path, f"tensor {shown(name)} holds strings (data type STRING), not numbers: it is not read")
    type_name = TYPE_NAMES.get(t.data_type)
    if t.data_type == 0:
        raise FormatError(path, f"tensor {shown(name)} has no data type (UNDEFINED)")
    raise FormatError(path, f"tensor {shown(name)} has ONNX data type {type_name or t.data_type}, which is not read"
                      + ("" if type_name else " (ONNX defines no such type)"))


def _check_typed(path: Any, t: _Tensor, kind: dt.DType, field: int, count: int) -> None:
    """The typed field holds ``count`` values (exactly for fixed widths; within what its bytes allow for
    varints, counted exactly when read), and no other typed field holds any."""
    name = t.name
    other = next((f for f in t.typed if f != field and any(t.typed[f])), None)
    if other is not None:
        raise FormatError(path, f"tensor {shown(name)} holds {FIELD_NAMES[other]}, but ONNX keeps {kind} values in "
                                f"{FIELD_NAMES[field]}")
    packed, unpacked = t.typed.get(field, (0, 0))
    width = FIXED_WIDTH.get(field)
    if width is not None:
        if packed % width:
            raise FormatError(path, f"tensor {shown(name)}: its {FIELD_NAMES[field]} is {packed:,} bytes, not a whole "
                                    f"number of {width}-byte values")
        least = most = packed // width + unpacked
    else:
        least, most = -(-packed // 10) + unpacked, packed + unpacked
    if not least <= count <= most:
        held = f"{least:,}" if least == most else f"{least:,} to {most:,}"
        raise FormatError(path, f"tensor {shown(name)} holds {held} values in {FIELD_NAMES[field]}, but {kind} x "
                                f"{list(t.dims)} needs {count:,}")


def _external(source: ByteSource, t: _Tensor, nbytes: int, opened: dict[str, ByteSource]) -> tuple[ByteSource, int]:
    """The external file holding the tensor's bytes (opened once per file) and their offset in it."""
    path, name = source.path, t.name
    location = t.external.get("location")
    if location is None:
        raise FormatError(path, f"tensor {shown(name)} keeps its data in an external file but names none")
    relative = _relative(path, name, location)
    file = opened.get(relative)
    if file is None:
        if isinstance(path, Path):
            folder = os.path.realpath(path.parent)
            if os.path.commonpath([folder, os.path.realpath(path.parent / relative)]) != folder:
                raise FormatError(path, f"tensor {shown(name)}: external data file {shown(location)} leads outside "
                                        "the model's folder (through a symbolic link)")
        try:
            file = source.sibling(relative)
        except FormatError as exc:
            raise FormatError(path, f"tensor {shown(name)}: external data file {shown(location)} {exc.problem}"
                              ) from None
        opened[relative] = file
    offset = _number(path, name, t.external.get("offset", "0"), "offset")
    length = _number(path, name, t.external.get("length"), "length") if "length" in t.external else nbytes
    if length != nbytes:
        raise FormatError(path, f"tensor {shown(name)} has {length:,} bytes of external data but needs {nbytes:,}")
    if offset + nbytes > file.size:
        raise FormatError(path, f"tensor {shown(name)} needs bytes {offset:,}..{offset + nbytes:,} of "
                                f"{shown(location)}, which has {file.size:,}")
    return file, offset


def _relative(path: Any, name: str, location: str) -> str:
    """``location`` as a path inside the model's folder, or a FormatError naming the tensor and the path."""
    if "\0" in location:
        raise FormatError(path, f"tensor {shown(name)}: external data path {shown(location)} holds a NUL byte")
    slashed = location.replace("\\", "/")
    if slashed.startswith("/") or _DRIVE.match(slashed):
        raise FormatError(path, f"tensor {shown(name)}: external data path {shown(location)} is absolute; ONNX "
                                "external data must lie in the model's folder")
    normal = posixpath.normpath(slashed) if slashed else ""
    if normal == ".." or normal.startswith("../"):
        raise FormatError(path, f"tensor {shown(name)}: external data path {shown(location)} climbs out of the "
                                "model's folder")
    if normal in ("", ".") or slashed.endswith("/"):
        raise FormatError(path, f"tensor {shown(name)}: external data path {shown(location)} names no file")
    return normal


def _number(path: Any, name: str, text: str, key: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 20:
        raise FormatError(path, f"tensor {shown(name)}: external data {key} {shown(text)} is not a byte count")
    return int(text)


def _typed_values(path: Any, entry: TensorEntry, message: bytes, field: int) -> Any:
    """The values of a tensor kept in a typed field, decoded from its TensorProto message as onnx decodes them."""
    import numpy as np
    r = _Reader(_Bytes(path, message))
    fixed = field in FIXED_WIDTH
    parts: list[bytes] = []  # a fixed-width field's bytes, packed or not
    numbers: list[Any] = []  # a varint field's values: packed runs decoded at once, lone values as they came
    for number, wire, value in r.fields(0, len(message), f"tensor {entry.name!r}"):
        if number != field:
            continue
        if wire == LEN and not fixed:
            numbers.append(_decode_varints(path, entry.name, np.frombuffer(message, np.uint8, value[1], value[0])))
        elif wire == LEN:
            parts.append(message[value[0]:value[0] + value[1]])
        elif wire == VARINT:
            numbers.append(np.array([value], np.uint64))
        else:
            parts.append(message[value:value + (8 if wire == FIXED64 else 4)])
    per = 2 if entry.dtype in (dt.C64, dt.C128) else 1
    if fixed:
        values = np.frombuffer(b"".join(parts), "<f4" if field == FLOAT_DATA else "<f8")
        if per == 2:
            values = values.view("<c8" if field == FLOAT_DATA else "<c16")
    else:
        raw = np.concatenate(numbers) if numbers else np.zeros(0, np.uint64)
        if field == INT64_DATA:
            values = raw.view(np.int64)
        elif field == UINT64_DATA:
            values = raw.astype(entry.dtype.numpy)  # UINT32 keeps the low 32 bits, as onnx's astype does
        else:  # int32_data: a protobuf int32 is the low 32 bits; narrower types keep their low bits, as onnx does
            low = raw.astype(np.uint32)
            width = entry.dtype.bits
            values = low.view(np.int32) if width == 32 else low.astype(np.uint16 if width == 16 else np.uint8)
            values = values.view(entry.dtype.numpy)
    if values.size != math.prod(entry.shape):
        raise FormatError(path, f"tensor {entry.name!r} holds {values.size:,} values but {entry.dtype} x "
                                f"{list(entry.shape)} needs {math.prod(entry.shape):,}")
    values = values.reshape(entry.shape)
    values.flags.writeable = False
    return values


def _decode_varints(path: Any, name: str, data: Any) -> Any:
    """Packed varints as uint64 (numpy, every varint at a time; FormatError for a cut or overlong one)."""
    import numpy as np
    if not data.size:
        return np.zeros(0, np.uint64)
    ends = np.flatnonzero(data < 0x80)
    if not ends.size or ends[-1] != data.size - 1:
        raise FormatError(path, f"tensor {name!r}: its values end inside a number")
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > 10 or (lengths == 10).any() and (data[ends[lengths == 10]] > 1).any():
        raise FormatError(path, f"tensor {name!r}: a value is longer than 10 bytes or over 2**64")
    values = np.zeros(starts.size, np.uint64)
    for k in range(int(lengths.max())):
        has = lengths > k
        values[has] |= (data[starts[has] + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
    return values


class _Bytes:
    """Bytes in memory as the little of a ByteSource that ``_Reader`` uses."""

    def __init__(self, path: Any, data: bytes):
        self.path, self.data, self.size = path, data, len(data)

    def pread(self, offset: int, length: int, what: str = "data") -> bytes:
        return self.data[offset:offset + length]


class _Reader:
    """Protobuf fields read through positioned reads a window at a time; every length bounded by its message and
    the file, every problem one line naming what was being read.

    The window starts at ``FIRST_WINDOW`` bytes and doubles, up to ``WINDOW``, while each read starts where the
    last one ended (a graph of many nodes); a read past skipped bytes (a tensor's raw data) starts small again, so
    opening reads the structure and little of the weights between its pieces."""

    def __init__(self, source: Any):
        self.source, self.path, self.size = source, source.path, source.size
        self._window, self._start, self._ahead = b"", 0, FIRST_WINDOW

    def take(self, pos: int, n: int) -> bytes:
        offset = pos - self._start
        if 0 <= offset and offset + n <= len(self._window):
            return self._window[offset:offset + n]
        following = self._start <= pos <= self._start + len(self._window)
        self._ahead = min(self._ahead * 2, WINDOW) if following else FIRST_WINDOW
        length = min(max(n, self._ahead), self.size - pos)
        self._window, self._start = self.source.pread(pos, length, "the model's structure"), pos
        return self._window[:n]

    def varint(self, pos: int, end: int, what: str) -> tuple[int, int]:
        offset = pos - self._start
        if pos < end and 0 <= offset < len(self._window):  # most are one byte (tags, short lengths): in the window
            byte = self._window[offset]
            if byte < 0x80:
                return byte, pos + 1
        chunk = self.take(pos, min(10, end - pos))
        value = 0
        for i, byte in enumerate(chunk):
            value |= (byte & 0x7F) << (7 * i)
            if byte < 0x80:
                if i == 9 and byte > 1:
                    raise FormatError(self.path, f"{what}: a number at byte {pos:,} is over 2**64")
                return value, pos + i + 1
        if len(chunk) == 10:
            raise FormatError(self.path, f"{what}: a number at byte {pos:,} is longer than 10 bytes")
        raise FormatError(self.path, f"file is truncated or damaged: {what} ends inside a number at byte {pos:,}")

    def fields(self, start: int, end: int, what: str) -> Iterator[tuple[int, int, Any]]:
        """(field number, wire type, value) of each field in ``[start, end)``: an int for a varint, the offset of
        a fixed32/fixed64, (offset, length) of a length-delimited field (its bytes not read)."""
        pos = start
        while pos < end:
            key, pos = self.varint(pos, end, what)
            number, wire = key >> 3, key & 7
            if number == 0 or number >= 1 << 29:
                raise FormatError(self.path, f"{what}: field number {number} at byte {pos:,} is not valid protobuf")
            if wire == VARINT:
                value, pos = self.varint(pos, end, what)
            elif wire in (FIXED64, FIXED32):
                width = 8 if wire == FIXED64 else 4
                if width > end - pos:
                    raise FormatError(self.path, f"file is truncated or damaged: {what} ends inside field {number}")
                value, pos = pos, pos + width
            elif wire == LEN:
                length, pos = self.varint(pos, end, what)
                if length > end - pos:
                    raise FormatError(self.path, f"file is truncated or damaged: field {number} of {what} claims "
                                                 f"{length:,} bytes at byte {pos:,}, and {end - pos:,} are left in it")
                value, pos = (pos, length), pos + length
            elif wire in (3, 4):
                raise FormatError(self.path, f"{what}: field {number} is a protobuf group (wire type {wire}), which "
                                             "ONNX never writes")
            else:
                raise FormatError(self.path, f"{what}: field {number} has wire type {wire}, which protobuf does not "
                                             "define")
            yield number, wire, value

    def want(self, value: Any, wire: int, expected: int, part: str, what: object = "") -> Any:
        """``value``, if its wire type is ``expected``; what it is (``part`` + ``what``) is spelled out only in
        the message, which costs nothing while the file is sound."""
        if wire != expected:
            raise FormatError(self.path, f"{part}{what} has wire type {wire}, not {expected} as ONNX writes it")
        return value

    def string(self, value: Any, wire: int, limit: int, part: str, what: object = "") -> str:
        offset, length = self.want(value, wire, LEN, part, what)
        if length > limit:
            raise FormatError(self.path, f"{part}{what} is {length:,} bytes long, over the limit of {limit:,}")
        return self.take(offset, length).decode("utf-8", "replace")  # onnx's proto2 strings are not checked

    def packed_varints(self, span: tuple[int, int], most: int, what: str) -> list[int]:
        offset, length = span
        if length > most * 10:
            raise FormatError(self.path, f"{what} holds over {most - 1} values")
        values, pos, end = [], offset, offset + length
        while pos < end:
            value, pos = self.varint(pos, end, what)
            values.append(value)
        return values
