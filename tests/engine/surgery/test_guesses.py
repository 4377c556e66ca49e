"""Plan.guesses: every tensor whose bytes or name rest on a name alone, with how to settle it; validate().

A guess's decision names what the adapter did to the tensor, never the renames that only moved it (README
"Model surgery": each guess says what was decided and how to settle it) -> tests:
- a tensor moved by ``--skip-enum-variants`` (the template has the module) or by the template's enum variant,
  whose kind still rests on its name, reads "Linear: transposed", not "renamed weight -> weight"
  -> ``test_a_rename_by_skipped_enum_variant_is_not_a_decision``, ``test_a_rename_by_the_templates_variant_is_not_a_decision``
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from engine import ArrayStore, open_store
from engine.surgery import Guess, Recipe, plan, validate


def saved(tmp_path, model: nn.Module):
    torch.manual_seed(5)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p))
    torch.save(model.state_dict(), tmp_path / "m.pt")
    return open_store(tmp_path / "m.pt"), {k: v.numpy() for k, v in model.state_dict().items()}


def gpt_like() -> nn.Module:
    model = nn.Module()
    model.tokens = nn.Embedding(12, 4)
    model.embed_out = nn.Linear(4, 12, bias=False)
    model.ln = nn.LayerNorm(4)
    return model


def test_guesses_name_the_tensor_the_decision_the_reason_and_the_flag(tmp_path):
    store, w = saved(tmp_path, gpt_like())
    with store:
        result = plan([store], Recipe(adapters=("pytorch-to-burn",)))
        by_name = {g.name: g for g in result.guesses}
        assert set(by_name) == {"tokens.weight", "embed_out.weight"}  # ln has a bias: evidence
        tokens = by_name["tokens.weight"]
        assert tokens == Guess("tokens.weight", "tokens.weight", "tokens", "Linear", "Linear: transposed",
                               "2-D weight without bias, and the name 'tokens' says nothing",
                               "--module tokens=Linear or --module tokens=Embedding", ("Linear", "Embedding"))
        assert by_name["embed_out.weight"].decision == "Embedding: not transposed"
        assert result.to_json()["guesses"][0]["settle"].startswith("--module")
        written = {t.name: t.read() for t in result.tensors}
        np.testing.assert_array_equal(written["tokens.weight"], w["tokens.weight"].T)


def test_without_an_adapter_nothing_rests_on_the_kind(tmp_path):
    store, _ = saved(tmp_path, gpt_like())
    with store:
        assert plan([store], Recipe()).guesses == []


def test_a_cast_limited_to_some_kinds_makes_the_kind_matter(tmp_path):
    store, _ = saved(tmp_path, gpt_like())
    with store:
        result = plan([store], Recipe.from_json({"version": 1, "casts": [{"to": "F16", "modules": ["Linear"]}]}))
        assert {g.name: g.decision for g in result.guesses} == {"tokens.weight": "Linear: cast F32 -> F16",
                                                                "embed_out.weight": "Embedding: left as it is"}


def test_overrides_and_templates_settle_guesses(tmp_path):
    store, w = saved(tmp_path, gpt_like())
    with store:
        settled = plan([store], Recipe(adapters=("pytorch-to-burn",), module_overrides={"tokens": "Embedding"}))
        assert [g.name for g in settled.guesses] == ["embed_out.weight"]
        template = ArrayStore({"embed_out.weight": np.zeros((4, 12), np.float32)})  # it wants the head transposed
        taught = plan([store], Recipe(adapters=("pytorch-to-burn",), module_overrides={"tokens": "Embedding"}),
                      template=template)
        assert taught.guesses == []
        np.testing.assert_array_equal({t.name: t.read() for t in taught.tensors}["embed_out.weight"],
                                      w["embed_out.weight"].T)


def test_validate_lists_every_shape_the_template_does_not_share(tmp_path):
    store, _ = saved(tmp_path, gpt_like())
    with store:
        result = plan([store], Recipe(adapters=("pytorch-to-burn",)))
        template = ArrayStore({"tokens.weight": np.zeros((12, 4), np.float32), "ln.gamma": np.zeros(4, np.float32),
                               "absent": np.zeros(1, np.float32)})
        mismatches = validate(result, template)
        assert [(m.name, m.source_shape, m.template_shape) for m in mismatches] == [("tokens.weight", (4, 12), (12, 4))]
        assert mismatches[0].matches_if_transposed


def test_a_template_that_proves_a_kind_settles_the_guess_whether_or_not_it_agrees():
    """With a template, the transposed Linear, the Embedding kept as is and the PReLU alpha rest on shapes and
    names the model wants, not on a name alone: none is reported, and --strict would let them through."""
    import numpy as np

    from engine import ArrayStore
    from engine.surgery import Recipe, plan

    source = ArrayStore({"proj.weight": np.arange(15, dtype=np.float32).reshape(3, 5),
                         "tokens.weight": np.arange(40, dtype=np.float32).reshape(10, 4),
                         "act.weight": np.full(1, 0.25, np.float32)})
    template = ArrayStore({"proj.weight": np.zeros((5, 3), np.float32), "tokens.weight": np.zeros((10, 4), np.float32),
                           "act.alpha": np.zeros(1, np.float32)})
    recipe = Recipe(adapters=("pytorch-to-burn",))
    assert {g.name for g in plan([source], recipe).guesses} == {"proj.weight", "tokens.weight", "act.alpha"}
    result = plan([source], recipe, template=template)
    assert result.guesses == []
    out = {t.name: t.read() for t in result.tensors}
    np.testing.assert_array_equal(out["proj.weight"], np.arange(15, dtype=np.float32).reshape(3, 5).T)
    np.testing.assert_array_equal(out["tokens.weight"], np.arange(40, dtype=np.float32).reshape(10, 4))
    np.testing.assert_array_equal(out["act.alpha"], np.full(1, 0.25, np.float32))


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
