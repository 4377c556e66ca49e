"""Burnpack's limits at their exact edges, each tested on both sides: version 1 only, metadata up to 100 MiB,
tensors at 256-aligned offsets, param ids from 0 to 2**64 - 1, scalars of their own kind, 10 GiB per tensor. A limit
moved by one, or a check turned around, would refuse a file Burn writes or open one Burn refuses.

Promise -> test:
- "Burnpack: version 1" -> test_burnpack_version_0_and_newer_versions_are_refused_by_name
- "metadata up to 100 MiB" -> test_burnpack_metadata_of_exactly_100_mib_is_not_over_the_limit
- Burnpack's tensors sit at 256-aligned offsets -> test_burnpack_data_starts_at_the_next_256_byte_boundary
- a param_id is kept, one Burn cannot hold is refused -> test_burnpack_param_ids_from_0_to_2_64_minus_1_are_kept,
  test_burnpack_param_ids_burn_cannot_hold_are_refused
- scalars keep their kind -> test_burnpack_scalars_of_each_kind_are_kept, test_burnpack_scalars_of_the_wrong_kind_are_refused
- a tensor of exactly 10 GiB is within the limit, sizes that are wrong are refused by what is wrong ->
  test_a_burnpack_tensor_of_exactly_10_gib_is_within_the_limit, test_burnpack_tensor_sizes_are_refused_by_what_is_wrong
"""

from __future__ import annotations

import struct

import cbor2
import pytest

from engine import open_store
from tests.helpers.formats_small_files import F32, VALUES
from tests.refusals import refusal


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
    assert refusal(path) == f"m.bpk: file is truncated or its header is wrong: tensor 'w' ends at byte {10 << 30}, past the end of the data (0 bytes)"
