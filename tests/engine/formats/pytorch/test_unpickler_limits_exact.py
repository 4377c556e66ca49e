"""The unpickler's limits at their exact edges: one step inside opens, one step past is refused with the
limit's own message. Files are written by real torch where torch can write the case; the integer and
protocol limits need opcodes torch never writes, so those pickles are built byte by byte.

Promise -> test (README, "PyTorch files" and "Limits"):
- nesting is refused past 100 levels -> test_a_checkpoint_nested_100_levels_opens_and_101_is_refused
- a hash flood is refused -> test_64_keys_of_one_hash_open_and_65_are_refused
- huge integers are refused -> test_an_integer_of_1024_bytes_is_read_and_1025_is_refused
- pickle protocols 2 to 5 are read -> test_protocols_2_to_5_are_read_and_6_is_refused
"""

from __future__ import annotations

import pickle
import struct

import pytest
import torch

from engine import FormatError, open_store
from engine.formats.pytorch.unpickler import PickleStream, load
from tests.refusals import refusal

SAME_HASH = 2**61 - 1  # Python hashes an int modulo this prime: every multiple hashes to 0


def nested(depth: int, leaf: object) -> object:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def test_a_checkpoint_nested_100_levels_opens_and_101_is_refused(tmp_path):
    inside, past = tmp_path / "inside.pt", tmp_path / "past.pt"
    torch.save({"w": nested(99, torch.arange(3.0))}, inside)  # the dict and 99 lists: 100 levels
    torch.save({"w": nested(100, torch.arange(3.0))}, past)
    with open_store(inside) as store:
        (name,) = store.names
        assert name == "w" + ".0" * 99 and store.read(name).tolist() == [0.0, 1.0, 2.0]
    assert refusal(past) == ("past.pt: data.pkl is nested deeper than 100 levels (a container 101 levels deep): "
                             "no weights file nests so deep")


@pytest.mark.parametrize("container", ["dict", "set", "frozenset"])
def test_64_keys_of_one_hash_open_and_65_are_refused(tmp_path, container):
    def checkpoint(count: int) -> dict:
        keys = [i * SAME_HASH for i in range(count)]
        held = {"dict": lambda: dict.fromkeys(keys, 0), "set": lambda: set(keys), "frozenset": lambda: frozenset(keys)}
        return {"w": torch.ones(2), "state": held[container]()}

    inside, past = tmp_path / "inside.pt", tmp_path / "past.pt"
    torch.save(checkpoint(64), inside)
    torch.save(checkpoint(65), past)
    with open_store(inside) as store:
        assert store.names == ["w"] and store.read("w").tolist() == [1.0, 1.0]
    assert refusal(past) == ("past.pt: data.pkl has more than 64 dict keys or set items with the same hash "
                             "(a hash-flooding attack)")


def unpickle(raw: bytes) -> object:
    return load(PickleStream.over_bytes("x.pt", raw))


def long4(size: int) -> bytes:
    """A LONG4 opcode holding a ``size``-byte integer (1, then zeros: the value 1)."""
    return b"\x80\x02\x8b" + struct.pack("<i", size) + b"\x01" + bytes(size - 1) + b"."


def test_an_integer_of_1024_bytes_is_read_and_1025_is_refused():
    assert unpickle(long4(1024)) == 1
    with pytest.raises(FormatError) as info:
        unpickle(long4(1025))
    assert str(info.value) == "x.pt: the pickle holds an integer of 1025 bytes, over the limit of 1024 (no weights file needs one)"
    with pytest.raises(FormatError) as info:
        unpickle(b"\x80\x02\x8b" + struct.pack("<i", -1) + b".")
    assert str(info.value) == "x.pt: the pickle is malformed (LONG4 at byte 2): negative LONG length"
    assert unpickle(b"\x80\x02\x8a\x02\xff\x7f.") == 0x7fff  # LONG1, little-endian, signed
    assert unpickle(b"\x80\x02\x8a\x01\xff.") == -1


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_protocols_2_to_5_are_read_and_6_is_refused(tmp_path, protocol):
    value = {"a": [1, 2.5, "x", b"y", None, True], "b": (3, frozenset({4}))}
    path = tmp_path / "plain.pkl"
    path.write_bytes(pickle.dumps(value, protocol=protocol))
    assert unpickle(path.read_bytes()) == value
    with open_store(path) as store:
        assert store.format == "pytorch" and store.names == []
    newer = tmp_path / "newer.pkl"
    newer.write_bytes(b"\x80\x06" + pickle.dumps(value, protocol=5)[2:])
    with pytest.raises(FormatError) as info:
        unpickle(newer.read_bytes())
    assert str(info.value) == "x.pt: the pickle uses pickle protocol 6, newer than 5"
    assert refusal(newer).startswith("newer.pkl: not a Burnpack, SafeTensors, PyTorch file or Burn record")
