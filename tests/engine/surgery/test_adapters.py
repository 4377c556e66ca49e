"""The PyTorch <-> Burn adapters, checked against values computed by hand, never against the plan itself.

Each test would fail on a one-line slip in engine/surgery/adapters.py: one renumbering shared by
every indexed list, or a transpose skipped when it would not change the shape.

A recipe's adapters are refused word for word when unknown or when two undo each other (README "The workbench":
the recipe's adapters; "Command line"):
- an unknown adapter is refused, listing the ones there are -> test_an_unknown_adapter_lists_the_known_ones
- pytorch-to-burn and burn-to-pytorch undo each other: a recipe asking for both is refused
  -> test_the_two_directions_together_are_refused_in_words

What the adapters write and how a guess reads:
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
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from torch import nn

from engine import ArrayStore, open_store
from engine import RecipeError
from engine.surgery import Recipe, plan
from engine.surgery.adapters import contiguous_indices
from tests.helpers.surgery_burn_fixtures import load_pt

INDEXED = ["a.0.weight", "a.2.weight", "b.1.weight", "b.5.weight", "b.9.weight"]


def test_contiguous_indices_renumber_each_parent_on_its_own():
    assert contiguous_indices(INDEXED) == {
        "a.0.weight": "a.0.weight", "a.2.weight": "a.1.weight",
        "b.1.weight": "b.0.weight", "b.5.weight": "b.1.weight", "b.9.weight": "b.2.weight"}


def test_contiguous_indices_renumber_nested_lists_under_each_parent():
    names = ["enc.1.blocks.3.w", "enc.1.blocks.7.w", "enc.4.blocks.2.w", "enc.4.blocks.8.w", "enc.4.blocks.9.w"]
    assert list(contiguous_indices(names).values()) == [
        "enc.0.blocks.0.w", "enc.0.blocks.1.w", "enc.1.blocks.0.w", "enc.1.blocks.1.w", "enc.1.blocks.2.w"]


def test_a_plan_renumbers_two_indexed_lists_independently_and_moves_their_bytes(tmp_path):
    arrays = {name: np.full((2,), i, dtype=np.float32) for i, name in enumerate(INDEXED)}
    result = plan([ArrayStore(arrays)], Recipe(adapters=("contiguous-indices",)))
    with open_store(result.export(tmp_path / "out.safetensors")) as out:
        assert sorted(out.names) == ["a.0.weight", "a.1.weight", "b.0.weight", "b.1.weight", "b.2.weight"]
        got = {name: out.read(name).tolist() for name in out.names}
    assert got == {"a.0.weight": [0, 0], "a.1.weight": [1, 1], "b.0.weight": [2, 2], "b.1.weight": [3, 3],
                   "b.2.weight": [4, 4]}


def square_linear(tmp_path):
    """A square nn.Linear with bias saved by torch: transposing it does not change its shape."""
    torch.manual_seed(3)
    layer = nn.Linear(8, 8)
    torch.save({"fc." + k: v for k, v in layer.state_dict().items()}, tmp_path / "square.pt")
    return layer, tmp_path / "square.pt"


def test_pytorch_to_burn_transposes_a_square_linear_weight_on_the_bytes(tmp_path):
    layer, path = square_linear(tmp_path)
    weight, bias = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    result = plan([load_pt(path)], Recipe(adapters=("pytorch-to-burn",)))
    with open_store(result.export(tmp_path / "square.bpk")) as out:
        assert out.entry("fc.weight").shape == (8, 8)
        written = out.read("fc.weight")
        assert np.ascontiguousarray(written).tobytes() == np.ascontiguousarray(weight.T).tobytes()
        assert out.read("fc.bias").tobytes() == bias.tobytes()
        # Burn's Linear computes x @ W + b with W as [in, out]: the same output as torch's layer
        x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
        burn_output = x @ written + out.read("fc.bias")
    np.testing.assert_allclose(burn_output, layer(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_burn_to_pytorch_transposes_a_square_linear_weight_back(tmp_path):
    layer, path = square_linear(tmp_path)
    burn = open_store(plan([load_pt(path)], Recipe(adapters=("pytorch-to-burn",))).export(tmp_path / "sq.bpk"))
    with burn:
        back = plan([burn], Recipe(adapters=("burn-to-pytorch",)))
        with open_store(back.export(tmp_path / "sq.safetensors")) as out:
            assert out.read("fc.weight").tobytes() == layer.weight.detach().numpy().tobytes()


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
