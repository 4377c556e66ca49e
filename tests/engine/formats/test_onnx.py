"""ONNX models open like any model file: every initializer listed with its name, dtype and shape, its values equal to
what ``onnx`` reads bit for bit (raw, typed fields and external data), the nodes that take it named, and a
conversion that keeps them exact. Opening reads the structure, not the weights, and every malformed or hostile
protobuf ends in one line naming the file. Without these a user would see wrong weights, wait for (or run out of
memory on) a large model, or be read files outside the model's folder."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from engine import dtypes as dt
from engine.errors import FormatError
from engine.formats import onnx as reader
from engine.sources.local import MappedFile
from tests.helpers.onnx_files import (
    EXPECTED_USERS,
    field,
    initializer,
    model,
    model_bytes,
    tensor_message,
    text,
    varint,
    write_external,
    write_model,
    write_torch,
)

EXPECTED_DTYPES = {
    "conv.weight": dt.F32, "conv.bias": dt.F32, "fc.weight": dt.F16, "fc.bias": dt.F16, "proj.weight": dt.BF16,
    "proj.bias": dt.BF16, "shape": dt.I64, "scale": dt.F64, "double.raw": dt.F64, "mask": dt.BOOL,
    "mask.raw": dt.BOOL, "int8": dt.I8, "uint8": dt.U8, "int16": dt.I16, "uint16": dt.U16, "int32": dt.I32,
    "int32.raw": dt.I32, "uint32": dt.U32, "uint64": dt.U64, "complex64": dt.C64, "complex128": dt.C128,
    "f8e4m3": dt.F8_E4M3, "f8e5m2": dt.F8_E5M2, "empty": dt.F32, "empty.typed": dt.F32,
}


UNWRITTEN = (dt.C64, dt.C128, dt.F8_E4M3, dt.F8_E5M2)  # dtypes neither writer holds (refused by export itself)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("onnx")
    return {"built": write_model(folder / "tiny.onnx"), "external": write_external(folder / "ext"),
            "torch": write_torch(folder)}


def users_in(graph: onnx.GraphProto) -> dict[str, list[tuple[str, str, int]]]:
    """Every initializer's users as the graph onnx loaded says."""
    found: dict[str, list[tuple[str, str, int]]] = {t.name: [] for t in graph.initializer}
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in found:
                found[name].append((node.name, node.op_type, i))
    return found


def refused(path: Path, *words: str) -> str:
    """Open ``path``; the FormatError's message, checked to be one line naming the file and holding ``words``."""
    with pytest.raises(FormatError) as caught:
        reader.open(path).close()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path.name}: ")
    for word in words:
        assert word in message
    return message


def write(tmp_path: Path, data: bytes, name: str = "bad.onnx") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- what opens ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["built", "external", "torch"])
def test_every_initializer_matches_onnx_bit_for_bit(files, which):
    """Names in graph order, dtypes, shapes and values are onnx's own for raw, typed and external initializers."""
    path = files[which]
    loaded = onnx.load(str(path))
    with reader.open(path) as store:
        assert store.names == [t.name for t in loaded.graph.initializer]
        for tensor in loaded.graph.initializer:
            expected = numpy_helper.to_array(tensor, str(path.parent))
            got = store.read(tensor.name)
            entry = store.entry(tensor.name)
            assert got.dtype == expected.dtype, tensor.name
            assert got.shape == expected.shape == entry.shape, tensor.name
            assert got.tobytes() == expected.tobytes(), tensor.name
            assert entry.nbytes == expected.nbytes
        assert store.users == users_in(loaded.graph)
        assert store.format == "onnx"
        assert store.description == f"ONNX IR v{loaded.ir_version}"
        assert store.metadata["producer_name"] == loaded.producer_name
        assert store.metadata["graph"] == loaded.graph.name


def test_dtypes_map_to_the_apps_own(files):
    with reader.open(files["built"]) as store:
        assert {e.name: e.dtype for e in store.entries} == EXPECTED_DTYPES


def test_users_name_node_operator_and_input_index(files):
    """The users of each initializer are what maps it to a Burn module: a tied weight has two, an unused none."""
    with reader.open(files["built"]) as store:
        for name, users in EXPECTED_USERS.items():
            assert store.users[name] == users
        assert store.users["mask"] == []
        assert set(store.users) == set(EXPECTED_DTYPES)


def test_metadata_carries_producer_graph_opset_and_props(files):
    with reader.open(files["built"]) as store:
        assert store.metadata == {"producer_name": "store-studio-tests", "producer_version": "1.0",
                                  "opset": "ai.onnx 17", "graph": "tiny", "author": "tests"}


def test_external_data_lists_both_files_and_offsets(files):
    path = files["external"]
    with reader.open(path) as store:
        assert [f.name for f in store.files] == ["external.onnx", "weights.bin"]
        loaded = onnx.load(str(path), load_external_data=False)
        external = [t for t in loaded.graph.initializer if t.data_location == TP.EXTERNAL]
        assert len(external) >= 5  # onnx moves raw data out; typed values stay in the model
        for tensor in external:
            info = {e.key: e.value for e in tensor.external_data}
            assert store.entry(tensor.name).offset == int(info.get("offset", "0"))


def test_raw_tensors_are_byte_ranges_and_typed_ones_stream(files):
    """Raw data copies in the kernel (a byte range of the file); typed values stream as their decoded bytes."""
    with reader.open(files["built"]) as store:
        fd, offset, length = store.entry("conv.weight").byte_range()
        assert os.pread(fd, length, offset) == store.read("conv.weight").tobytes()
        typed = store.entry("conv.bias")
        assert typed.offset is None and typed.byte_range() is None
        assert b"".join(typed.iter_bytes(3)) == store.read("conv.bias").tobytes()
        typed.verify()
        typed.release()


@pytest.mark.parametrize("suffix", [".safetensors", ".bpk"])
def test_converts_with_exact_values(files, tmp_path, suffix):
    from engine import open_store
    from engine.exporting import export
    for which in ("torch", "external"):
        with reader.open(files[which]) as store:
            wanted = [e for e in store.entries if e.dtype not in UNWRITTEN]
            dest = export(wanted, tmp_path / f"{which}{suffix}")
            with open_store(dest) as copy:
                assert copy.names == [e.name for e in wanted]
                for entry in wanted:
                    assert copy.read(entry.name).tobytes() == store.read(entry.name).tobytes(), entry.name


def test_sniff_knows_onnx_and_nothing_else(files):
    for path in files.values():
        assert reader.sniff(path.read_bytes()[:4096])
    safetensors_head = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    heads = [
        struct.pack("<Q", len(safetensors_head)) + safetensors_head,
        struct.pack("<Q", 0x1208) + b'{"__metadata__":{}}',  # a SafeTensors length starting with 0x08
        struct.pack("<I", 0x4255524E) + b"\x01\x00" + bytes(10),  # Burnpack
        b"PK\x03\x04" + bytes(26),  # zip (PyTorch)
        b"\x1f\x8b\x08\x00" + bytes(8),  # gzip (Burn record)
        b"\x82\xa4item\x01\xa8metadata\x80",  # MessagePack
        b'{"item": {}}',  # JSON
        b"GGUF\x03\x00\x00\x00" + bytes(16),
        b"\x08\x00\x00\x00\x00\x00\x00\x00abcd",  # bincode: a string length, then text
        b"\x08\x07\x00\x00",  # ir_version, then no valid tag
        b"\x08\x07\x3f\x00",  # a ModelProto field number with the wrong wire type
        b"\x08\xff\xff\xff\x7f\x12\x00",  # an ir_version no ONNX has
        b"\x08\x07",  # too short
        b"",
    ]
    for head in heads:
        assert not reader.sniff(head), head


def test_opening_reads_the_structure_not_the_weights(tmp_path):
    """A model of 32 MB of raw weights opens reading a few windows of its structure."""
    big = [numpy_helper.from_array(np.full((1024, 1024), i, np.float32), f"layer{i}.weight") for i in range(8)]
    path = tmp_path / "big.onnx"
    onnx.save_model(model(big, nodes=[helper.make_node("MatMul", ["X", "layer0.weight"], ["Z"])]), str(path))

    class Counting(MappedFile):
        read = 0

        def pread(self, offset, length, what="data"):
            Counting.read += length
            return super().pread(offset, length, what)

    with reader.open(Counting(path)) as store:
        assert len(store.entries) == 8 and store.users["layer0.weight"] == [("", "MatMul", 1)]
        assert Counting.read < 8 * (32 << 10) + (64 << 10)
        assert path.stat().st_size > 32 << 20
        assert store.read("layer5.weight")[3, 7] == 5


def test_deep_attribute_nesting_is_skipped_not_walked(tmp_path):
    """A node attribute nesting messages 20,000 deep (subgraphs are not walked) costs no recursion."""
    nested = b"x"
    for _ in range(20_000):
        nested = field(1, 2, nested)
    node = text(1, "w") + text(4, "Identity") + field(5, 2, nested)
    path = write(tmp_path, model_bytes(field(1, 2, node), initializer(tensor_message("w"))))
    with reader.open(path) as store:
        assert store.names == ["w"] and store.users == {"w": [("", "Identity", 0)]}
        assert store.read("w").tolist() == [0.0, 0.0]


def test_unknown_fields_are_skipped(tmp_path):
    extra = field(100, 0, 5) + field(101, 1, bytes(8)) + field(102, 5, bytes(4)) + field(103, 2, b"zz")
    path = write(tmp_path, model_bytes(extra, initializer(tensor_message("w", extra=extra)), before_graph=extra))
    with reader.open(path) as store:
        assert store.names == ["w"] and store.read("w").shape == (2,)
    assert onnx.load(str(path)).graph.initializer[0].name == "w"


def test_remote_model_with_external_data_reads_by_ranges(files):
    from tests.helpers.remote_http_site import Server, Site
    path = files["external"]
    site = Site(files={"/m/external.onnx": path.read_bytes(), "/m/weights.bin": (path.parent / "weights.bin")
                       .read_bytes()})
    server = Server(site)
    try:
        with reader.open(server.url("/m/external.onnx")) as remote, reader.open(path) as local:
            assert remote.names == local.names and remote.users == local.users
            for name in local.names:
                assert remote.read(name).tobytes() == local.read(name).tobytes()
    finally:
        server.close()


# --- what is refused, in one line -------------------------------------------------------------------------------

def test_truncated_file(files, tmp_path):
    data = files["built"].read_bytes()
    for cut in (len(data) // 2, len(data) - 3, 40):
        refused(write(tmp_path, data[:cut]), "truncated or damaged")


def test_varint_of_eleven_bytes(tmp_path):
    dims = varint(1 << 3) + b"\xff" * 10 + b"\x01"
    path = write(tmp_path, model_bytes(initializer(dims + field(2, 0, 1) + text(8, "w"))))
    refused(path, "longer than 10 bytes", "initializer #1")


def test_varint_over_two_to_the_64(tmp_path):
    path = write(tmp_path, model_bytes(initializer(varint(1 << 3) + b"\xff" * 9 + b"\x02" + text(8, "w"))))
    refused(path, "over 2**64")


def test_length_past_the_end(tmp_path):
    data = model_bytes(initializer(tensor_message("w")))
    refused(write(tmp_path, data[:-1]), "truncated or damaged", "claims")
    message = tensor_message("w")
    cut = field(5, 2, message)[:-4]  # the initializer claims more bytes than the graph holds
    refused(write(tmp_path, field(1, 0, 8) + field(7, 2, cut)), "claims", "the graph")


def test_two_gigabyte_string_in_a_small_file(tmp_path):
    data = field(1, 0, 8) + varint(2 << 3 | 2) + varint(2 << 30) + b"x" * 1000
    refused(write(tmp_path, data), "claims 2,147,483,648 bytes", "the model")


def test_long_names_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_NAME", 16)
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w" * 17)))), "over the limit of 16")


def test_names_that_are_not_utf8_read_with_replacement_characters(tmp_path):
    """onnx's strings are proto2 (never checked): onnx itself opens such a file, so the reader does too."""
    tensor = field(1, 0, 2) + field(2, 0, TP.FLOAT) + field(8, 2, b"w\xff") + field(9, 2, bytes(8))
    path = write(tmp_path, model_bytes(initializer(tensor)))
    with reader.open(path) as store:
        assert store.names == ["w\ufffd"]
    assert onnx.load(str(path)).graph.initializer[0].name == b"w\xff"


@pytest.mark.parametrize("wire, words", [(3, "protobuf group"), (4, "protobuf group"), (6, "does not define"),
                                         (7, "does not define")])
def test_odd_wire_types(tmp_path, wire, words):
    path = write(tmp_path, model_bytes(initializer(tensor_message("w")), varint(9 << 3 | wire) + bytes(4)))
    refused(path, words, "the graph")


def test_known_field_with_the_wrong_wire_type(tmp_path):
    bad = tensor_message("w", extra=field(2, 2, b"\x01"))  # data_type as bytes
    refused(write(tmp_path, model_bytes(initializer(bad))), "data_type", "wire type 2")


def test_field_number_zero(tmp_path):
    refused(write(tmp_path, model_bytes(b"\x00\x00")), "field number 0")


def test_two_graphs(tmp_path):
    data = model_bytes(initializer(tensor_message("w")))
    refused(write(tmp_path, data + field(7, 2, b"")), "two graphs")


@pytest.mark.parametrize("location, words", [
    ("../x.bin", "climbs out"), ("a/../../x.bin", "climbs out"), ("/etc/passwd", "is absolute"),
    ("C:\\weights.bin", "is absolute"), ("..\\x.bin", "climbs out"), ("w\0.bin", "NUL"), ("", "names no file"),
    ("sub/", "names no file")])
def test_external_paths_outside_the_folder(tmp_path, location, words):
    external = (field(13, 2, text(1, "location") + text(2, location)) + field(14, 0, 1))
    path = write(tmp_path, model_bytes(initializer(tensor_message("w", raw=None, extra=external))))
    message = refused(path, words, "tensor 'w'")
    assert "passwd" not in message or "/etc/passwd" in message


def test_external_symlink_out_of_the_folder(tmp_path):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(bytes(8))
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "w.bin").symlink_to(outside)
    external = field(13, 2, text(1, "location") + text(2, "w.bin")) + field(14, 0, 1)
    path = write(tmp_path / "model", model_bytes(initializer(tensor_message("w", raw=None, extra=external))))
    refused(path, "symbolic link", "tensor 'w'")


def test_external_ranges_are_checked(tmp_path):
    (tmp_path / "w.bin").write_bytes(bytes(12))

    def with_external(*pairs: tuple[str, str]) -> Path:
        entries = b"".join(field(13, 2, text(1, k) + text(2, v)) for k, v in pairs)
        return write(tmp_path, model_bytes(initializer(tensor_message("w", raw=None, extra=entries
                                                                                        + field(14, 0, 1)))))

    refused(with_external(("location", "w.bin"), ("offset", "8")), "needs bytes 8..16", "has 12")
    refused(with_external(("location", "w.bin"), ("length", "4")), "4 bytes of external data but needs 8")
    refused(with_external(("location", "w.bin"), ("offset", "-1")), "not a byte count")
    refused(with_external(("location", "missing.bin")), "missing.bin", "tensor 'w'")
    refused(with_external(("offset", "0")), "names none")
    with reader.open(with_external(("location", "w.bin"), ("offset", "4"), ("length", "8"))) as store:
        assert store.read("w").tolist() == [0.0, 0.0]


def test_sparse_initializer(tmp_path):
    sparse = helper.make_sparse_tensor(helper.make_tensor("sp.values", TP.FLOAT, [1], [1.0]),
                                       helper.make_tensor("sp.indices", TP.INT64, [1], [0]), [3])
    made = model([numpy_helper.from_array(np.ones(2, np.float32), "w")], nodes=[])
    made.graph.sparse_initializer.append(sparse)
    path = tmp_path / "sparse.onnx"
    onnx.save_model(made, str(path))
    refused(path, "sparse initializer 'sp.values' is not read")


@pytest.mark.parametrize("data_type, words", [(99, "ONNX data type 99"), (22, "INT4"), (0, "no data type"),
                                              (8, "strings"), (18, "FLOAT8E4M3FNUZ")])
def test_unread_data_types(tmp_path, data_type, words):
    path = write(tmp_path, model_bytes(initializer(tensor_message("w", data_type, raw=bytes(2)))))
    refused(path, words, "tensor 'w'")


def test_string_tensor_from_onnx(tmp_path):
    made = model([helper.make_tensor("labels", TP.STRING, [2], [b"a", b"b"])], nodes=[])
    path = tmp_path / "strings.onnx"
    onnx.save_model(made, str(path))
    refused(path, "strings", "tensor 'labels'")


def test_shapes_and_sizes(tmp_path, monkeypatch):
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w", raw=bytes(12))))),
            "12 bytes of raw_data", "needs 8")
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w", dims=(2 ** 64 - 1,))))), "negative dimension")
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w", dims=(1,) * 65)))), "over 64 dimensions")
    packed = field(1, 2, b"".join(varint(1) for _ in range(70)))
    refused(write(tmp_path, model_bytes(initializer(packed + text(8, "w")))), "over 64 dimensions")
    packed = field(1, 2, b"".join(varint(1) for _ in range(700)))
    refused(write(tmp_path, model_bytes(initializer(packed + text(8, "w")))), "holds over 64 values")
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w", dims=(1 << 40, 1 << 30))))),
            "no array can hold")
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w", dims=(1 << 30, 1 << 20))))),
            "over the limit")
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w") + field(3, 2, b""))),), "segments")


def test_typed_values_must_fit_the_shape(tmp_path):
    floats = field(4, 2, struct.pack("<3f", 1, 2, 3))
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w", raw=None, extra=floats)))),
            "holds 3 values in float_data", "needs 2")
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w", raw=None, extra=field(4, 2, bytes(7)))))),
            "not a whole number of 4-byte values")
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w", raw=None, extra=field(5, 2, b"\x01\x02"))))),
            "holds int32_data, but ONNX keeps F32 values in float_data")
    refused(write(tmp_path, model_bytes(initializer(tensor_message("w", raw=None)))), "holds 0 values")
    ints = field(7, 2, b"\x01\x02\x03")  # three varints where the shape needs two: counted when read
    cut = field(7, 2, b"\x01\x82")  # the last varint never ends
    for extra, words in ((ints, r"^bad\.onnx: tensor 'w' holds 3 values but I64 x \[2\] needs 2$"),
                         (cut, r"^bad\.onnx: tensor 'w': its values end inside a number$")):
        path = write(tmp_path, model_bytes(initializer(tensor_message("w", TP.INT64, raw=None, extra=extra))))
        with reader.open(path) as store, pytest.raises(FormatError, match=words):
            store.read("w")


def test_unpacked_typed_values_read_as_protobuf_reads_them(tmp_path):
    """Repeated scalars written one by one (legal protobuf, though onnx packs them) read as onnx reads them."""
    values = field(4, 5, struct.pack("<f", 1.5)) + field(4, 2, struct.pack("<f", -2.0)) + field(4, 5,
                                                                                                struct.pack("<f", 3))
    ints = field(7, 0, 2 ** 64 - 5) + field(7, 2, varint(7) + varint(2 ** 63))
    path = write(tmp_path, model_bytes(initializer(tensor_message("f", dims=(3,), raw=None, extra=values)),
                                       initializer(tensor_message("i", TP.INT64, dims=(3,), raw=None, extra=ints))))
    loaded = onnx.load(str(path))
    with reader.open(path) as store:
        for tensor in loaded.graph.initializer:
            assert store.read(tensor.name).tobytes() == numpy_helper.to_array(tensor).tobytes()
        assert store.read("i").tolist() == [-5, 7, -(2 ** 63)]


def test_count_limits(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_ITEMS", 2)
    three = [initializer(tensor_message(f"w{i}")) for i in range(3)]
    refused(write(tmp_path, model_bytes(*three)), "over 2 initializers")
    nodes = [field(1, 2, text(1, "x") + text(4, "Relu")) for _ in range(3)]
    refused(write(tmp_path, model_bytes(*nodes)), "over 2 nodes")
    monkeypatch.setattr(reader, "MAX_INPUTS", 3)
    refused(write(tmp_path, model_bytes(field(1, 2, text(1, "a") + text(1, "b") + text(1, "c") + text(1, "d")))),
            "over 3 inputs")


def test_duplicate_names_are_refused(tmp_path):
    path = write(tmp_path, model_bytes(initializer(tensor_message("w")), initializer(tensor_message("w"))))
    refused(path, "'w' appears twice")


def test_open_store_opens_onnx_once_its_reader_is_listed(files, monkeypatch):
    """Asked after every other reader (none of which claims an ONNX file), the reader opens it by its bytes."""
    from engine import formats
    if "onnx" not in formats.READERS:
        monkeypatch.setattr(formats, "READERS", formats.READERS + ("onnx",))
    for path in files.values():
        with formats.open_store(path) as store:
            assert isinstance(store, reader.OnnxStore)
            assert store.names == [t.name for t in onnx.load(str(path), load_external_data=False).graph.initializer]


def test_inspect_json_names_the_nodes_that_read_each_initializer(tmp_path):
    """``inspect --json``'s ``used_by`` is what maps an initializer to the Burn module it becomes."""
    import json

    from tests.helpers.engine_cli_run import run
    path = write_model(tmp_path / "m.onnx")
    done = run("inspect", str(path), "--json")
    assert done.returncode == 0, done.stderr
    tensors = {t["name"]: t for t in json.loads(done.stdout)["tensors"]}
    assert tensors["fc.weight"]["used_by"] == [{"node": "/fc/Gemm", "op": "Gemm", "input": 1},
                                               {"node": "/tied/MatMul", "op": "MatMul", "input": 1}]
    assert json.loads(done.stdout)["format"] == "onnx"
