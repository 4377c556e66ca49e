"""A guess's decision names what the adapter did to the tensor, never the renames that only moved it (issue 25:
the four survivors of ``guesses.describe``, its words for renames by "skip enum" and "template").

Promise (README "Model surgery": each guess says what was decided and how to settle it) -> tests:
- a tensor moved by ``--skip-enum-variants`` (the template has the module) or by the template's enum variant,
  whose kind still rests on its name, reads "Linear: transposed", not "renamed weight -> weight"
  -> ``test_a_rename_by_skipped_enum_variant_is_not_a_decision``, ``test_a_rename_by_the_templates_variant_is_not_a_decision``
"""

from __future__ import annotations

import numpy as np

from engine import ArrayStore
from engine.surgery import Recipe
from engine.surgery.plan import plan

SETTLE = "settle with --module proj=Linear or --module proj=Embedding"
WHY = "(2-D weight without bias, and the name 'proj' says nothing)"


def test_a_rename_by_skipped_enum_variant_is_not_a_decision():
    source = ArrayStore({"Block.proj.weight": np.arange(6, dtype=np.float32).reshape(3, 2)})
    template = ArrayStore({"proj.bias": np.ones(3, np.float32), "other.x": np.ones(1, np.float32)})
    result = plan([source], Recipe(adapters=("pytorch-to-burn", "skip-enum-variants")), template=template)
    [tensor] = result.tensors
    assert tensor.operations[0] == ("rename Block.proj.weight -> proj.weight (skip enum variants (the template has "
                                    "this module))")
    assert [g.line() for g in result.guesses] == [f"guessed proj.weight: Linear: transposed {WHY}; {SETTLE}"]
    assert result.guesses[0].decision == "Linear: transposed"


def test_a_rename_by_the_templates_variant_is_not_a_decision():
    source = ArrayStore({"proj.weight": np.arange(9, dtype=np.float32).reshape(3, 3)})
    template = ArrayStore({"Block.proj.weight": np.ones((3, 3), np.float32)})  # square: its shape proves no kind
    result = plan([source], Recipe(adapters=("pytorch-to-burn",)), template=template)
    [tensor] = result.tensors
    assert tensor.operations[-1] == "rename proj.weight -> Block.proj.weight (template enum variant)"
    assert [g.line() for g in result.guesses] == [f"guessed Block.proj.weight: Linear: transposed {WHY}; {SETTLE}"]
    assert result.guesses[0].to_json() == {
        "name": "Block.proj.weight", "source_name": "proj.weight", "module": "proj", "kind": "Linear",
        "decision": "Linear: transposed", "reason": WHY[1:-1],
        "settle": "--module proj=Linear or --module proj=Embedding", "alternatives": ["Linear", "Embedding"]}
