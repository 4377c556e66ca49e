"""A recipe's adapters are refused word for word when unknown or when two undo each other (the tenth mutation
run's survivors of engine/surgery/adapters.py's ``check_adapters``).

Promises (README, "The workbench": the recipe's adapters; "Command line") -> tests:
- an unknown adapter is refused, listing the ones there are -> test_an_unknown_adapter_lists_the_known_ones
- pytorch-to-burn and burn-to-pytorch undo each other: a recipe asking for both is refused
  -> test_the_two_directions_together_are_refused_in_words
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import RecipeError
from engine.surgery import Recipe


def load_refusal(tmp_path: Path, adapters: list[str]) -> str:
    (tmp_path / "r.json").write_text(json.dumps({"version": 1, "adapters": adapters}))
    with pytest.raises(RecipeError) as caught:
        Recipe.load(tmp_path / "r.json")
    return str(caught.value)


def test_an_unknown_adapter_lists_the_known_ones(tmp_path: Path) -> None:
    assert load_refusal(tmp_path, ["to-jax"]) == (
        "r.json: adapters: unknown adapter 'to-jax' (one of pytorch-to-burn, burn-to-pytorch, contiguous-indices, "
        "skip-enum-variants, fuse-weight-norm)")


def test_the_two_directions_together_are_refused_in_words(tmp_path: Path) -> None:
    assert load_refusal(tmp_path, ["burn-to-pytorch", "pytorch-to-burn"]) == (
        "r.json: adapters: pytorch-to-burn and burn-to-pytorch undo each other; choose one")
