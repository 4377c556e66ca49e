"""The readers' limits at their exact edges, on real files: what the mutation run (README, "Testing: mutation
runs") found no test checking. Each limit is tested on both sides, so a limit moved by one, or a check
turned around, changes a verdict or a message a user reads.

Promise -> test:
- "Burnpack: version 1" -> test_burnpack_version_0_and_newer_versions_are_refused_by_name
- "metadata up to 100 MiB" -> test_burnpack_metadata_of_exactly_100_mib_is_not_over_the_limit
- Burnpack's tensors sit at 256-aligned offsets -> test_burnpack_data_starts_at_the_next_256_byte_boundary
- a param_id is kept, one Burn cannot hold is refused -> test_burnpack_param_ids_from_0_to_2_64_minus_1_are_kept,
  test_burnpack_param_ids_burn_cannot_hold_are_refused
- scalars keep their kind -> test_burnpack_scalars_of_each_kind_are_kept, test_burnpack_scalars_of_the_wrong_kind_are_refused
- "SafeTensors: headers up to 100 MB" -> test_safetensors_header_of_exactly_100_mb_is_not_over_the_limit
- a sharded index names only files beside it -> test_a_shard_outside_the_folder_or_naming_no_file_is_refused
- a sharded index is checked against its shards -> test_a_sharded_index_is_refused_when_malformed
"""

from __future__ import annotations

import json
import struct

import cbor2
import numpy as np
import pytest
import safetensors
import torch

from engine import FormatError, open_store
from tests.refusals import refusal

F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
VALUES = np.array([1.5, -2.25], "<f4")


def burnpack_bytes(meta: dict | bytes, data: bytes, *, version: int = 1) -> bytes:
    """A Burnpack laid out by hand: magic, version, metadata length, CBOR (by cbor2), zero padding to 256."""
    raw = meta if isinstance(meta, bytes) else cbor2.dumps(meta)
    head = b"NRUB" + struct.pack("<HI", version, len(raw)) + raw
    return head + bytes(-len(head) % 256) + data


# --- Burnpack -----------------------------------------------------------------------------------

@pytest.mark.parametrize("version, words", [(0, "Burnpack version 0 does not exist"),
                                            (2, "Burnpack version 2 is newer than this app reads (up to 1)")])
def test_burnpack_version_0_and_newer_versions_are_refused_by_name(tmp_path, version, words):
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": F32}}, VALUES.tobytes(), version=version))
    assert refusal(path) == f"m.bpk: {words}"


def test_burnpack_metadata_of_exactly_100_mib_is_not_over_the_limit(tmp_path):
    at_limit, over = tmp_path / "at.bpk", tmp_path / "over.bpk"
    at_limit.write_bytes(b"NRUB" + struct.pack("<HI", 1, 100 << 20) + bytes(64))
    over.write_bytes(b"NRUB" + struct.pack("<HI", 1, (100 << 20) + 1) + bytes(64))
    assert refusal(at_limit) == (f"at.bpk: file is truncated: the {100 << 20}-byte metadata needs bytes "
                                 f"10..{10 + (100 << 20)} but the file has 74")
    assert refusal(over) == f"over.bpk: metadata claims {(100 << 20) + 1} bytes, over Burn's limit of {100 << 20}"


@pytest.mark.parametrize("padding", [0, 1])
def test_burnpack_data_starts_at_the_next_256_byte_boundary(tmp_path, padding):
    """Metadata that ends the header exactly at byte 256 puts the data there; one byte more moves it to 512."""
    raw = next(raw for n in range(300)
               if 10 + len(raw := cbor2.dumps({"tensors": {"w": F32}, "metadata": {"pad": "x" * n}})) == 256 + padding)
    assert 10 + len(raw) == 256 + padding
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes(raw, VALUES.tobytes()))
    assert len(path.read_bytes()) == (256 if padding == 0 else 512) + 8
    with open_store(path) as store:
        assert store.read("w").tobytes() == VALUES.tobytes()


@pytest.mark.parametrize("param_id", [0, 1, 2**64 - 1])
def test_burnpack_param_ids_from_0_to_2_64_minus_1_are_kept(tmp_path, param_id):
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": {**F32, "param_id": param_id}}}, VALUES.tobytes()))
    with open_store(path) as store:
        assert store.entry("w").param_id == param_id


@pytest.mark.parametrize("param_id", [-1, -(2**63), True, 1.0, "7"])
def test_burnpack_param_ids_burn_cannot_hold_are_refused(tmp_path, param_id):
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": {**F32, "param_id": param_id}}}, VALUES.tobytes()))
    assert refusal(path).startswith(f"m.bpk: tensor 'w' has an invalid param_id ")
    assert "Burn stores a whole number from 0 to 2**64 - 1" in refusal(path)


def test_burnpack_scalars_of_each_kind_are_kept(tmp_path):
    scalars = {"epoch": {"Int": -3}, "step": {"UInt": 7}, "lr": {"Float": 2}, "warm": {"Bool": True},
               "decay": {"Float": 0.5}}
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": F32}, "scalars": scalars}, VALUES.tobytes()))
    with open_store(path) as store:
        assert store.scalars == scalars


@pytest.mark.parametrize("name, scalar", [
    ("s", {"Int": True}), ("s", {"UInt": False}), ("s", {"Float": True}), ("s", {"Bool": 1}),
    ("s", {"Int": 1.5}), ("s", {"Complex": 1}), ("s", {"Int": 1, "UInt": 1}), ("s", {}), ("s", 3),
])
def test_burnpack_scalars_of_the_wrong_kind_are_refused(tmp_path, name, scalar):
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": F32}, "scalars": {name: scalar}}, VALUES.tobytes()))
    message = refusal(path)
    assert message.startswith(f"m.bpk: scalar {name!r} is not one of "
                              "Int, UInt, Float, Bool: ")


@pytest.mark.parametrize("meta, words", [
    ({"tensors": {"w": F32}, "scalars": [1]}, "'scalars' is not a map"),
    ({"tensors": {"w": F32}, "metadata": ["a"]}, "'metadata' is not a map of text to text"),
    ({"tensors": {"w": [1]}}, "tensor entry 'w' needs dtype, shape and data_offsets"),
    ({"tensors": {"w": {"dtype": "F32", "shape": [2]}}}, "tensor entry 'w' needs dtype, shape and data_offsets"),
    ({"tensors": {"w": {**F32, "data_offsets": [0, 8, 8]}}}, "tensor 'w' has invalid data_offsets [0, 8, 8]"),
    ({"tensors": {"w": {**F32, "data_offsets": 8}}}, "tensor 'w' has invalid data_offsets 8"),
    ({"tensors": [1]}, "metadata is not a map with a 'tensors' map"),
])
def test_burnpack_malformed_metadata_is_refused_by_name(tmp_path, meta, words):
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes(meta, VALUES.tobytes()))
    assert refusal(path) == f"m.bpk: {words}"


def test_a_burnpack_without_tensors_opens_empty(tmp_path):
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"metadata": {"k": "v"}}, b""))
    with open_store(path) as store:
        assert store.names == [] and store.metadata == {"k": "v"} and store.scalars == {}


# --- SafeTensors --------------------------------------------------------------------------------

def safetensors_file(path, header: dict | bytes, data: bytes):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def test_safetensors_header_of_exactly_100_mb_is_not_over_the_limit(tmp_path):
    at_limit = tmp_path / "at.safetensors"
    at_limit.write_bytes(struct.pack("<Q", 100_000_000) + b"{}")
    over = tmp_path / "over.safetensors"
    over.write_bytes(struct.pack("<Q", 100_000_001) + b"{}")
    assert refusal(at_limit) == ("at.safetensors: file is truncated: the 100000000-byte header needs bytes "
                                 "8..100000008 but the file has 10")
    assert refusal(over) == "over.safetensors: header claims 100000001 bytes, over the limit of 100000000"


def test_safetensors_reads_each_tensor_from_its_own_range(tmp_path):
    values = {"b": np.array([7, -8], "<i2"), "a": np.array([1.5, 2.5, -3.0], "<f4"), "c": np.zeros((0, 3), "<f8")}
    header = {"__metadata__": {"k": "v"},
              "b": {"dtype": "I16", "shape": [2], "data_offsets": [12, 16]},
              "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
              "c": {"dtype": "F64", "shape": [0, 3], "data_offsets": [16, 16]}}
    path = safetensors_file(tmp_path / "m.safetensors", header, values["a"].tobytes() + values["b"].tobytes())
    with open_store(path) as store:
        assert store.names == ["a", "b", "c"] and store.metadata == {"k": "v"}
        for name, array in values.items():
            assert store.read(name).dtype == array.dtype and store.read(name).shape == array.shape
            assert store.read(name).tobytes() == array.tobytes()


def shard_index(tmp_path, weight_map: dict, **extra) -> object:
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": weight_map, **extra}))
    return index


@pytest.mark.parametrize("shard, words", [
    ("../a.safetensors", "shard '../a.safetensors' lies outside the index's folder"),
    ("/tmp/a.safetensors", "shard '/tmp/a.safetensors' lies outside the index's folder"),
    ("sub/../../a.safetensors", "shard 'sub/../../a.safetensors' lies outside the index's folder"),
    ("a\0.safetensors", "shard 'a\\x00.safetensors' lies outside the index's folder"),
    ("", "the index maps a tensor to '', which names no file"),
    (".", "the index maps a tensor to '.', which names no file"),
    ("sub/", "the index maps a tensor to 'sub/', which names no file"),
])
def test_a_shard_outside_the_folder_or_naming_no_file_is_refused(tmp_path, shard, words):
    index = shard_index(tmp_path, {"w": shard})
    assert refusal(index) == f"model.safetensors.index.json: {words}"


def test_a_shard_in_a_subfolder_and_its_aliases_open_as_one_file(tmp_path):
    (tmp_path / "sub").mkdir()
    safetensors_file(tmp_path / "sub" / "a.safetensors",
                     {"w": F32, "v": {**F32, "data_offsets": [8, 16]}, "__metadata__": {"from": "shard"}},
                     VALUES.tobytes() + (VALUES * 2).tobytes())
    index = shard_index(tmp_path, {"w": "sub/a.safetensors", "v": "./sub/a.safetensors"},
                        metadata={"total_size": 16, "from": "index"})
    with open_store(index) as store:
        assert sorted(store.names) == ["v", "w"]
        assert store.read("v").tobytes() == (VALUES * 2).tobytes() and store.read("w").tobytes() == VALUES.tobytes()
        assert store.metadata == {"total_size": "16", "from": "index"}


@pytest.mark.parametrize("content, words", [
    ({"weight_map": {"w": 1}}, "index has no 'weight_map' of tensor names to shard files"),
    ({"weight_map": ["a.safetensors"]}, "index has no 'weight_map' of tensor names to shard files"),
    ({"weight_map": {"w": "a.safetensors"}, "metadata": [1]}, "index 'metadata' is not a map"),
    ({"weight_map": {"x": "a.safetensors"}}, "shard a.safetensors lacks tensor 'x' that the index maps to it"),
])
def test_a_sharded_index_is_refused_when_malformed(tmp_path, content, words):
    safetensors_file(tmp_path / "a.safetensors", {"w": F32}, VALUES.tobytes())
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps(content))
    assert refusal(index) == f"model.safetensors.index.json: {words}"


def test_an_index_over_100_mb_is_refused_before_it_is_read(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    with open(index, "wb") as out:  # sparse: no 100 MB are written
        out.write(b'{"weight_map": {}}')
        out.truncate(100_000_001)
    assert refusal(index) == "model.safetensors.index.json: index file is larger than 100 MB"


def nested(depth: int, leaf: object = 1) -> object:
    """A list ``depth`` levels deep around ``leaf``."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("where, header", [
    ("__metadata__", lambda deep: {"__metadata__": deep}),
    ("tensor 'a'", lambda deep: {"a": deep}),
    ("tensor 'a'", lambda deep: {"a": {"dtype": "F32", "shape": deep, "data_offsets": [0, 0]}}),
])
def test_safetensors_values_nested_past_64_levels_are_refused_with_their_depth(tmp_path, where, header):
    """Nested 64 levels a value gets the plain refusal; 65 and more, the depth (the header's 2 levels added)."""
    path = safetensors_file(tmp_path / "m.safetensors", header(nested(65)), b"")
    assert refusal(path) == (f"m.safetensors: {where} is nested 67 levels deep in the header, over the limit of 64 "
                             "(a header has 3)")
    path = safetensors_file(tmp_path / "m.safetensors", header(nested(64)), b"")
    assert "levels deep in the header" not in refusal(path)


@pytest.mark.parametrize("descriptor, words", [
    ([1], "tensor 'a' needs dtype, shape and data_offsets"),
    ({"dtype": "F32", "shape": [2]}, "tensor 'a' needs dtype, shape and data_offsets"),
    ({"dtype": 5, "shape": [2], "data_offsets": [0, 8]}, "tensor 'a' has an unknown dtype 5"),
    ({"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}, "tensor 'a' has an unknown dtype 'F33'"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [0]}, "tensor 'a' has invalid data_offsets [0]"),
    ({"dtype": "F32", "shape": [2], "data_offsets": 8}, "tensor 'a' has invalid data_offsets 8"),
])
def test_safetensors_malformed_descriptors_are_refused_by_what_is_wrong(tmp_path, descriptor, words):
    path = safetensors_file(tmp_path / "m.safetensors", {"a": descriptor}, VALUES.tobytes())
    assert refusal(path) == f"m.safetensors: {words}"


def test_a_safetensors_f4_tensor_of_an_odd_count_is_not_whole_bytes(tmp_path):
    path = safetensors_file(tmp_path / "m.safetensors", {"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}},
                            bytes(2))
    assert refusal(path) == "m.safetensors: tensor 'w': F4 x [3] is not a whole number of bytes"


@pytest.mark.parametrize("tensor, data, words", [
    ({"dtype": "U8", "shape": [(10 << 30) + 1], "data_offsets": [0, (10 << 30) + 1]}, b"",
     f"tensor 'w' spans {(10 << 30) + 1} bytes, over the limit of 10 GiB per tensor"),
    ({"dtype": "U8", "shape": [(10 << 30) + 1], "data_offsets": [0, 8]}, bytes(8),
     f"tensor 'w' claims {(10 << 30) + 1} bytes, over the limit of 10 GiB per tensor"),
    ({"dtype": "U8", "shape": [8], "data_offsets": [0, (10 << 30) + 1]}, b"",
     f"tensor 'w' spans {(10 << 30) + 1} bytes, over the limit of 10 GiB per tensor"),
    ({"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}, bytes(8), "tensor 'w' has 8 bytes but F32 x [3] needs 12"),
    ({"dtype": "U8", "shape": [8], "data_offsets": [0, 10 << 30]}, b"",
     f"tensor 'w' has {10 << 30} bytes but U8 x [8] needs 8"),
    ({"dtype": "U8", "shape": [10 << 30], "data_offsets": [0, 8]}, bytes(8),
     f"tensor 'w' has 8 bytes but U8 x [{10 << 30}] needs {10 << 30}"),
])
def test_burnpack_tensor_sizes_are_refused_by_what_is_wrong(tmp_path, tensor, data, words):
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": tensor}}, data))
    assert refusal(path) == f"m.bpk: {words}"


def test_a_burnpack_tensor_of_exactly_10_gib_is_within_the_limit(tmp_path):
    """The limit is checked before the data: 10 GiB exactly is only refused for lying past the file's end."""
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": {"dtype": "U8", "shape": [10 << 30],
                                                       "data_offsets": [0, 10 << 30]}}}, b""))
    assert refusal(path) == f"m.bpk: tensor 'w' ends at byte {10 << 30}, past the end of the data (0 bytes)"


def test_an_index_that_is_not_json_is_refused_naming_the_index(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text('{"weight_map": {"w": "a.safetensors"')
    assert refusal(index) == ("model.safetensors.index.json: index is not valid JSON: Expecting ',' delimiter at "
                              "character 36")


def test_an_index_of_exactly_100_mb_is_read(tmp_path):
    """100 MB is within the limit: the index is read (and here refused for what it holds, not for its size)."""
    index = tmp_path / "model.safetensors.index.json"
    with open(index, "wb") as out:  # sparse: the rest reads as zero bytes
        out.write(b'{"weight_map": {}}')
        out.truncate(100_000_000)
    assert refusal(index) == "model.safetensors.index.json: index is not valid JSON: Extra data at character 18"


def test_pytorch_shards_open_as_one_store_by_their_own_bytes(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2, dtype=torch.int16)}, tmp_path / "p2.bin")
    index = tmp_path / "pytorch_model.bin.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 14}, "weight_map": {"a": "p1.bin", "b": "p2.bin"}}))
    with open_store(index) as store:
        assert (store.format, store.description) == ("pytorch", "PyTorch sharded")
        assert store.names == ["a", "b"] and store.metadata == {"total_size": "14"}
        assert store.read("a").tolist() == [0.0, 1.0, 2.0] and store.read("b").tolist() == [1, 1]


def test_a_safetensors_index_keeps_its_metadata_over_the_shards_and_adds_theirs(tmp_path):
    """An index may start with white space; a key both give is the index's, a key only a shard gives is kept."""
    safetensors_file(tmp_path / "s1.safetensors", {"a": F32, "__metadata__": {"only": "shard", "k": "shard"}},
                     VALUES.tobytes())
    index = tmp_path / "m.safetensors.index.json"
    index.write_text("\n  " + json.dumps({"metadata": {"k": "index"}, "weight_map": {"a": "s1.safetensors"}}))
    with open_store(index) as store:
        assert (store.format, store.version, store.description) == ("safetensors", "sharded", "SafeTensors sharded")
        assert store.metadata == {"k": "index", "only": "shard"}
        assert store.read("a").tobytes() == VALUES.tobytes()


def test_an_index_mixing_safetensors_and_pytorch_shards_is_refused_at_the_odd_shard(tmp_path):
    safetensors_file(tmp_path / "s1.safetensors", {"a": F32}, VALUES.tobytes())
    torch.save({"b": torch.ones(2)}, tmp_path / "p2.bin")
    index = tmp_path / "mix.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "s1.safetensors", "b": "p2.bin"}}))
    assert refusal(index).startswith("p2.bin: header claims ")


def test_an_index_nested_too_deep_for_the_parser_is_refused_with_its_depth(tmp_path):
    safetensors_file(tmp_path / "s1.safetensors", {"a": F32}, VALUES.tobytes())
    index = tmp_path / "deep.safetensors.index.json"
    index.write_text('{"weight_map": {"a": "s1.safetensors"}, "metadata": {"x": ' + "[" * 3000 + "]" * 3000 + "}}")
    assert refusal(index) == "deep.safetensors.index.json: index is nested deeper than 64 levels (3002 levels)"


def test_quantized_values_that_cannot_be_decoded_are_refused_naming_the_file(tmp_path):
    from quantized_files import f32, gen2, i8, write
    path = write(tmp_path, {"w": ({"QFloat": gen2("E4M3", store="Native")}, [4], i8(1, 2, 3, 4) + f32(1.0)),
                            "d": ("F32", [1], f32(2.0))})
    with open_store(path) as store:
        with pytest.raises(FormatError) as info:
            store.read_quantized("w")
        assert str(info.value).startswith("q.bpk: tensor 'w': E4M3 values are not decoded by Burn's QuantizedBytes")
        with pytest.raises(ValueError) as info:
            store.read_quantized("d")
        assert str(info.value) == "tensor 'd' is F32, not quantized"


def raw_safetensors(path, header: bytes, data: bytes):
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def test_a_metadata_key_given_twice_keeps_the_last_as_the_official_reader_does(tmp_path):
    """An escaped name sends the header through the reference parser, which must agree with the official one."""
    path = raw_safetensors(tmp_path / "m.safetensors", b'{"__metadata__": {"k": "a", "k": "b"}, "a\\u00e9": '
                           b'{"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', VALUES[:1].tobytes())
    with open_store(path) as store:
        assert store.metadata == {"k": "b"} and store.names == ["a\u00e9"]
    with safetensors.safe_open(path, "np") as official:
        assert official.metadata() == {"k": "b"}


@pytest.mark.parametrize("header, words", [
    (b'{"a": {"dtype": "F32", "shape": [' + b"1" * 5000 + b'], "data_offsets": [0, 4]}}',
     "header holds a number too long to be real"),
    (b'{"a\\ud800": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',
     "header holds a lone surrogate ('\\ud800'), which is not text: the official reader refuses it"),
])
def test_safetensors_headers_no_reader_can_hold_are_refused_by_name(tmp_path, header, words):
    path = raw_safetensors(tmp_path / "m.safetensors", header, bytes(4))
    assert refusal(path) == f"m.safetensors: {words}"


def test_the_safetensors_header_is_compact_utf8_json_as_the_official_writer_writes_it(tmp_path):
    from engine import ArrayStore, export
    out = export(ArrayStore({"é": VALUES[:2], "b": VALUES[:1]}).entries, tmp_path / "m.safetensors",
                 metadata={"k": "v"})
    raw = out.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = raw[8:8 + size]
    expected = json.dumps({"__metadata__": {"producer": "store-studio", "k": "v"},
                           "é": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                           "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}},
                          separators=(",", ":"), ensure_ascii=False).encode()
    assert header.rstrip(b" ") == expected and (8 + size) % 8 == 0


def test_the_depth_of_a_too_deep_index_counts_brackets_outside_strings_only(tmp_path):
    safetensors_file(tmp_path / "s1.safetensors", {"a": F32}, VALUES.tobytes())
    index = tmp_path / "deep.safetensors.index.json"
    index.write_text('{"weight_map": {"a": "s1.safetensors"}, "metadata": {"s": "[[{{", "x": ' + "[" * 1000
                     + "]" * 1000 + ', "y": ' + "[" * 3000 + "]" * 3000 + "}}")
    assert refusal(index) == "deep.safetensors.index.json: index is nested deeper than 64 levels (3002 levels)"


def test_a_pytorch_shard_lacking_a_tensor_its_index_maps_is_refused_naming_both(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2)}, tmp_path / "p2.bin")
    index = tmp_path / "pytorch_model.bin.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "p1.bin", "b": "p2.bin", "c": "p2.bin"}}))
    assert refusal(index) == "pytorch_model.bin.index.json: shard p2.bin lacks tensor 'c' that the index maps to it"
