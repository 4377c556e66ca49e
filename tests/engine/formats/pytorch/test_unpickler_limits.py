"""The unpickler's limits at their exact edges: one step inside opens, one step past is refused with the
limit's own message. Files are written by real torch where torch can write the case; the integer and
protocol limits need opcodes torch never writes, so those pickles are built byte by byte.

Promise -> test (README, "PyTorch files" and "Limits"):
- nesting is refused past 100 levels -> test_a_checkpoint_nested_100_levels_opens_and_101_is_refused
- a hash flood is refused -> test_64_keys_of_one_hash_open_and_65_are_refused
- huge integers are refused -> test_an_integer_of_1024_bytes_is_read_and_1025_is_refused
- pickle protocols 2 to 5 are read -> test_protocols_2_to_5_are_read_and_6_is_refused

The same nesting and hash-flood limits in the other containers: sets filled by ADDITEMS (protocol 4), frozensets,
and placeholders whose state nests (BUILD). Each limit is checked at its edge, and each count is checked to belong
to its own container (many sets holding one equal-hash item each are no flood).

Promise -> test (README, "Limits": nesting past 100 levels and hash floods are refused):
- a set's depth counts in what holds it -> test_a_set_counts_its_items_depth_in_what_holds_it
- a list filled by APPENDS counts in what holds it -> test_a_list_filled_by_appends_counts_in_what_holds_it
- a set or frozenset of many distinct items is no flood -> test_many_distinct_items_in_one_set_are_no_flood
- equal hashes are counted per set -> test_equal_hashes_in_different_sets_are_no_flood,
  test_equal_hashes_in_dropped_dicts_are_no_flood
- placeholders nested through their state stop at the limit -> test_placeholders_nested_through_their_state_stop_at_the_limit
"""

from __future__ import annotations

import pickle
import struct

import pytest
import torch
from engine import FormatError, open_store
from engine.errors import FormatError
from engine.formats.pytorch.unpickler import PickleStream, load
from tests.helpers.pytorch_nested_pickles import SAME_HASH, nested
from tests.refusals import refusal


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
    assert refusal(newer).startswith("newer.pkl: not a Burnpack, SafeTensors, GGUF, ONNX, PyTorch file or Burn record")


def tuples(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = (value,)
    return value


def test_a_set_counts_its_items_depth_in_what_holds_it():
    inside = [[{tuples(97)}]]  # 97 tuples, the set, two lists: 100 levels
    assert unpickle(pickle.dumps(inside, protocol=4)) == inside
    with pytest.raises(FormatError) as info:
        unpickle(pickle.dumps([[{tuples(98)}]], protocol=4))
    assert str(info.value) == ("x.pt: the pickle is nested deeper than 100 levels (a container 101 levels deep): "
                               "no weights file nests so deep")


def test_a_list_filled_by_appends_counts_in_what_holds_it():
    inside = [[[tuples(97), 0]]]  # the innermost list has two items (APPENDS): 97 tuples, three lists, 100 levels
    assert unpickle(pickle.dumps(inside, protocol=2)) == inside
    with pytest.raises(FormatError) as info:
        unpickle(pickle.dumps([[[tuples(98), 0]]], protocol=2))
    assert str(info.value) == ("x.pt: the pickle is nested deeper than 100 levels (a container 101 levels deep): "
                               "no weights file nests so deep")


@pytest.mark.parametrize("kind", [set, frozenset])
def test_many_distinct_items_in_one_set_are_no_flood(kind):
    value = kind(range(200))
    assert unpickle(pickle.dumps(value, protocol=4)) == value


def test_equal_hashes_in_different_sets_are_no_flood():
    value = [{i * SAME_HASH} for i in range(100)]  # 100 sets, each with one item hashing to 0
    assert unpickle(pickle.dumps(value, protocol=4)) == value


def test_equal_hashes_in_dropped_dicts_are_no_flood():
    """5,000 dicts, each {1: None} and dropped (POP) before the next is made: each one counted stays alive, so
    no later dict takes its id (Python reuses a freed dict's memory soon, from a free list of 80, though which
    one depends on what else the run allocates) and inherits its count."""
    raw = b"\x80\x02" + b"}K\x01Ns0" * 5000 + b"N."
    assert pickle.loads(raw) is None
    assert unpickle(raw) is None


def placeholders(levels: int) -> bytes:
    """``levels`` objects of an unknown class, each with ``{"c": the next}`` as its state (BUILD)."""
    body = b"N"
    for _ in range(levels):
        body = b"c__main__\nNet\n)\x81}X\x01\x00\x00\x00c" + body + b"sb"
    return b"\x80\x02" + body + b"."


def test_placeholders_nested_through_their_state_stop_at_the_limit():
    inside = unpickle(placeholders(50))  # each level is the object and its state dict: 100 levels
    assert inside.qualname == "__main__.Net" and inside.state["c"].state["c"].qualname == "__main__.Net"
    with pytest.raises(FormatError) as info:
        unpickle(placeholders(51))
    assert str(info.value) == ("x.pt: the pickle is nested deeper than 100 levels (a container 101 levels deep): "
                               "no weights file nests so deep")
