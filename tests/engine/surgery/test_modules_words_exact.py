"""Module-kind words that session 6's mutation run of engine/surgery/modules.py (issue 25) showed no test checked.

Promise -> test:
- a lone 1-D weight is a guess whose reason says the evidence and what the name says, with the kinds it could be
  (README "Module types": "a lone 1-D weight (RmsNorm's gamma or PReLU's alpha? act says PReLU ...)") ->
  test_a_lone_1d_weight_named_act_is_a_guessed_prelu_saying_why_and_what_else_it_could_be
- an unknown module type names the path, the type and every known one (README: "an unknown type is exit 2") ->
  test_an_unknown_module_type_names_every_known_one
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import ArrayStore, RecipeError
from engine.surgery import Recipe, infer_modules
from engine.surgery.modules import KINDS


def test_a_lone_1d_weight_named_act_is_a_guessed_prelu_saying_why_and_what_else_it_could_be():
    guess = infer_modules(ArrayStore({"block.act.weight": np.ones(4, np.float32)}).entries)["block.act"]
    assert (guess.path, guess.kind, guess.reason, guess.guessed, guess.alternatives) == (
        "block.act", "PRelu", "1-D weight without bias or running stats, and the name 'act' says PReLU", True,
        ("PRelu", "RmsNorm", "Unknown"))
    plain = infer_modules(ArrayStore({"scale.weight": np.ones(4, np.float32)}).entries)["scale"]
    assert plain.reason == "1-D weight without bias or running stats, and the name 'scale' says nothing: kept as it is"


def test_an_unknown_module_type_names_every_known_one():
    with pytest.raises(RecipeError) as refused:
        Recipe(module_overrides={"enc.fc": "Dense"})
    assert str(refused.value) == (f"module type override for 'enc.fc': unknown kind 'Dense' (one of {', '.join(KINDS)})")
    assert ", ".join(KINDS).startswith("Linear, Conv1d, Conv2d, Conv3d, ConvTranspose, Embedding, BatchNorm")


@pytest.mark.parametrize("label, kind, says, alternatives", [
    ("final_norm", "RmsNorm", "norm", ("RmsNorm", "PRelu", "Unknown")),
    ("ln_f", "LayerNorm", "LayerNorm", ("LayerNorm", "RmsNorm", "PRelu", "Unknown")),
    ("bn1", "BatchNorm", "BatchNorm", ("BatchNorm", "RmsNorm", "PRelu", "Unknown")),
    ("gn", "GroupNorm", "GroupNorm", ("GroupNorm", "RmsNorm", "PRelu", "Unknown")),
    ("scale", "Unknown", "nothing: kept as it is", ("RmsNorm", "PRelu", "Unknown"))])
def test_a_lone_1d_weight_takes_the_kind_its_name_says_as_a_guess(label, kind, says, alternatives):
    guess = infer_modules(ArrayStore({f"{label}.weight": np.ones(4, np.float32)}).entries)[label]
    assert (guess.kind, guess.reason, guess.guessed, guess.alternatives) == (
        kind, f"1-D weight without bias or running stats, and the name {label!r} says {says}", True, alternatives)
