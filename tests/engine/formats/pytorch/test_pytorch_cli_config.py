"""``store-studio config FILE [--key K]`` prints a checkpoint's values as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main

CONFIG = Path(__file__).parents[3] / "fixtures" / "burn-pytorch-tests" / "config" / "weights_with_config.pt"


def test_config_prints_all_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", str(CONFIG)]) == 0
    values = json.loads(capsys.readouterr().out)
    assert set(values) == {"my_config"}  # my_model held only tensors
    assert values["my_config"]["some_list_float"] == [0.1, 0.2, 0.3]


@pytest.mark.parametrize(("key", "expected"), [("my_config", None), ("my_config.n_head", 2),
                                               ("my_config.some_dict.some_key", "some_value"),
                                               ("my_config.some_list_str.1", "world")])
def test_config_key_picks_a_branch(capsys: pytest.CaptureFixture[str], key: str, expected) -> None:
    assert main(["config", str(CONFIG), "--key", key]) == 0
    value = json.loads(capsys.readouterr().out)
    assert value == expected if expected is not None else value["d_model"] == 512


def test_config_missing_key_lists_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", str(CONFIG), "--key", "nope"]) == 1
    assert "has no value at 'nope'; its top-level keys are: 'my_config'" in capsys.readouterr().err


def test_inspect_json_shows_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(CONFIG), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["format"] == "pytorch" and summary["values"]["my_config"]["n_layer"] == 3


def test_hostile_file_exits_1_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    hostile = Path(__file__).parents[3] / "fixtures" / "hostile" / "posix_system.pt"
    assert main(["inspect", str(hostile)]) == 1
    assert "refused to load the global posix.system" in capsys.readouterr().err
