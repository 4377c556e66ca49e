"""``config --key`` through keys that hold dots at several depths, and digits on a dict, on checkpoints written by
torch. Without it a user asking for a nested training setting would get the wrong value, or none.

Promises (README "Command line": ``config --key`` takes an exact key first, dots included, then a dotted path
through dicts and lists) -> tests:
- a dotted key is split wherever the keys on the way hold dots, at any depth
  -> ``test_a_path_through_keys_that_hold_dots_at_two_depths``
- a number on the way through a dict is a key, never a list position: a missing one is the usual one-line error
  -> ``test_a_number_on_a_dict_is_a_key_not_a_position``
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.cli import main


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    torch.save({"a.b": {"c.d": 1, "e": [7, {"f.g": "deep"}]}, "x": {"y": 2}}, tmp_path / "ck.pt")
    return str(tmp_path / "ck.pt")


@pytest.mark.parametrize("key, value", [("a.b.c.d", 1), ("a.b.e.1.f.g", "deep"), ("a.b.e", [7, {"f.g": "deep"}])])
def test_a_path_through_keys_that_hold_dots_at_two_depths(checkpoint, capsys, key, value):
    assert main(["config", checkpoint, "--key", key]) == 0
    assert json.loads(capsys.readouterr().out) == value


@pytest.mark.parametrize("key", ["0.y", "x.0.z", "a.b.c"])
def test_a_number_on_a_dict_is_a_key_not_a_position(checkpoint, capsys, key):
    assert main(["config", checkpoint, "--key", key]) == 1
    assert capsys.readouterr().err == f"store-studio: ck.pt: has no value at {key!r}; its top-level keys are: 'a.b', 'x'\n"
