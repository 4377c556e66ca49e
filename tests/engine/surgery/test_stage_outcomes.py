"""Outcomes of the plan's stages (weight norms, quantized tensors, templates, fused modules, casts, remaps, module
kinds), each asserted through ``plan`` or the stage on real names and shapes: a user would otherwise get a file
whose names, shapes or bytes are not what the plan showed.

Promise -> test:
- a fused weight norm's operation names both inputs, g then v, and a top-level pair becomes ``weight`` ->
  test_a_fused_weight_norm_names_both_inputs_and_a_top_level_pair_becomes_weight
- a weight norm, a split or a transpose of a quantized tensor is refused naming that tensor (README: quantized
  tensors may be renamed, never decoded) -> test_fusing_a_quantized_weight_norm_names_the_v_tensor,
  test_splitting_a_quantized_lstm_weight_names_it
- a template that writes a module under an enum variant still lends its shapes: its transposed 2-D weight proves a
  Linear where the name alone said Embedding -> test_a_templates_variant_name_lends_its_shape_to_settle_a_kind
- a fused-back tensor in a module whose kind is only guessed plans (its guess listed), never a crash ->
  test_fusing_attention_back_beside_a_guessed_weight_plans_and_lists_only_that_guess
- a first plan of more sources than a stage's cache keeps (its SIZE, four) merges them all, in order ->
  test_a_first_plan_of_five_sources_merges_all_five_in_order
- a guess is listed when the module kinds it chose between would cast a tensor in another order, so to another
  dtype -> test_casts_restricted_to_module_kinds_make_a_kind_guess_that_matters
- a weight norm fused into a module whose kind is guessed lists that guess with every step it took (the fusing,
  then the adapter's transpose) -> test_a_weight_norm_fused_in_a_guessed_linear_lists_both_steps_in_its_guess

More promises (README, section) -> tests:
- "### Surgery", Order of operations (remaps, then module types): a remap edit that moves a weight-norm
  parametrization away from its module plans as a fresh plan of the edited recipe does ->
  test_a_remap_moving_a_parametrization_off_its_module_plans_as_a_fresh_plan; and one that grows a module's last
  segment (``emb`` -> ``aXX.XXemb``) guesses it again under its new name ->
  test_a_remap_that_moves_a_modules_name_into_a_longer_segment_guesses_it_again
- "### Surgery", Module types, evidence first (a guess says what the name said): a module whose path is only
  indices has no name to go by, and its reason says so with an empty name ->
  test_a_module_path_of_only_indices_is_guessed_under_an_empty_name
- "### Surgery", Order of operations (a fused weight norm has two source names): a guess and a dropped tensor name
  both -> test_a_fused_weight_norms_guess_and_drop_name_both_source_tensors
- "### Surgery", replacements take ``${name}``: a plain-text pattern with a group reference (``${0}``, the whole
  match) replaces as the regex does -> test_a_plain_pattern_with_a_whole_match_reference_keeps_the_match; a
  backslash that starts no reference is literal text -> test_a_backslash_in_a_replacement_is_literal_text_under_a_regex_pattern
- "Fused modules": the fuse/split stage gives the Linears it proves under their own paths, and empty mappings
  when nothing is fused -> test_fuse_split_gives_empty_linears_and_conventions_when_nothing_is_fused,
  test_the_linears_a_split_proves_carry_their_own_paths
- "Burn versions, bools and quantized tensors" (quantized tensors may be renamed, never decoded): the refusal
  names the transpose with the tensor's own shape -> test_transposing_a_quantized_linear_names_its_shape
- "### Surgery", Order of operations (norm ``weight/bias`` -> ``gamma/beta``): a top-level norm becomes ``gamma``,
  ``beta``, and a renamed norm keeps the remap's step before the adapter's ->
  test_a_top_level_norm_is_renamed_to_gamma_and_beta_without_a_leading_dot,
  test_a_remapped_norm_keeps_its_remap_step_before_the_adapters_rename
- "### Surgery", Module types, evidence first (CamelCase segments kept under ``--skip-enum-variants`` are guesses):
  a parametrization under such a segment lists its variant guesses and plans ->
  test_a_parametrization_under_a_kept_variant_lists_the_variant_guesses
- "### Surgery", Module types, evidence first: each rule of the module-kind guess alone ->
  tests/engine/surgery/test_modules.py::test_each_piece_of_evidence_alone_decides_the_kind
- "### Surgery", Module types (a guess is listed when its bytes rest on it): casts that treat both kinds alike
  make no guess -> test_a_cast_of_both_kinds_a_guess_chose_between_lists_no_guess
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import ArrayStore, RecipeError
from engine.dtypes import quantized
from engine.store import Store, TensorEntry
from engine.surgery import Recipe, plan, stages
from engine.surgery import CastRule, Filter, RemapRule
from engine.surgery.modules import ModuleGuess
from engine.surgery.plan import StageCache
from engine.surgery.remap import compile_rules

Q8 = quantized({"value": "Q8S", "param": "F32", "store": "Native", "level": "Tensor", "mode": "Symmetric"})


class EntriesStore(Store):
    """A Burnpack-like store of ``entries`` only: the plan reads names, dtypes and shapes, never bytes."""

    format = "burnpack"

    def __init__(self, entries: list[TensorEntry]):
        super().__init__("q.bpk", entries)


def test_a_fused_weight_norm_names_both_inputs_and_a_top_level_pair_becomes_weight():
    store = ArrayStore({"weight_g": np.full((2, 1), 2, np.float32), "weight_v": np.ones((2, 3), np.float32),
                        "c.weight_g": np.ones((2, 1), np.float32), "c.weight_v": np.ones((2, 3), np.float32)})
    result = plan([store], Recipe(adapters=("fuse-weight-norm",)))
    assert result.names == ["weight", "c.weight"]
    top, nested = result.tensors
    assert top.operations == ["fuse weight norm weight_g * weight_v / ||weight_v|| -> [2, 3]"]
    assert nested.operations == ["fuse weight norm c.weight_g * c.weight_v / ||c.weight_v|| -> [2, 3]"]
    assert top.source_name == "weight_g, weight_v"
    np.testing.assert_allclose(top.read(), np.full((2, 3), 2 / np.sqrt(3), np.float32), rtol=1e-6)


def test_a_first_plan_of_five_sources_merges_all_five_in_order():
    """A new cache (a new window) lets the first source's results go within its first plan."""
    from engine.surgery.plan import StageCache
    stores = [ArrayStore({f"s{i}.w": np.full(2, i, np.float32)}) for i in range(StageCache.SIZE + 1)]
    result = plan(stores, Recipe(), cache=StageCache())
    assert [(t.name, t.read().tolist()) for t in result.tensors] == [(f"s{i}.w", [i, i]) for i in range(5)]


def test_casts_restricted_to_module_kinds_make_a_kind_guess_that_matters():
    """``c`` is a Linear by guess (an Embedding otherwise): as a Linear it is cast to F16 then BF16, as an
    Embedding to BF16 then F16. Its dtype rests on the guess, so the guess is listed."""
    from engine.surgery.recipe import CastRule
    casts = (CastRule("F16", ("Linear",)), CastRule("BF16", ("Linear", "Embedding")), CastRule("F16", ("Embedding",)))
    result = plan([ArrayStore({"c.weight": np.ones((3, 4), np.float32)})], Recipe(casts=casts))
    assert [t.dtype.name for t in result.tensors] == ["BF16"]
    assert [(g.name, g.decision, g.alternatives) for g in result.guesses] == [
        ("c.weight", "Linear: cast F32 -> F16, cast F16 -> BF16", ("Linear", "Embedding"))]


def test_a_weight_norm_fused_in_a_guessed_linear_lists_both_steps_in_its_guess():
    """``c`` holds a 2-D weight and no bias: a Linear only by guess, whose outcome (transposed) rests on it."""
    store = ArrayStore({"c.weight_g": np.full((2, 1), 2, np.float32), "c.weight_v": np.ones((2, 3), np.float32)})
    result = plan([store], Recipe(adapters=("fuse-weight-norm", "pytorch-to-burn")))
    assert [(g.name, g.decision) for g in result.guesses] == [
        ("c.weight", "Linear: fuse weight norm c.weight_g * c.weight_v / ||c.weight_v|| -> [2, 3], transposed")]


def test_fusing_a_quantized_weight_norm_names_the_v_tensor():
    source = EntriesStore([TensorEntry("c.weight_g", Q8, (2, 1), 2), TensorEntry("c.weight_v", Q8, (2, 3), 6)])
    with pytest.raises(RecipeError, match=r"^tensor 'c\.weight_v' is quantized \(.*\); 'fuse weight norm c\.weight_g"):
        plan([source], Recipe(adapters=("fuse-weight-norm",)))


def lstm_batch(first_dtype) -> stages.Batch:
    hidden, inputs = 2, 3
    store = ArrayStore({"lstm.weight_ih_l0": np.zeros((4 * hidden, inputs), np.float32),
                        "lstm.weight_hh_l0": np.zeros((4 * hidden, hidden), np.float32)})
    batch = stages.Batch.of(store.entries)
    return stages.Batch(batch.inputs, batch.names, [first_dtype, *batch.dtypes[1:]], batch.shapes, batch.ops,
                        batch.variants)


def test_splitting_a_quantized_lstm_weight_names_it():
    with pytest.raises(RecipeError, match=r"^tensor 'lstm\.weight_ih_l0' is quantized .*'split LSTM gates: "):
        stages.fuse_split(lstm_batch(Q8), False, "pytorch-to-burn")
    split = stages.fuse_split(lstm_batch(lstm_batch(Q8).dtypes[1]), False, "pytorch-to-burn").batch
    assert split.names[0] == "lstm.input_gate.input_transform.weight"


def test_a_templates_variant_name_lends_its_shape_to_settle_a_kind():
    source = ArrayStore({"enc.embed.weight": np.arange(6, dtype=np.float32).reshape(3, 2)})
    template = ArrayStore({"enc.Block.embed.weight": np.zeros((2, 3), np.float32)})
    assert plan([source], Recipe(adapters=("pytorch-to-burn",))).modules["enc.embed"].kind == "Embedding"
    result = plan([source], Recipe(adapters=("pytorch-to-burn",)), template=template)
    guess = result.modules["enc.embed"]
    assert (guess.kind, guess.reason, guess.guessed) == ("Linear", "the template wants this weight transposed", False)
    (tensor,) = result.tensors
    assert tensor.name == "enc.Block.embed.weight" and tensor.shape == (2, 3) and result.guesses == []
    np.testing.assert_array_equal(tensor.read(), np.arange(6, dtype=np.float32).reshape(3, 2).T)
    index = stages.TemplateIndex([("enc.Block.embed.weight", (2, 3)), ("enc.embed.weight", (5, 5))])
    assert index.shape("enc.embed.weight") == (5, 5) and index.shape("enc.Block.embed.weight") == (2, 3)
    assert index.shape("enc.other.weight") is None


def test_fusing_attention_back_beside_a_guessed_weight_plans_and_lists_only_that_guess():
    rng = np.random.default_rng(0)
    arrays = {f"attn.{p}.{leaf}": rng.standard_normal((4, 4) if leaf == "weight" else (4,), dtype=np.float32)
              for p in ("query", "key", "value", "output") for leaf in ("weight", "bias")}
    arrays["attn.weight"] = rng.standard_normal((3, 4), dtype=np.float32)  # no bias beside it: a guessed Linear
    result = plan([ArrayStore(arrays)], Recipe(adapters=("burn-to-pytorch",)))
    assert sorted(result.names) == ["attn.in_proj_bias", "attn.in_proj_weight", "attn.out_proj.bias",
                                    "attn.out_proj.weight", "attn.weight"]
    assert [(g.name, g.decision) for g in result.guesses] == [("attn.weight", "Linear: transposed")]


def test_the_dry_run_document_says_which_source_and_which_filter_dropped_each_tensor():
    from engine.surgery import Filter, SourceSpec
    store = ArrayStore({"fc.weight": np.ones((2, 2), np.float32), "fc.bias": np.ones(2, np.float32),
                        "aux.weight": np.ones(2, np.float32)}, name="model.safetensors")
    recipe = Recipe(sources=(SourceSpec("model.safetensors", filter=Filter(exclude=("^aux",))),),
                    filter=Filter(exclude=("bias",)), adapters=("pytorch-to-burn",))
    dropped = plan([store], recipe).to_json()["dropped"]
    assert dropped == [
        {"source": "model.safetensors", "name": "aux.weight", "reason": "source filter: excluded by rule 1 ('^aux')",
         "matched": "aux.weight", "by_recipe_filter": False},
        {"source": "model.safetensors", "name": "fc.bias", "reason": "filter: excluded by rule 1 ('bias')",
         "matched": "fc.bias", "by_recipe_filter": True}]


def test_a_stacked_lstm_layer_is_placed_by_convention_and_says_how_to_settle_it():
    arrays = {f"lstm.weight_{side}_l{layer}": np.zeros((8, 2), np.float32) for layer in (0, 1) for side in ("ih", "hh")}
    guesses = plan([ArrayStore(arrays)], Recipe(adapters=("pytorch-to-burn",))).guesses
    assert len(guesses) == 16 and guesses[0].to_json() == {
        "name": "lstm.0.input_gate.input_transform.weight", "source_name": "lstm.weight_ih_l0", "module": "lstm.0",
        "kind": "LSTM", "decision": "placed at lstm.0.input_gate.input_transform.weight",
        "reason": "Burn has no stacked LSTM: layer 0 of nn.LSTM lstm is placed at lstm.0, as a Vec<Lstm> (or "
                  "Vec<BiLstm>) field would hold it",
        "settle": "--template FILE (a file of the target model holding this name), or a remap to where the model "
                  "keeps it",
        "alternatives": []}


def test_a_plan_keeps_quantized_tensors_as_stored_unless_told_to_dequantize(tmp_path):
    from engine import ExportError
    source = EntriesStore([TensorEntry("fc.weight", Q8, (4, 3), 16)])
    with pytest.raises(ExportError, match=r"^out\.safetensors: tensor 'fc\.weight': SafeTensors has no quantized dtype"):
        plan([source], Recipe()).export(tmp_path / "out.safetensors")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("leaf", ["original0", "original1"])
def test_a_remap_moving_a_parametrization_off_its_module_plans_as_a_fresh_plan(leaf):
    """``m`` holds the parametrization's tensor (folded onto it) and ``m.bias``; the remap moves the
    parametrization to ``k`` and leaves ``m.bias``: module ``k`` appears and ``m`` keeps only its bias."""
    store = ArrayStore({f"m.parametrizations.weight.{leaf}": np.ones((4, 3), np.float32),
                        "m.parametrizations.weight.extra": np.ones(4, np.float32), "m.bias": np.zeros(4, np.float32)})
    recipe = Recipe(adapters=("pytorch-to-burn",))
    edited = recipe.with_changes(remaps=(RemapRule(r"^m\.parametrizations", "k.parametrizations"),))
    cache = StageCache()
    assert list(plan([store], recipe, cache=cache).modules) == ["m", "m.parametrizations.weight"]
    after_edit = plan([store], edited, cache=cache)
    fresh = plan([store], edited, cache=StageCache())
    assert after_edit.to_json() == fresh.to_json()
    assert list(after_edit.modules) == ["k", "k.parametrizations.weight", "m"]
    assert after_edit.modules["m"].reason == "no weight tensor"


def test_a_module_path_of_only_indices_is_guessed_under_an_empty_name():
    result = plan([ArrayStore({"7.3.weight": np.ones((3, 2), np.float32)})], Recipe(adapters=("pytorch-to-burn",)))
    guess = result.modules["7.3"]
    assert (guess.kind, guess.reason, guess.guessed) == ("Linear", "2-D weight without bias, and the name '' says nothing",
                                                         True)


def test_a_fused_weight_norms_guess_and_drop_name_both_source_tensors():
    store = ArrayStore({"c.weight_g": np.full((2, 1), 2, np.float32), "c.weight_v": np.ones((2, 3), np.float32),
                        "d.weight_g": np.full((2, 1), 2, np.float32), "d.weight_v": np.ones((2, 3), np.float32)})
    recipe = Recipe(adapters=("fuse-weight-norm", "pytorch-to-burn"), filter=Filter(exclude=("^d",)))
    result = plan([store], recipe)
    assert [(g.name, g.source_name) for g in result.guesses] == [("c.weight", "c.weight_g, c.weight_v")]
    assert [(d.name, d.matched) for d in result.dropped] == [("d.weight_g, d.weight_v", "d.weight")]


def test_a_plain_pattern_with_a_whole_match_reference_keeps_the_match():
    (rule,) = compile_rules([RemapRule("fc", "${0}_x")])
    assert stages.remap_rule(["fc.weight", "head.bias"], rule) == (["fc_x.weight", "head.bias"], 1)
    (at_start,) = compile_rules([RemapRule("^fc", "${0}_x")])
    assert stages.remap_rule(["fc.weight", "a.fc"], at_start) == (["fc_x.weight", "a.fc"], 1)


def test_fuse_split_gives_empty_linears_and_conventions_when_nothing_is_fused():
    batch = stages.Batch.of(ArrayStore({"fc.weight": np.ones((3, 2), np.float32)}).entries)
    for direction in (None, "pytorch-to-burn"):
        split = stages.fuse_split(batch, False, direction)
        assert split.batch.names == ["fc.weight"]
        assert split.linears == {} and split.conventions == {}


def test_the_linears_a_split_proves_carry_their_own_paths():
    store = ArrayStore({"attn.in_proj_weight": np.ones((6, 2), np.float32),
                        "attn.out_proj.weight": np.ones((2, 2), np.float32)})
    split = stages.fuse_split(stages.Batch.of(store.entries), False, "pytorch-to-burn")
    why = "a projection of nn.MultiheadAttention's in_proj_weight"
    assert split.linears == {"attn.query": ModuleGuess("attn.query", "Linear", why),
                             "attn.key": ModuleGuess("attn.key", "Linear", why),
                             "attn.value": ModuleGuess("attn.value", "Linear", why),
                             "attn.output": ModuleGuess("attn.output", "Linear", "nn.MultiheadAttention's out_proj")}
    result = plan([store], Recipe(adapters=("pytorch-to-burn",)))
    assert result.modules["attn.query"].path == "attn.query"


def test_transposing_a_quantized_linear_names_its_shape():
    entries = [TensorEntry("fc.weight", Q8, (3, 2), 8), TensorEntry("fc.bias", Q8, (3,), 4)]
    batch = stages.Batch.of(entries)
    with pytest.raises(RecipeError, match=r"^tensor 'fc\.weight' is quantized .*'transpose \[3, 2\] -> \[2, 3\]' would"):
        stages.adapt(batch, stages.infer(batch, None, {}), "pytorch-to-burn", None)


def test_a_top_level_norm_is_renamed_to_gamma_and_beta_without_a_leading_dot():
    store = ArrayStore({"weight": np.ones(3, np.float32), "bias": np.zeros(3, np.float32)})
    result = plan([store], Recipe(adapters=("pytorch-to-burn",)))
    assert result.names == ["gamma", "beta"]
    assert result.tensors[0].operations == ["rename weight -> gamma (pytorch-to-burn, LayerNorm)"]


def test_a_remapped_norm_keeps_its_remap_step_before_the_adapters_rename():
    store = ArrayStore({"n.weight": np.ones(3, np.float32), "n.bias": np.zeros(3, np.float32)})
    result = plan([store], Recipe(adapters=("pytorch-to-burn",), remaps=(RemapRule(r"^n\.", "norm."),)))
    assert result.names == ["norm.gamma", "norm.beta"]
    assert result.tensors[0].operations == ["rename n.weight -> norm.weight (remap)",
                                            "rename norm.weight -> norm.gamma (pytorch-to-burn, LayerNorm)"]


def test_a_parametrization_under_a_kept_variant_lists_the_variant_guesses():
    """The parametrization's tensors belong to module ``Enc`` (folded), not to their own path: they have no
    module guess of their own, only the kept CamelCase segment."""
    store = ArrayStore({"Enc.parametrizations.weight.original0": np.full((2, 1), 2, np.float32),
                        "Enc.parametrizations.weight.original1": np.ones((2, 3), np.float32)})
    result = plan([store], Recipe(adapters=("skip-enum-variants",)))
    assert [(g.name, g.module, g.kind, g.decision) for g in result.guesses] == [
        ("Enc.parametrizations.weight.original0", "Enc", "module", "kept segment 'Enc'"),
        ("Enc.parametrizations.weight.original1", "Enc", "module", "kept segment 'Enc'")]


def test_a_cast_of_both_kinds_a_guess_chose_between_lists_no_guess():
    """``c`` is a Linear by guess (an Embedding otherwise); the cast names both kinds, so either way it is cast
    alike and nothing rests on the guess."""
    casts = (CastRule("F16", ("Linear", "Embedding")),)
    result = plan([ArrayStore({"c.weight": np.ones((3, 4), np.float32)})], Recipe(casts=casts))
    assert [t.dtype.name for t in result.tensors] == ["F16"]
    assert result.modules["c"].guessed and result.guesses == []


def test_a_remap_that_moves_a_modules_name_into_a_longer_segment_guesses_it_again():
    """``emb`` (an Embedding by its name) becomes ``aXX.XXemb``: its last segment is now ``XXemb``, which says
    nothing, so after the edit it is a Linear, as a fresh plan finds."""
    store = ArrayStore({"emb.weight": np.ones((3, 2), np.float32)})
    recipe = Recipe(adapters=("pytorch-to-burn",))
    edited = recipe.with_changes(remaps=(RemapRule("^emb", "aXX.XXemb"),))
    cache = StageCache()
    assert plan([store], recipe, cache=cache).modules["emb"].kind == "Embedding"
    after_edit = plan([store], edited, cache=cache)
    assert after_edit.to_json() == plan([store], edited, cache=StageCache()).to_json()
    guess = after_edit.modules["aXX.XXemb"]
    assert (guess.kind, guess.reason) == ("Linear", "2-D weight without bias, and the name 'XXemb' says nothing")
    assert after_edit.tensors[0].shape == (2, 3)


def test_a_backslash_in_a_replacement_is_literal_text_under_a_regex_pattern():
    """A pattern that is no plain text goes through the regex: the replacement's lone backslash stays one."""
    (rule,) = compile_rules([RemapRule(r"^f.\.", "g\\h.")])
    assert stages.remap_rule(["fc.weight", "head.bias"], rule) == (["g\\h.weight", "head.bias"], 1)
    result = plan([ArrayStore({"fc.weight": np.ones(2, np.float32)})], Recipe(remaps=(RemapRule(r"^f.\.", "g\\h."),)))
    assert result.names == ["g\\h.weight"]
