"""The unpickler's nesting and hash-flood limits in the containers test_unpickler_limits_exact.py does not
reach: sets filled by ADDITEMS (protocol 4), frozensets, and placeholders whose state nests (BUILD). Each limit
is checked at its edge, and each count is checked to belong to its own container (many sets holding one
equal-hash item each are no flood).

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

import pytest

from engine.errors import FormatError
from engine.formats.pytorch.unpickler import PickleStream, load

SAME_HASH = 2**61 - 1  # every multiple of this prime hashes to 0


def unpickle(raw: bytes):
    return load(PickleStream.over_bytes("x.pt", raw))


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
