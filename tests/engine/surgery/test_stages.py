"""The plan's stages one by one, their cache (an edit re-runs only the stages after it) and rule hits as data."""

import numpy as np
import pytest

from engine import ArrayStore, RecipeError
from engine.dtypes import quantized
from engine.surgery import CastRule, Filter, Predicate, Recipe, RemapRule, plan, stages
from engine.surgery.filters import EXCLUDE, INCLUDE, PATH, REMAP, WHERE, RuleHits
from engine.surgery.ops import Cast, FuseWeightNorm, Rename, Transpose, built
from engine.surgery.plan import StageCache
from engine.surgery.remap import compile_rules

PER_SOURCE = ["source", "remap", "module inference", "adapters", "filter", "cast", "guesses"]


def model(name="m"):
    rng = np.random.default_rng(0)
    return ArrayStore({"blocks.0.fc.weight": rng.standard_normal((3, 2), dtype=np.float32),
                       "blocks.0.fc.bias": np.zeros(3, np.float32),
                       "blocks.0.norm.weight": np.ones(3, np.float32), "blocks.0.norm.bias": np.zeros(3, np.float32),
                       "blocks.2.fc.weight": rng.standard_normal((3, 3), dtype=np.float32),
                       "blocks.2.fc.bias": np.ones(3, np.float32)}, name=name)


def batch(store=None):
    return stages.Batch.of((store or model()).entries)


def test_remap_renames_with_one_op_per_change_and_counts_each_rule():
    out, hits = stages.remap(batch(), compile_rules([RemapRule(r"^blocks\.", "layers."), RemapRule("fc", "dense")]))
    assert out.names[0] == "layers.0.dense.weight" and hits == (6, 4)
    assert built(out.ops[0]) == (Rename("blocks.0.fc.weight", "layers.0.dense.weight", "remap"),)
    assert out.shapes == batch().shapes  # a rename leaves every other column alone


def test_renumber_counts_every_name_of_the_source_even_those_filtered_out():
    source = batch()
    kept = stages.Batch(*(column[4:] for column in (source.inputs, source.names, source.dtypes, source.shapes,
                                                    source.ops, source.variants)))
    assert stages.renumber(kept, None).names == ["blocks.0.fc.weight", "blocks.0.fc.bias"]
    assert stages.renumber(kept, source.names).names == ["blocks.1.fc.weight", "blocks.1.fc.bias"]


def test_enum_variants_drop_told_segments_and_keep_unproven_ones_as_guesses():
    store = ArrayStore({"enc.Base.weight": np.ones((2, 2), np.float32), "enc.Other.weight": np.ones(2, np.float32)})
    out = stages.enum_variants(batch(store), {"enc.Base": "EnumVariant"}, None, skip=True)
    assert out.names == ["enc.weight", "enc.Other.weight"]
    assert out.variants == [(), ("enc.Other",)]


def test_told_variants_without_skip_drop_only_what_was_told_and_guess_nothing():
    """Without --skip-enum-variants a CamelCase segment nobody named is no candidate: kept, and no guess."""
    store = ArrayStore({"enc.Base.Other.weight": np.ones((2, 2), np.float32)})
    out = stages.enum_variants(batch(store), {"enc.Base": "EnumVariant"}, None, skip=False)
    assert out.names == ["enc.Other.weight"] and out.variants == [()]


def test_a_template_settles_every_name_after_one_it_has_as_written():
    """The first name's module is in the template as written (kept); the second's only without its variant."""
    store = ArrayStore({"a.Block.x.weight": np.ones(2, np.float32), "b.Block.y.weight": np.ones(2, np.float32)})
    template = stages.TemplateIndex([("a.Block.x.weight", (2,)), ("b.y.weight", (2,))])
    out = stages.enum_variants(batch(store), {}, template, skip=True)
    assert out.names == ["a.Block.x.weight", "b.y.weight"]


def test_fuse_weight_norms_makes_one_tensor_from_two_inputs():
    store = ArrayStore({"c.weight_g": np.ones((2, 1), np.float32), "c.weight_v": np.ones((2, 3), np.float32),
                        "c.bias": np.ones(2, np.float32)})
    out = stages.fuse_weight_norms(batch(store))
    assert out.names == ["c.weight", "c.bias"] and [e.name for e in out.inputs[0]] == ["c.weight_g", "c.weight_v"]
    assert isinstance(out.ops[0][-1], FuseWeightNorm)


def test_module_inference_then_adapters_transpose_linears_and_rename_norms():
    source = batch()
    modules = stages.infer(source, None, {"blocks.2.fc": "Embedding"})
    assert modules.guesses["blocks.0.fc"].kind == "Linear" and modules.guesses["blocks.2.fc"].overridden
    adapted = stages.adapt(source, modules, "pytorch-to-burn", None)
    assert adapted.batch.shapes[0] == (2, 3) and built(adapted.batch.ops[0]) == (Transpose((3, 2)),)
    assert adapted.batch.names[2:4] == ["blocks.0.norm.gamma", "blocks.0.norm.beta"]
    assert adapted.batch.ops[4] == () and adapted.before is source  # the Embedding is left as it is


def test_adapters_refuse_to_transpose_a_quantized_tensor():
    source = batch()
    q = quantized({"value": "Q8S", "param": "F32", "store": "Native", "level": "Tensor", "mode": "Symmetric"})
    odd = stages.Batch(source.inputs, source.names, [q] + source.dtypes[1:], source.shapes, source.ops, source.variants)
    with pytest.raises(RecipeError, match="'blocks.0.fc.weight' is quantized"):
        stages.adapt(odd, stages.infer(odd, None, {}), "pytorch-to-burn", None)


def test_filter_keeps_indices_and_says_why_it_drops():
    adapted = stages.adapt(batch(), stages.infer(batch(), None, {}), None, None)
    out = stages.filter_names(adapted, Filter(include=("fc",), exclude=("bias",)), "m")
    assert out.kept == [0, 4]
    assert [(d.name, d.reason) for d in out.dropped][:2] == [("blocks.0.fc.bias", "filter: excluded by rule 1 ('bias')"),
                                                             ("blocks.0.norm.weight", "filter: matched no include rule")]
    assert out.facts is None  # no predicate asked for facts


def test_cast_only_the_kinds_it_names():
    adapted = stages.adapt(batch(), stages.infer(batch(), None, {}), None, None)
    out = stages.cast(adapted, [0, 2], [CastRule("F16", ("LayerNorm",))])
    assert [str(d) for d in out.dtypes] == ["F32", "F16"] and built(out.ops[1])[0] == Cast(out.dtypes[0], out.dtypes[1])


def test_an_edit_reruns_only_the_stages_after_it():
    cache, store = StageCache(), model()
    recipe = Recipe(adapters=("pytorch-to-burn",), remaps=(RemapRule(r"^blocks\.", "layers."),),
                    filter=Filter(exclude=("norm",)))
    first = plan([store], recipe, cache=cache)
    assert all(cache.ran[stage] == 1 for stage in PER_SOURCE)
    filtered = plan([store], recipe.with_changes(filter=Filter(exclude=("bias",))), cache=cache)
    assert [cache.ran[stage] for stage in PER_SOURCE] == [1, 1, 1, 1, 2, 2, 2]
    remapped = plan([store], recipe.with_changes(remaps=(RemapRule(r"^blocks\.", "enc."),)), cache=cache)
    assert [cache.ran[stage] for stage in PER_SOURCE] == [1, 2, 2, 2, 3, 3, 3]
    again = plan([store], recipe, cache=cache)  # undo: every stage's result is still there
    assert [cache.ran[stage] for stage in PER_SOURCE] == [1, 2, 2, 2, 3, 3, 3]
    assert again.names == first.names == ["layers.0.fc.weight", "layers.0.fc.bias", "layers.2.fc.weight",
                                          "layers.2.fc.bias"]
    assert "layers.0.norm.gamma" in filtered.names and remapped.names[0] == "enc.0.fc.weight"
    assert again.tensors[0].ops == first.tensors[0].ops and again is not first


def test_a_cached_plan_is_not_shared_with_its_caller():
    cache, store = StageCache(), model()
    first = plan([store], Recipe(), cache=cache)
    first.tensors.clear()
    assert len(plan([store], Recipe(), cache=cache).tensors) == 6


def test_rule_hits_are_data_with_kind_index_and_pattern():
    recipe = Recipe(remaps=(RemapRule("x", "y"), RemapRule(r"^blocks", "b")),
                    filter=Filter(include=("fc", "norm"), full_paths=("b.0.fc.bias",), where=(Predicate("ndim", "==", 1),),
                                  exclude=("weight",)))
    hits = plan([model()], recipe).rule_hits
    assert [(h.kind, h.index, h.pattern, h.count) for h in hits] == [
        (INCLUDE, 0, "fc", 4), (INCLUDE, 1, "norm", 2), (PATH, 0, "b.0.fc.bias", 1), (WHERE, 0, "ndim == 1", 4),
        (EXCLUDE, 0, "weight", 3), (REMAP, 0, "x", 0), (REMAP, 1, "^blocks", 6)]
    assert hits[-1] == RuleHits(REMAP, 1, "^blocks", 6, "b") and hits[-1].rule == "remap '^blocks' -> 'b'"
    assert hits[-1].to_json()["replacement"] == "b"


def test_big_sources_keep_fewer_results_per_stage():
    cache, store = StageCache(), model()
    cache.TENSORS = 2 * len(store)  # room for two results of this source per stage
    edits = [Recipe(remaps=(RemapRule(r"^blocks\.", f"v{i}."),)) for i in range(3)]
    for recipe in edits:
        plan([store], recipe, cache=cache)
    plan([store], edits[2], cache=cache)
    plan([store], edits[1], cache=cache)
    assert cache.ran["remap"] == 3  # the last two are still there
    assert plan([store], edits[0], cache=cache).names[0] == "v0.0.fc.weight" and cache.ran["remap"] == 4
