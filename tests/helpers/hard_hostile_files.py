"""Generators of hostile files, one per class of attack the readers must refuse cleanly.

Each generator takes a size knob (a depth, a count, bytes) so tests and the fuzzer can make
several sizes of the same attack; each ``Case`` says what a clean refusal must mention. None of
this reads a file someone else made: every input is built here, byte by byte or by real torch.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

PROTO = b"\x80\x02"
HASH_MODULUS = (1 << 61) - 1  # CPython hashes an int to itself modulo this: its multiples all hash to 0


@dataclass(frozen=True)
class Case:
    """One hostile input: its class, the file, and a regex its one-line refusal must match
    (``None``: it must open and convert cleanly, only fast)."""

    kind: str
    path: Path
    refuses: str | None


# --- bytes of pickles -------------------------------------------------------------------------------

def _text(value: str) -> bytes:
    raw = value.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(raw)) + raw


def _long(value: int) -> bytes:
    raw = value.to_bytes((value.bit_length() + 8) // 8 or 1, "little", signed=True)
    return (b"\x8a" + struct.pack("<B", len(raw)) if len(raw) < 256 else b"\x8b" + struct.pack("<i", len(raw))) + raw


def deep_tuple_key(depth: int) -> bytes:
    """``{((...(0,)...),): 1}``: the tuple is hashed as a dict key, recursing ``depth`` deep in C."""
    return PROTO + b"}K\x00" + b"\x85" * depth + b"K\x01s."


def deep_list(depth: int) -> bytes:
    return PROTO + b"]" * depth + b"a" * (depth - 1) + b"."


def deep_dict(depth: int) -> bytes:
    return PROTO + (b"}" + _text("k")) * (depth - 1) + b"}" + b"s" * (depth - 1) + b"."


def colliding_int_keys(count: int) -> bytes:
    """A dict of ``count`` integer keys that all hash to 0: quadratic to build naively."""
    items = b"".join(_long(HASH_MODULUS * (i + 1)) + b"K\x00" for i in range(count))
    return PROTO + b"}(" + items + b"u."


def big_int(digits: int, where: str) -> bytes:
    """An integer of ``digits`` decimal digits as a dict key or value."""
    number = _long(10 ** digits)
    return PROTO + b"}" + (number + b"K\x00" if where == "key" else _text("v") + number) + b"s."


def deep_persistent_id(depth: int) -> bytes:
    """A persistent id nested ``depth`` deep: the error message that names it must not recurse."""
    return PROTO + b"K\x00" + b"\x85" * depth + b"Q."


# --- placeholders, whole modules and TorchScript (objects of classes nothing imports) ---------------

_PLACEHOLDER_CLASS = b"c__main__\nX\nq\x00"  # GLOBAL once, memoized; h\x00 fetches it again


def deep_placeholders(depth: int) -> bytes:
    """``X(state={"a": X(state={"a": ...})})`` nested ``depth`` deep: NEWOBJ, a dict, then BUILD each."""
    return PROTO + _PLACEHOLDER_CLASS + b"0" + (b"h\x00)\x81}" + _text("a")) * depth + b"N" + b"sb" * depth + b"."


def placeholder_fan(levels: int, fan: int) -> bytes:
    """Placeholders whose arguments repeat the level below ``fan`` times: ``fan ** levels`` nodes to walk."""
    get = lambda index: b"j" + struct.pack("<I", index)  # noqa: E731 - LONG_BINGET
    put = lambda index: b"r" + struct.pack("<I", index)  # noqa: E731 - LONG_BINPUT
    out = PROTO + _PLACEHOLDER_CLASS + b"0]K\x00a" + put(1) + b"0"  # memo 1: the innermost list
    for level in range(1, levels + 1):
        out += b"h\x00(" + get(level) * fan + b"tR" + put(level + 1) + b"0"
    return out + get(levels + 1) + b"."


def cyclic_modules() -> bytes:
    """A pickled module whose ``_modules`` holds the module itself."""
    return (PROTO + b"c__main__\nNet\n)\x81q\x00}(" + _text("_parameters") + b"}" + _text("_buffers") + b"}"
            + _text("_modules") + b"}" + _text("self") + b"h\x00su" + b"b.")


def colliding_placeholder_items(count: int) -> bytes:
    """A dict subclass (a placeholder) whose SETITEMS keys all hash to 0."""
    items = b"".join(_long(HASH_MODULUS * (i + 1)) + b"K\x00" for i in range(count))
    return PROTO + _PLACEHOLDER_CLASS + b")\x81(" + items + b"u."


def torchscript_entries(count: int) -> bytes:
    """A TorchScript archive of one small module plus ``count`` other entries (zipfile reads them all)."""
    module = (PROTO + b"c__torch__\nM\n)\x81}(" + _text("training") + b"\x88" + _text("w") + b"K\x01ub.")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("a/data.pkl", module)
        archive.writestr("a/constants.pkl", PROTO + b").")
        archive.writestr("a/code/__torch__.py", 'class M(Module):\n  __parameters__ = []\n  __buffers__ = []\n')
        for i in range(count):
            archive.writestr(f"a/{i:x}", b"")
    return out.getvalue()


def torchscript_many_classes(count: int) -> bytes:
    """A TorchScript data.pkl whose module attributes are objects of ``count`` classes from distinct files."""
    attributes = b"".join(_text(f"m{i}") + b"c__torch__.f" + str(i).encode() + b"\nM\n)\x81}b" for i in range(count))
    module = PROTO + b"c__torch__\nM\n)\x81}(" + attributes + b"ub."
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("a/data.pkl", module)
        archive.writestr("a/constants.pkl", PROTO + b").")
        source = 'class M(Module):\n  __parameters__ = []\n  __buffers__ = []\n'
        archive.writestr("a/code/__torch__.py", source)
        for i in range(count):
            archive.writestr(f"a/code/__torch__/f{i}.py", source)
    return out.getvalue()


# --- PyTorch containers ----------------------------------------------------------------------------

def zip_checkpoint(pickle_bytes: bytes, method: int = zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        archive.writestr("ckpt/data.pkl", pickle_bytes)
        archive.writestr("ckpt/byteorder", b"little", zipfile.ZIP_STORED)
    return out.getvalue()


def zip_bomb(expanded: int, method: int, forged_size: int | None = None) -> bytes:
    """A checkpoint whose data.pkl (a valid pickle, then zeros) inflates to ``expanded`` bytes.

    ``forged_size`` rewrites the size the headers state, so only bounded inflation stops it.
    """
    if method == zipfile.ZIP_DEFLATED:  # raw deflate, streamed (zipfile would hold the member whole)
        packed = zlib.compressobj(9, zlib.DEFLATED, -15)
        parts: list[bytes] = []
        crc = _stream_payload(lambda chunk: parts.append(packed.compress(chunk)), expanded)
        data = bytearray(_single_member_zip(b"".join(parts) + packed.flush(), expanded, crc, method))
    else:  # bz2, lzma: zipfile compresses a stream
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", method) as archive:
            info = zipfile.ZipInfo("ckpt/data.pkl")
            info.compress_type = method
            with archive.open(info, "w", force_zip64=True) as member:
                _stream_payload(member.write, expanded)
            archive.writestr("ckpt/byteorder", b"little")
        data = bytearray(out.getvalue())
    if forged_size is not None:
        _forge_sizes(data, forged_size)
    return bytes(data)


def _stream_payload(write: Callable[[bytes], object], expanded: int) -> int:
    head = PROTO + b"N."
    write(head)
    crc = zlib.crc32(head)
    zeros = bytes(min(16 << 20, expanded))
    left = expanded - len(head)
    while left > 0:
        chunk = zeros[:left] if left < len(zeros) else zeros
        write(chunk)
        crc = zlib.crc32(chunk, crc)
        left -= len(chunk)
    return crc


def _single_member_zip(body: bytes, size: int, crc: int, method: int) -> bytes:
    name = b"ckpt/data.pkl"
    local = struct.pack("<4sHHHHHIII", b"PK\x03\x04", 20, 0, method, 0, 0, crc, len(body), size) + \
        struct.pack("<HH", len(name), 0) + name
    order_name, order = b"ckpt/byteorder", b"little"
    order_offset = len(local) + len(body)
    order_local = struct.pack("<4sHHHHHIII", b"PK\x03\x04", 20, 0, 0, 0, 0, zlib.crc32(order), len(order),
                              len(order)) + struct.pack("<HH", len(order_name), 0) + order_name
    central = b""
    for entry_name, kind, entry_crc, packed, plain, offset in (
            (name, method, crc, len(body), size, 0), (order_name, 0, zlib.crc32(order), len(order), len(order),
                                                      order_offset)):
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, kind, 0, 0, entry_crc, packed, plain,
                               len(entry_name), 0, 0, 0, 0, 0, offset) + entry_name
    start = order_offset + len(order_local) + len(order)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 2, 2, len(central), start, 0)
    return local + body + order_local + order + central + end


def _forge_sizes(data: bytearray, size: int) -> None:
    """State ``size`` as data.pkl's uncompressed size in its local and central headers."""
    local = data.find(b"PK\x03\x04")
    struct.pack_into("<I", data, local + 22, size)
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, size)


def legacy_big_protocol(digits: int) -> bytes:
    """The legacy layout's magic number, then a protocol "number" of ``digits`` digits."""
    return pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + PROTO + _long(10 ** digits) + b"."


def tar_big_count(digits: int) -> bytes:
    """A pre-0.1.10 tar checkpoint whose storage count has ``digits`` digits."""
    members = {"sys_info": pickle.dumps({"little_endian": True}, protocol=2),
               "storages": PROTO + _long(10 ** digits) + b".",
               "tensors": pickle.dumps(0, protocol=2), "pickle": pickle.dumps({}, protocol=2)}
    return tar_bytes(members)


def tar_bytes(members: dict[str, bytes]) -> bytes:
    """A tar archive (PAX, as torch's tar layout was written) of ``members``, name -> bytes, in order."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))
    return out.getvalue()


def shared_tensor_lists(path: Path, fan: int) -> Path:
    """One tensor referenced ``fan ** 3`` times through shared lists: a few KB of pickle (needs torch)."""
    import torch
    inner = [torch.zeros(1)] * fan
    torch.save({"m": [[inner] * fan] * fan}, path)
    return path


def broadcast_views(path: Path, names: int, elements: int) -> Path:
    """``names`` tensors, each a stride-0 view of one element repeated ``elements`` times (needs torch)."""
    import torch
    one = torch.ones(1)
    torch.save({f"t{i}": one.expand(elements) for i in range(names)}, path)
    return path


def surrogate_name(path: Path) -> Path:
    import torch
    torch.save({"weight\ud800": torch.zeros(2)}, path)
    return path


# --- SafeTensors and Burnpack -------------------------------------------------------------------------

def safetensors(header: bytes, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header + data


def deep_json_shape(depth: int) -> bytes:
    return safetensors(b'{"t":{"dtype":"F32","shape":' + b"[" * depth + b"]" * depth + b',"data_offsets":[0,0]}}')


def deep_json_metadata(depth: int) -> bytes:
    return safetensors(b'{"__metadata__":{"k":' + b"[" * depth + b"]" * depth + b'}}')


def duplicated_field(field: str) -> bytes:
    fields = {"dtype": '"dtype":"F32","dtype":"F16"', "shape": '"shape":[1],"shape":[2]',
              "data_offsets": '"data_offsets":[0,4],"data_offsets":[0,4]'}
    body = fields[field] + "".join(f',"{k}":{v}' for k, v in (("dtype", '"F32"'), ("shape", "[1]"),
                                                                ("data_offsets", "[0,4]")) if k != field)
    return safetensors(("{" + f'"t":{{{body}}}' + "}").encode(), bytes(4))


def duplicated_metadata() -> bytes:
    return safetensors(b'{"__metadata__":{"a":"1"},"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                       b'"__metadata__":{"a":"2"}}', bytes(4))


def safetensors_surrogate(where: str) -> bytes:
    name, value = ("t\\ud800", "v") if where == "name" else ("t", "\\udc00")
    return safetensors(f'{{"__metadata__":{{"k":"{value}"}},"{name}":{{"dtype":"F32","shape":[1],'
                       f'"data_offsets":[0,4]}}}}'.encode(), bytes(4))


def sharded_aliases(folder: Path, aliases: int) -> Path:
    """One shard of ``aliases`` tensors, each mapped by the index through another spelling of its path."""
    arrays = {f"t{i}": np.full(2, i, np.float32) for i in range(aliases)}
    header, offset = {}, 0
    for name, array in arrays.items():
        header[name] = {"dtype": "F32", "shape": [2], "data_offsets": [offset, offset + 8]}
        offset += 8
    raw = json.dumps(header).encode()
    (folder / "a.safetensors").write_bytes(safetensors(raw, b"".join(a.tobytes() for a in arrays.values())))
    weight_map = {name: "." + "/" * (i + 1) + "a.safetensors" for i, name in enumerate(arrays)}
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": offset}, "weight_map": weight_map}))
    return index


def index_to(folder: Path, shard: str) -> Path:
    index = folder / "bad.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"t": shard}}))
    return index


def burnpack(meta: bytes, data: bytes = b"") -> bytes:
    head = b"NRUB" + struct.pack("<HI", 1, len(meta)) + meta
    return head + bytes(-len(head) % 256) + data


def deep_cbor(depth: int) -> bytes:
    """Burnpack metadata whose ``metadata`` value is an array nested ``depth`` deep."""
    import cbor2
    return burnpack(b"\xa2" + cbor2.dumps("tensors") + b"\xa0" + cbor2.dumps("metadata") + b"\x81" * depth + b"\x00")


def burnpack_param_id(param_id: object) -> bytes:
    import cbor2
    meta = cbor2.dumps({"tensors": {"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4],
                                          "param_id": param_id}}})
    return burnpack(meta, bytes(4))


# --- the catalogue: every class, several sizes ------------------------------------------------------

MiB = 1 << 20


def gguf_strings(count: int) -> bytes:
    """A key holding ``count`` one-letter strings (a tokenizer's shape), then a tensor past the file's end."""
    from tests.helpers.gguf_files import raw_file, tensor_info, text
    items = text("t") * count
    return raw_file(keys=text("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, count) + items, n_keys=1,
                    infos=(tensor_info("w", (1 << 20,), 0, 0),))


def gguf_nested(depth: int) -> bytes:
    """A key whose array nests ``depth`` arrays deep."""
    from tests.helpers.gguf_files import raw_file, text
    return raw_file(keys=text("k") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * depth + bytes(64), n_keys=1)


def gguf_tensors(count: int) -> bytes:
    """``count`` tensors of 8 F32 values each, the last one past the file's end."""
    from tests.helpers.gguf_files import raw_file, tensor_info
    infos = tuple(tensor_info(f"t{i}", (8,), 0, 32 * i) for i in range(count))
    return raw_file(infos=infos, data=bytes(32 * (count - 1)))


def onnx_initializers(count: int) -> bytes:
    """``count`` one-value initializers (about 20 bytes each), the last one's data cut short."""
    from tests.helpers.onnx_files import initializer, model_bytes, tensor_message
    tensors = [initializer(tensor_message(f"t{i}", dims=(1,), raw=bytes(4))) for i in range(count - 1)]
    return model_bytes(*tensors, initializer(tensor_message("last", dims=(1 << 20,), raw=bytes(4))))


def onnx_nodes(count: int) -> bytes:
    """``count`` nodes each reading the one initializer twice, then a varint of 11 bytes."""
    from tests.helpers.onnx_files import field, initializer, model_bytes, tensor_message, text
    node = field(1, 2, text(1, "w") + text(1, "w") + text(4, "Add"))
    return model_bytes(initializer(tensor_message("w", dims=(2,))), node * count, b"\x08" + b"\xff" * 11)


def _bytes(make: Callable[[], bytes], suffix: str) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = folder / f"hostile{suffix}"
        path.write_bytes(make())
        return path
    return build


def _torch(make: Callable[[Path], Path]) -> Callable[[Path], Path]:
    return lambda folder: make(folder / "hostile.pt")


# (class, size label, builder, what the refusal says or None for "opens, fast")
CATALOGUE: list[tuple[str, str, Callable[[Path], Path], str | None]] = [
    *[("nesting", f"tuple-key-{d}", _bytes(lambda d=d: deep_tuple_key(d), ".pt"), r"nested deeper than 100 levels")
      for d in (101, 5_000, 150_000)],
    *[("nesting", f"list-{d}", _bytes(lambda d=d: deep_list(d), ".pt"), r"nested deeper than 100 levels")
      for d in (101, 20_000, 300_000)],
    *[("nesting", f"dict-{d}", _bytes(lambda d=d: deep_dict(d), ".pt"), r"nested deeper than 100 levels")
      for d in (101, 50_000)],
    *[("nesting", f"json-shape-{d}", _bytes(lambda d=d: deep_json_shape(d), ".safetensors"),
       r"nested \d+ levels deep|nested deeper than 64 levels \(\d+ levels\)") for d in (65, 900, 200_000)],
    *[("nesting", f"json-metadata-{d}", _bytes(lambda d=d: deep_json_metadata(d), ".safetensors"),
       r"nested \d+ levels deep|nested deeper than 64 levels \(\d+ levels\)") for d in (70, 100_000)],
    *[("nesting", f"cbor-{d}", _bytes(lambda d=d: deep_cbor(d), ".bpk"), r"CBOR nested deeper than 128 levels")
      for d in (129, 400, 500_000)],
    *[("zip-bomb", f"{name}-{size // MiB}MiB", _bytes(lambda m=method, s=size: zip_bomb(s, m), ".pt"),
       r"would expand \d+ times") for name, method, sizes in (
          ("deflate", zipfile.ZIP_DEFLATED, (64 * MiB, 1024 * MiB)), ("bzip2", zipfile.ZIP_BZIP2, (64 * MiB,)),
          ("lzma", zipfile.ZIP_LZMA, (64 * MiB,))) for size in sizes],
    *[("zip-bomb", f"{name}-forged-{size // MiB}MiB",
       _bytes(lambda m=method, s=size: zip_bomb(s, m, forged_size=1000), ".pt"), r"other bytes than its header states")
      for name, method, size in (("deflate", zipfile.ZIP_DEFLATED, 256 * MiB), ("bzip2", zipfile.ZIP_BZIP2, 64 * MiB))],
    *[("nesting", f"placeholders-{d}", _bytes(lambda d=d: deep_placeholders(d), ".pt"),
       r"nested deeper than 100 levels") for d in (101, 10_000, 50_000)],
    ("nesting", "module-cycle", _bytes(cyclic_modules, ".pt"), r"contains itself at self"),
    *[("memo-sharing", f"placeholder-fan-{fan}", _bytes(lambda f=fan: placeholder_fan(6, f), ".pt"),
       r"expands to \d+ objects") for fan in (20, 100)],
    *[("hash-flooding", f"placeholder-items-{n}", _bytes(lambda n=n: colliding_placeholder_items(n), ".pt"),
       r"with the same hash") for n in (1_000, 80_000)],
    ("torchscript", "entries-100000", _bytes(lambda: torchscript_entries(100_000), ".pt"), None),
    ("torchscript", "classes-5000", _bytes(lambda: torchscript_many_classes(5_000), ".pt"),
     r"names classes from more than 4096 source files"),
    *[("memo-sharing", f"fan-{fan}", _torch(lambda p, f=fan: shared_tensor_lists(p, f)), r"expands to \d+ objects")
      for fan in (50, 100, 170)],
    *[("hash-flooding", f"int-keys-{n}", _bytes(lambda n=n: colliding_int_keys(n), ".pt"), r"with the same hash")
      for n in (1_000, 20_000, 80_000)],
    *[("broadcast", f"{n}x{e}", _torch(lambda p, n=n, e=e: broadcast_views(p, n, e)), r"claim \d+ bytes in all")
      for n, e in ((100, 1 << 26), (1_000, 1 << 26), (1_000, 1 << 21))],
    *[("shard-aliases", f"{n}", lambda folder, n=n: sharded_aliases(folder, n), None) for n in (500, 2_000, 4_000)],
    *[("traceback", f"int-{where}-{d}", _bytes(lambda d=d, w=where: big_int(d, w), ".pt"), r"an integer of \d+ bytes")
      for where in ("key", "value") for d in (4_400, 100_000)],
    *[("traceback", f"legacy-protocol-{d}", _bytes(lambda d=d: legacy_big_protocol(d), ".pt"),
       r"an integer of \d+ bytes") for d in (4_400, 50_000)],
    *[("traceback", f"tar-count-{d}", _bytes(lambda d=d: tar_big_count(d), ".pt"), r"an integer of \d+ bytes")
      for d in (4_400, 50_000)],
    ("traceback", "persistent-id-90", _bytes(lambda: deep_persistent_id(90), ".pt"), r"persistent id"),
    ("traceback", "surrogate-pickle-name", _torch(surrogate_name), r"lone surrogate"),
    ("traceback", "surrogate-json-name", _bytes(lambda: safetensors_surrogate("name"), ".safetensors"),
     r"lone surrogate"),
    ("traceback", "surrogate-json-metadata", _bytes(lambda: safetensors_surrogate("metadata"), ".safetensors"),
     r"lone surrogate"),
    *[("traceback", f"index-to-{label}", lambda folder, s=shard: index_to(folder, s), r"names no file")
      for label, shard in (("empty", ""), ("dot", "."), ("dot-slash", "./"), ("up-again", "sub/.."))],
    *[("official-refuses", f"duplicated-{field}", _bytes(lambda f=field: duplicated_field(f), ".safetensors"),
       f"names '{field}' twice") for field in ("dtype", "shape", "data_offsets")],
    ("official-refuses", "duplicated-metadata", _bytes(duplicated_metadata, ".safetensors"),
     "names '__metadata__' twice"),
    *[("gguf", f"strings-{n}", _bytes(lambda n=n: gguf_strings(n), ".gguf"), r"truncated or its header is wrong")
      for n in (10_000, 200_000)],
    *[("gguf", f"nested-{d}", _bytes(lambda d=d: gguf_nested(d), ".gguf"), r"nests arrays over 4 deep")
      for d in (5, 100_000)],
    *[("gguf", f"tensors-{n}", _bytes(lambda n=n: gguf_tensors(n), ".gguf"), r"truncated or its header is wrong")
      for n in (1_000, 40_000)],
    *[("onnx", f"initializers-{n}", _bytes(lambda n=n: onnx_initializers(n), ".onnx"), r"last")
      for n in (1_000, 90_000)],
    *[("onnx", f"nodes-{n}", _bytes(lambda n=n: onnx_nodes(n), ".onnx"), r"longer than 10 bytes")
      for n in (1_000, 100_000)],
    *[("official-refuses", f"param-id-{value}", _bytes(lambda v=value: burnpack_param_id(v), ".bpk"),
       r"invalid param_id") for value in (-1, -(1 << 63), 1.5, "7")],
]
CLASSES = sorted({kind for kind, *_ in CATALOGUE})
