"""``config`` prints a checkpoint's values as JSON, and ``--key`` picks one: an exact key (dots included) first, then
a dotted path through dicts and lists, a missing one being exit 1 naming the top-level keys. Without it a user could
not read a training setting out of a checkpoint, or would read the wrong one.

Promises (README "Command line") -> tests:
- ``config --key`` picks an exact key (dots included) first, then a dotted path through dicts and lists
  -> ``test_config_key_takes_exact_keys_first_then_a_path``
"""

from __future__ import annotations

import json

import pytest
import torch

from engine.cli import main


@pytest.mark.parametrize("key, value", [
    ("epoch", 3),
    ("cfg.a.b", 1),  # an exact key holding a dot wins over the path a -> b
    ("cfg.a.c.1", 20),
    ("cfg.a.c.2.d", "deep"),
    ("cfg.list.0", 5),
    ("cfg.list.1", 6),
    ("cfg.a", {"b": 2, "c": [10, 20, {"d": "deep"}]}),
])
def test_config_key_takes_exact_keys_first_then_a_path(checkpoint, capsys, key, value):
    assert main(["config", checkpoint, "--key", key]) == 0
    assert json.loads(capsys.readouterr().out) == value


@pytest.mark.parametrize("key", ["nope", "cfg.list.2", "cfg.list.x", "epoch.1", "cfg.a.c.3.d", "cfg.list.-1"])
def test_config_a_missing_key_is_exit_1_listing_the_top_level_keys(checkpoint, capsys, key):
    assert main(["config", checkpoint, "--key", key]) == 1
    assert capsys.readouterr().err == (f"store-studio: ck.pt: has no value at {key!r}; its top-level keys are: "
                                       "'epoch', 'lr', 'cfg'\n")


def test_config_prints_every_value_as_json(checkpoint, capsys):
    assert main(["config", checkpoint]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == {"epoch": 3, "lr": 0.5, "cfg": {"a.b": 1, "a": {"b": 2, "c": [10, 20, {"d": "deep"}]},
                                                              "list": [5, 6]}}
    assert out.startswith('{\n  "epoch": 3,')  # indented by two


def test_config_keeps_text_as_written(tmp_path, capsys):
    torch.save({"name": "modèle"}, tmp_path / "u.pt")
    assert main(["config", str(tmp_path / "u.pt"), "--key", "name"]) == 0
    assert capsys.readouterr().out == '"modèle"\n'


@pytest.mark.parametrize("saved, key", [([torch.ones(2), 5, "x"], "9"), ([torch.ones(2), 5, "x"], "x.y"),
                                        ({"w": torch.ones(2)}, "a")])
def test_config_names_no_keys_for_a_list_or_a_checkpoint_of_tensors_only(tmp_path, capsys, saved, key):
    torch.save(saved, tmp_path / "c.pt")
    assert main(["config", str(tmp_path / "c.pt"), "--key", key]) == 1
    assert capsys.readouterr().err == f"store-studio: c.pt: has no value at {key!r}; its top-level keys are: none\n"


def test_config_key_indexes_a_top_level_list(tmp_path, capsys):
    torch.save([torch.ones(2), 5, "x"], tmp_path / "c.pt")
    assert main(["config", str(tmp_path / "c.pt"), "--key", "1"]) == 0
    assert capsys.readouterr().out == "5\n"
