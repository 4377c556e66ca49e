"""Nesting and the stack's top in the unpickler (``_Machine.deeper``, ``_Machine.top``) that run 12's mutation run of
engine/formats/pytorch/unpickler.py showed no test held: a container keeps the depth of its deepest item when a
shallower one is added after it, and an opcode that takes the stack's top refuses a MARK with nothing above it.

Promises (README, "Limits": nesting past 100 levels is refused; "PyTorch files": a forged pickle is refused in one
line naming the file and what is wrong) -> tests:
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

from test_allowlist_builders_exact import checkpoint, plain, tensor_v2
from test_machine_call_survivors_exact import PROTO, opens_with_w, past_100_levels
from test_unpickler_limits_exact import nested
from tests.refusals import refusal


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
