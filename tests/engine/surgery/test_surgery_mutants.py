"""Behaviours of engine/surgery that a mutation run (issue 25, `mutmut run "engine.surgery.*"`) showed no test checked.

Promise -> test:
- a fused weight norm is written in the source's dtype, with g * v / ||v|| by hand, also for a 1-D weight and a
  gain stored flat (one value per output row) -> test_fused_weight_norm_*
- the dry-run document (Plan.to_json) names each guess with every field the command line prints ->
  test_the_dry_run_document_lists_every_field_of_each_guess
- a guess's decision says what the adapter and the casts did to the tensor (not remaps or renumbering), with
  the renamed leaf, and "not transposed" when another kind would have transposed it -> test_a_guess_*,
  test_a_cast_embedding_guess_says_it_was_cast_and_not_transposed, test_a_linear_guess_lists_the_transpose_and_the_cast
- a recipe's remaps are [pattern, replacement] pairs or {"pattern", "replacement"} objects; anything else is a
  RecipeError naming the field -> test_a_recipe_file_takes_remaps_as_pairs_or_as_objects_and_names_what_is_wrong
- `--skip-enum-variants` keeps a CamelCase segment without evidence and says which one, on which tensor ->
  test_a_kept_camel_case_segment_is_named_in_its_guess
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file

from engine import ArrayStore
from engine.surgery import Recipe, plan

FUSE = Recipe(adapters=("fuse-weight-norm",))


def fused(g: np.ndarray, v: np.ndarray) -> np.ndarray:
    result = plan([ArrayStore({"fc.weight_g": g, "fc.weight_v": v, "fc.bias": np.zeros(len(v), v.dtype)})], FUSE)
    (weight,) = [t for t in result.tensors if t.name == "fc.weight"]
    return weight


def test_fused_weight_norm_keeps_the_sources_float32_bytes(tmp_path):
    rng = np.random.default_rng(5)
    g, v = rng.standard_normal((3, 1), dtype=np.float32), rng.standard_normal((3, 2), dtype=np.float32)
    weight = fused(g, v)
    by_hand = (g.astype(np.float64) * v / np.linalg.norm(v.astype(np.float64), axis=1, keepdims=True)).astype(np.float32)
    assert weight.read().dtype == np.float32 and weight.read().tobytes() == by_hand.tobytes()
    result = plan([ArrayStore({"fc.weight_g": g, "fc.weight_v": v})], FUSE)
    out = load_file(result.export(tmp_path / "o.safetensors"))
    assert out["fc.weight"].dtype == np.float32 and out["fc.weight"].tobytes() == by_hand.tobytes()


def test_fused_weight_norm_of_a_1d_weight_is_the_gain_times_the_sign():
    g, v = np.array([2.0, 3.0, 0.5], np.float32), np.array([-4.0, 0.25, 1.0], np.float32)
    np.testing.assert_array_equal(fused(g, v).read(), [-2.0, 3.0, 0.5])  # ||v|| of one value is |v|


@pytest.mark.parametrize("rows, cols", [(3, 2), (2, 3)])
def test_fused_weight_norm_takes_a_flat_gain_as_one_value_per_output_row(rows, cols):
    g = np.arange(1, rows + 1, dtype=np.float32)  # stored flat, [rows], not torch's [rows, 1]
    v = np.ones((rows, cols), np.float32)
    expected = np.repeat(g[:, None] / np.sqrt(cols), cols, axis=1).astype(np.float32)
    np.testing.assert_allclose(fused(g, v).read(), expected, rtol=1e-7)


def test_the_dry_run_document_lists_every_field_of_each_guess():
    rng = np.random.default_rng(0)
    source = ArrayStore({"tokens.weight": rng.standard_normal((6, 4), dtype=np.float32)})
    doc = json.loads(json.dumps(plan([source], Recipe(adapters=("pytorch-to-burn",))).to_json()))
    assert doc["guesses"] == [{
        "name": "tokens.weight", "source_name": "tokens.weight", "module": "tokens", "kind": "Linear",
        "decision": "Linear: transposed", "reason": "2-D weight without bias, and the name 'tokens' says nothing",
        "settle": "--module tokens=Linear or --module tokens=Embedding", "alternatives": ["Linear", "Embedding"]}]


def decisions(arrays: dict[str, np.ndarray], recipe: Recipe) -> dict[str, str]:
    return {g.name: g.decision for g in plan([ArrayStore(arrays)], recipe).guesses}


def test_a_guess_says_what_the_adapter_did_not_what_remaps_and_renumbering_did():
    from engine.surgery import RemapRule
    w = np.random.default_rng(1).standard_normal((6, 4), dtype=np.float32)
    recipe = Recipe(remaps=(RemapRule(r"^x\.", "y."),), adapters=("contiguous-indices", "pytorch-to-burn"))
    assert decisions({"x.3.tokens.weight": w}, recipe) == {"y.0.tokens.weight": "Linear: transposed"}


def test_a_guess_names_the_renamed_leaf_of_a_nested_module():
    assert decisions({"enc.act.weight": np.ones(4, np.float32)}, Recipe(adapters=("pytorch-to-burn",))) == {
        "enc.act.alpha": "PRelu: renamed weight -> alpha"}


def test_a_cast_embedding_guess_says_it_was_cast_and_not_transposed():
    from engine.surgery import CastRule
    w = np.random.default_rng(2).standard_normal((10, 4), dtype=np.float32)
    recipe = Recipe(adapters=("pytorch-to-burn",), casts=(CastRule("F16"),))
    assert decisions({"embed_out.weight": w}, recipe) == {"embed_out.weight": "Embedding: cast F32 -> F16, not transposed"}


def test_a_linear_guess_lists_the_transpose_and_the_cast():
    from engine.surgery import CastRule
    w = np.random.default_rng(4).standard_normal((6, 4), dtype=np.float32)
    recipe = Recipe(adapters=("pytorch-to-burn",), casts=(CastRule("F16"),))
    assert decisions({"tokens.weight": w}, recipe) == {"tokens.weight": "Linear: transposed, cast F32 -> F16"}


def test_a_recipe_file_takes_remaps_as_pairs_or_as_objects_and_names_what_is_wrong():
    from engine import RecipeError
    from engine.surgery import RemapRule
    from engine.surgery.recipe import VERSION
    doc = {"version": VERSION, "remaps": [{"pattern": "^a$", "replacement": "b"}, ["pattern", "replacement"]]}
    assert Recipe.from_json(doc).remaps == (RemapRule("^a$", "b"), RemapRule("pattern", "replacement"))
    for remaps, message in (("^a$", "remaps: must be a list of [pattern, replacement] pairs"),
                            ([{"pattern": "a", "replacement": "b", "x": 1}], "remaps[0]: must be [pattern, replacement] (two strings)"),
                            ([["^a$", "b"], ["^a$", "b", "c"]], "remaps[1]: must be [pattern, replacement] (two strings)")):
        with pytest.raises(RecipeError) as caught:
            Recipe.from_json({"version": VERSION, "remaps": remaps})
        assert str(caught.value) == message


def test_a_kept_camel_case_segment_is_named_in_its_guess():
    from engine.surgery.guesses import Guess
    why = "CamelCase like a Burn enum variant, but no template or --module says it is one"
    holds_a_linear = {"model.enc.Block.weight": np.ones((3, 2), np.float32), "model.enc.Block.bias": np.ones(3, np.float32)}
    assert plan([ArrayStore(holds_a_linear)], Recipe(adapters=("skip-enum-variants",))).guesses[0] == Guess(
        "model.enc.Block.weight", "model.enc.Block.weight", "model.enc.Block", "Linear", "kept segment 'Block'", why,
        "--module model.enc.Block=EnumVariant to drop it, or --module model.enc.Block=Linear to keep it",
        ("Linear", "EnumVariant"))
    holds_no_tensor = {"model.Block.enc.w": np.ones(3, np.float32)}  # only a module below it does
    assert plan([ArrayStore(holds_no_tensor)], Recipe(adapters=("skip-enum-variants",))).guesses == [Guess(
        "model.Block.enc.w", "model.Block.enc.w", "model.Block", "module", "kept segment 'Block'", why,
        "--module model.Block=EnumVariant to drop it, or --module model.Block=TYPE to keep it", ("module", "EnumVariant"))]
