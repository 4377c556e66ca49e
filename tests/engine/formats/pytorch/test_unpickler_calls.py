"""Calls, globals and SETITEM in the unpickler (``_Machine.call``, ``_Machine.global_``, ``_dict``) and its nesting
(``_Machine.deeper``, ``_Machine.top``): the hash-flood count of the items a ``set(...)``, ``frozenset(...)`` or
Python 2 ``OrderedDict(pairs)`` call is given, the nesting of what such a call builds, a container as deep as its
deepest item, and the words of three refusals. Sets come from real torch.save files (protocol 2 writes them as
calls); the Python 2 OrderedDict, the unknown class and the refusals are forged into a zip checkpoint's data.pkl.

Promises (README, "Limits": nesting past 100 levels and hash floods are refused; "PyTorch files": a forged pickle is
refused in one line naming the file and what is wrong) -> tests:
- equal items in different sets are no flood, also for sets written as calls
  -> test_equal_items_in_many_sets_saved_by_torch_are_no_flood
- a set of many distinct tuples is no flood, though their first items are equal
  -> test_a_set_of_distinct_tuples_sharing_a_first_item_is_no_flood
- a Python 2 OrderedDict's pairs count their keys' hashes, not their values'
  -> test_a_python2_ordered_dict_of_distinct_keys_and_equal_values_is_no_flood
- a set built by a call counts one level deeper than its items: frozensets nested 49 deep in a list in a dict
  open, 50 are refused -> test_frozensets_saved_by_torch_nested_past_100_levels_are_refused
- an unknown class's object counts one level deeper than its arguments, as it is built
  -> test_an_object_of_an_unknown_class_counts_one_level_deeper_than_its_arguments
- a slice holding a slice nests like a container -> test_slices_nested_in_slices_count_as_containers
- a global whose module or name is not text is refused in words -> test_a_global_named_by_a_number_is_refused_in_words
- SETITEM on what is not a dict names what it found -> test_setitem_on_a_list_is_refused_naming_the_list
- a list is as deep as its deepest item, not its last: a list of 1,001 items saved by torch (two APPENDS batches,
  the deep item in the first) that makes the dict 101 levels deep is refused in the unpickler's words
  -> test_a_deep_item_followed_by_a_shallow_one_still_counts_past_100_levels
- DUP right after a MARK (nothing above the mark to duplicate) is refused as a stack underflow, as pickle refuses it
  -> test_dup_with_nothing_above_the_mark_is_refused_as_an_underflow
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from engine import open_store
from tests.helpers.pytorch_nested_pickles import SAME_HASH, nested
from tests.helpers.pytorch_pickle_builders import (
    checkpoint,
    op_global,
    plain,
    tensor_v2,
)
from tests.refusals import refusal

PROTO = 2  # bytes of data.pkl before the ops ``checkpoint`` is given (PROTO 2)
FLOOD = 65  # one past MAX_EQUAL_HASHES


def past_100_levels(name: str) -> str:
    """The unpickler's refusal of ``name``, whose data.pkl nests one level past the limit."""
    return (f"{name}: data.pkl is nested deeper than 100 levels (a container 101 levels deep): no weights file "
            "nests so deep")


def opens_with_w(path: Path, values: list[float]) -> None:
    """The checkpoint opens and lists its one tensor ``w`` with ``values``."""
    with open_store(path) as store:
        assert store.names == ["w"] and store.read("w").tolist() == values


def test_equal_items_in_many_sets_saved_by_torch_are_no_flood(tmp_path: Path) -> None:
    """65 sets of one item hashing to 0 each: each set's count is its own, wherever the sets come from."""
    path = tmp_path / "sets.pt"
    torch.save({"w": torch.ones(2), "sets": [{i * SAME_HASH} for i in range(FLOOD)]}, path)
    opens_with_w(path, [1.0, 1.0])


def test_a_set_of_distinct_tuples_sharing_a_first_item_is_no_flood(tmp_path: Path) -> None:
    """A set item is counted by its own hash: a tuple is not a key-value pair outside an OrderedDict."""
    path = tmp_path / "pairs.pt"
    torch.save({"w": torch.ones(2), "pairs": {(0, i) for i in range(200)}}, path)
    opens_with_w(path, [1.0, 1.0])


def test_a_python2_ordered_dict_of_distinct_keys_and_equal_values_is_no_flood(tmp_path: Path) -> None:
    """Python 2 pickles ``OrderedDict([[key, value], ...])``: 65 distinct keys all mapping to 0 are no flood."""
    pairs = plain(([[f"k{i}", 0] for i in range(FLOOD)],))
    ordered = op_global("collections", "OrderedDict") + pairs + b"R"
    path = checkpoint(tmp_path / "py2.pt", b"}(" + plain("w") + tensor_v2() + plain("order") + ordered + b"u")
    opens_with_w(path, [1.0, 2.0, 3.0, 4.0])


def frozensets(levels: int) -> frozenset:
    value = frozenset({0})
    for _ in range(levels - 1):
        value = frozenset({value})
    return value


def test_frozensets_saved_by_torch_nested_past_100_levels_are_refused(tmp_path: Path) -> None:
    """Protocol 2 writes ``frozenset([inner])``: each level is the list and the frozenset built from its items, one
    deeper (2 levels). 49 levels in a list in the dict are 100 deep and open; at 50 the list is 101 deep."""
    inside, past = tmp_path / "inside.pt", tmp_path / "past.pt"
    torch.save({"w": torch.ones(2), "deep": [frozensets(49)]}, inside)
    torch.save({"w": torch.ones(2), "deep": [frozensets(50)]}, past)
    opens_with_w(inside, [1.0, 1.0])
    assert refusal(past) == past_100_levels("past.pt")


def test_an_object_of_an_unknown_class_counts_one_level_deeper_than_its_arguments(tmp_path: Path) -> None:
    """``Net(list)`` of a class nothing imports is kept as a placeholder holding its arguments, and counted as it is
    built: in a list in a dict, with a list 98 deep for its argument, it makes the dict 101 levels deep."""
    net = op_global("__main__", "Net") + plain((nested(98, 0),)) + b"R"
    path = checkpoint(tmp_path / "net.pt", b"}(" + plain("w") + tensor_v2() + plain("net") + b"]" + net + b"au")
    assert refusal(path) == past_100_levels("net.pt")


def slices(depth: int) -> bytes:
    """``slice(slice(...(0)))``, ``depth`` calls deep, as protocol 2 writes a slice."""
    ops = plain(0)
    for _ in range(depth):
        ops = op_global("builtins", "slice") + b"(" + ops + b"tR"
    return ops


def test_slices_nested_in_slices_count_as_containers(tmp_path: Path) -> None:
    """A slice holds what it is given, so ``slice(slice(...))`` nests: 99 in a dict open, 100 are refused as the
    pickle is built (else 5,000 of them would reach Python's recursion limit instead of a refusal in words)."""
    def holding_slices(path: Path, depth: int) -> Path:
        return checkpoint(path, b"}(" + plain("w") + tensor_v2() + plain("s") + slices(depth) + b"u")

    opens_with_w(holding_slices(tmp_path / "inside.pt", 99), [1.0, 2.0, 3.0, 4.0])
    for depth in (100, 5_000):
        assert refusal(holding_slices(tmp_path / "past.pt", depth)) == past_100_levels("past.pt")


def test_a_global_named_by_a_number_is_refused_in_words(tmp_path: Path) -> None:
    """STACK_GLOBAL takes the module and the name from the stack: text module, numeric name is refused."""
    ops = plain("collections") + plain(1) + b"\x93"
    path = checkpoint(tmp_path / "global.pt", ops)
    at = PROTO + len(ops) - 1
    assert refusal(path) == (f"global.pt: data.pkl is malformed (STACK_GLOBAL at byte {at}): a global's module and "
                             "name must be text")


def test_setitem_on_a_list_is_refused_naming_the_list(tmp_path: Path) -> None:
    ops = b"]" + plain("k") + plain(1) + b"s"
    path = checkpoint(tmp_path / "setitem.pt", ops)
    at = PROTO + len(ops) - 1
    assert refusal(path) == f"setitem.pt: data.pkl is malformed (SETITEM at byte {at}): SETITEM on list, not a dict"

def deep_then_shallow(depth: int) -> list:
    """A deep item, 999 zeros (pickle's first APPENDS batch of 1,000), then an empty list in a batch of its own."""
    return [nested(depth, 0), *[0] * 999, []]


def test_a_deep_item_followed_by_a_shallow_one_still_counts_past_100_levels(tmp_path: Path) -> None:
    """The list's second batch adds a list 1 deep; its depth stays its first item's plus one. With 98 lists inside,
    the list is 99 deep and the dict 100: it opens; with 99, the dict is 101 deep and refused."""
    inside, past = tmp_path / "inside.pt", tmp_path / "past.pt"
    torch.save({"w": torch.ones(2), "deep": deep_then_shallow(98)}, inside)
    torch.save({"w": torch.ones(2), "deep": deep_then_shallow(99)}, past)
    opens_with_w(inside, [1.0, 1.0])
    assert refusal(past) == past_100_levels("past.pt")


def test_dup_with_nothing_above_the_mark_is_refused_as_an_underflow(tmp_path: Path) -> None:
    """``{"w": tensor}``, MARK, DUP, POP_MARK: the dict is below the mark, so DUP has nothing to copy (a DUP that
    reached under the mark would copy the dict, POP_MARK drop the copy, and the file would open)."""
    with pytest.raises(pickle.UnpicklingError):  # pickle's own verdict on the same ops around an empty dict
        pickle.loads(b"\x80\x02}(21.")
    ops = b"}" + plain("w") + tensor_v2() + b"s(2"
    path = checkpoint(tmp_path / "dup.pt", ops + b"1")
    at = PROTO + len(ops) - 1
    assert refusal(path) == f"dup.pt: data.pkl is malformed (DUP at byte {at}): stack underflow"
