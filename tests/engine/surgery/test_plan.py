"""Plans: filters, remaps, merges, conflicts, casts, weight-norm fusion and laziness, on real stores.

What a source's own filter keeps, as ``plan`` reports it (README "### Surgery", Order of operations, 1.: a
source's own filter, on the names as the file writes them) -> tests:
- its predicates see each tensor's own name, dtype and shape ->
  test_a_source_filters_predicates_see_each_tensors_name_dtype_and_shape; its module predicates see the inferred
  kinds, and a ``--module PATH=TYPE`` edit on the same open file re-selects by the new kind ->
  test_a_source_filters_module_predicate_follows_a_module_type_edit_on_the_same_store; a tensor whose module path
  has no kind of its own (a weight-norm parametrization) is of module "Unknown" ->
  test_a_source_filters_module_predicate_calls_a_parametrization_tensor_unknown
- a predicate holding a list (made in code, as ``Predicate`` allows) is applied like any other ->
  test_a_source_filter_with_a_list_valued_module_predicate_plans_like_a_tuple_valued_one

Words and metadata of a plan, on real names and shapes -> tests:
- a split is one operation naming its input, its rows and every output, in order (README "Fused modules":
  ``split LSTM gates: lstm.weight_ih_l0 rows 0:5 -> ...``) -> test_a_split_names_its_rows_and_every_output
- fusing back names the inputs, whether they were transposed, and the output ->
  test_fusing_attention_back_names_the_inputs_and_whether_they_were_transposed
- a plan's tensor shows as ``<PlannedTensor NAME DTYPE SHAPE from SOURCE:NAME>`` (what a log line shows) ->
  test_a_planned_tensor_shows_its_name_dtype_shape_and_where_it_comes_from
- filters that leave nothing name every filter and rule (README: "filters that leave nothing stop with exit 1,
  naming the filter") -> test_filters_that_leave_nothing_name_every_rule
- the export dialog's metadata is what ``convert`` writes: header keys, the recipe's own and digest, the sources'
  fields under the names the format keeps them by -> test_export_metadata_is_what_convert_writes
- a new plan cache and source-filter cache start empty and work (the module-level ones are made at import) ->
  test_a_fresh_selection_cache_keeps_a_sources_filtered_entries
- a plan as data (``convert --dry-run --json``, the GUI's document) holds every part under its own key ->
  test_a_plan_as_data_holds_every_part_under_its_key, test_a_later_source_overriding_a_name_is_listed_in_the_plans_data
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

import engine
from engine import ArrayStore, ExportError, RecipeError, export, open_store
from engine.dtypes import quantized
from engine.store import Store, TensorEntry
from engine.surgery import (CastRule, Filter, Predicate, PredicateGroup, Recipe, RemapRule, SourceSpec, diff,
                            export_metadata, plan)
from engine.surgery.plan import RECIPE_METADATA_KEY, _SelectionCache


def store(name="a", **arrays):
    return ArrayStore({k.replace("__", "."): v for k, v in arrays.items()}, name=name)


def model():
    rng = np.random.default_rng(0)
    return store(enc__0__weight=rng.standard_normal((4, 3), dtype=np.float32), enc__0__bias=np.zeros(4, np.float32),
                 enc__ln__weight=np.ones(4, np.float32), enc__ln__bias=np.zeros(4, np.float32),
                 dec__weight=rng.standard_normal((2, 4), dtype=np.float32), steps=np.arange(3, dtype=np.int64))


def test_include_regexes_are_searched_and_or_ed_and_exclusions_say_which_rule():
    result = plan([model()], Recipe(filter=Filter(include=("ln", r"^dec"), exclude=(r"bias$",))))
    assert result.names == ["enc.ln.weight", "dec.weight"]
    reasons = {d.name: d.reason for d in result.dropped}
    assert reasons["enc.ln.bias"] == "filter: excluded by rule 1 ('bias$')"
    assert reasons["steps"] == "filter: matched no include rule"


def test_each_filter_rule_reports_its_count():
    f = Filter(include=("enc",), full_paths=("steps", "absent"), where=(Predicate("ndim", "==", 2),), exclude=("bias",))
    hits = {h.rule: h.count for h in plan([model()], Recipe(filter=f)).rule_hits}
    assert hits == {"include 'enc'": 4, "path 'steps'": 1, "path 'absent'": 0, "where ndim == 2": 2, "exclude 'bias'": 2}


def test_predicates_are_data_with_and_or_and_module_types():
    f = Filter(where=(PredicateGroup("and", (Predicate("module", "==", "Linear"), Predicate("numel", ">", 8))),
                      Predicate("dtype", "in", ("I64",))))
    assert plan([model()], Recipe(filter=f)).names == ["enc.0.weight", "steps"]
    assert plan([model()], Recipe(filter=Filter(where=(Predicate("shape", "==", [4]),)))).names == \
        ["enc.0.bias", "enc.ln.weight", "enc.ln.bias"]
    assert plan([model()], Recipe(filter=Filter(where=(Predicate("name", "matches", r"ln\.w"),)))).names == ["enc.ln.weight"]


@pytest.mark.parametrize("bad,message", [
    (lambda: Predicate("colour", "==", 1), "unknown field 'colour'"),
    (lambda: Predicate("ndim", "~", 1), "unknown operator '~'"),
    (lambda: Predicate("name", "matches", "("), "invalid regex"),
    (lambda: Filter(exclude=("ok", "[")), "exclude rule 2"),
])
def test_bad_filter_rules_are_recipe_errors_naming_the_rule(bad, message):
    with pytest.raises(RecipeError, match=message):
        bad()


def test_remap_accepts_rust_and_python_replacements_and_counts_hits():
    rules = (RemapRule(r"^enc\.(\d+)\.", "encoder.layers.$1."), RemapRule(r"^(?P<part>dec)\.", r"\g<part>oder."),
             RemapRule(r"ln\.(\w+)", r"norm.${1}"))
    result = plan([model()], Recipe(remaps=rules))
    assert result.names == ["encoder.layers.0.weight", "encoder.layers.0.bias", "enc.norm.weight", "enc.norm.bias",
                            "decoder.weight", "steps"]
    assert [h.count for h in result.rule_hits] == [2, 1, 2]


@pytest.mark.parametrize("rule,message", [
    (RemapRule("(", "x"), r"remap rule 2 \('\(' -> 'x'\): invalid regex"),
    (RemapRule("a(b)", "$2"), "remap rule 2 .*group '2'"),
])
def test_a_bad_remap_rule_is_named_by_index_and_pattern(rule, message):
    with pytest.raises(RecipeError, match=message):
        plan([model()], Recipe(remaps=(RemapRule("ok", "fine"), rule)))


def test_later_sources_override_earlier_ones_and_say_so():
    first, second = store("first.safetensors", w=np.zeros(2, np.float32), a=np.zeros(1, np.float32)), \
        store("second.safetensors", w=np.ones(2, np.float32))
    result = plan([first, second])
    assert result.names == ["w", "a"] and not result.conflicts
    (override,) = result.overrides
    assert (override.kept, override.replaced) == ("second.safetensors:w", "first.safetensors:w")
    np.testing.assert_array_equal(result.tensors[0].read(), np.ones(2))


def test_each_source_has_its_own_filter():
    from engine.surgery import SourceSpec
    first, second = store("first", x=np.zeros(1, np.float32), y=np.zeros(1, np.float32)), store("second", z=np.ones(1))
    result = plan([first, second], Recipe(sources=(SourceSpec("first", filter=Filter(include=("^x$",))), SourceSpec("second"))))
    assert result.names == ["x", "z"]
    assert result.dropped[0].reason == "source filter: matched no include rule"


def test_two_tensors_on_one_name_are_a_conflict_and_export_refuses(tmp_path):
    result = plan([model()], Recipe(remaps=(RemapRule(r"\.(weight|bias)$", ".p"),)))
    assert [str(c) for c in result.conflicts][0] == "two tensors would be named 'enc.0.p': a:enc.0.weight and a:enc.0.bias"
    with pytest.raises(ExportError, match="enc.0.weight and a:enc.0.bias"):
        result.export(tmp_path / "out.safetensors")
    assert not (tmp_path / "out.safetensors").exists()


def test_casts_apply_to_floats_of_chosen_module_types(tmp_path):
    result = plan([model()], Recipe(casts=(CastRule("F16", ("Linear",)),)))
    dtypes = {t.name: str(t.dtype) for t in result.tensors}
    assert dtypes == {"enc.0.weight": "F16", "enc.0.bias": "F16", "enc.ln.weight": "F32", "enc.ln.bias": "F32",
                      "dec.weight": "F16", "steps": "I64"}
    assert result.tensors[0].operations == ["cast F32 -> F16"]
    with open_store(result.export(tmp_path / "half.safetensors")) as out:
        assert out.entry("enc.0.weight").nbytes == 24
        source = model()
        for name in ("enc.0.weight", "dec.weight"):  # by hand: numpy's own float32 -> float16 rounding
            assert out.read(name).tobytes() == source.read(name).astype(np.float16).tobytes()
        assert out.read("enc.ln.weight").tobytes() == source.read("enc.ln.weight").tobytes()
    assert diff(result, open_store(tmp_path / "half.safetensors")).all_identical


def test_bf16_and_back_to_f32():
    result = plan([model()], Recipe(casts=(CastRule("BF16"), CastRule("F32"))))
    assert result.tensors[0].operations == ["cast F32 -> BF16", "cast BF16 -> F32"]
    assert result.tensors[0].read().dtype == np.float32


@pytest.mark.filterwarnings("ignore:.*weight_norm.*:FutureWarning")
@pytest.mark.parametrize("names", [("fc.weight_g", "fc.weight_v"),
                                   ("fc.parametrizations.weight.original0", "fc.parametrizations.weight.original1")])
def test_weight_norm_is_fused_into_one_weight(names):
    import torch
    from torch import nn
    torch.manual_seed(0)
    layer = nn.utils.parametrizations.weight_norm(nn.Linear(3, 4)) if "parametrizations" in names[0] else \
        torch.nn.utils.weight_norm(nn.Linear(3, 4))
    state = {k: v.detach().numpy() for k, v in layer.state_dict().items()}
    g, v = state[names[0].partition(".")[2]], state[names[1].partition(".")[2]]
    result = plan([store(**{f"fc__{k.replace('.', '__')}": a for k, a in state.items()})],
                  Recipe(adapters=("fuse-weight-norm", "pytorch-to-burn")))
    assert sorted(result.names) == ["fc.bias", "fc.weight"]
    fused = {t.name: t for t in result.tensors}["fc.weight"]
    assert fused.operations[0].startswith("fuse weight norm") and fused.operations[1] == "transpose [4, 3] -> [3, 4]"
    np.testing.assert_allclose(fused.read(), layer.weight.detach().numpy().T, rtol=1e-6)
    np.testing.assert_allclose(fused.read().T, g * v / np.linalg.norm(v, axis=1, keepdims=True), rtol=1e-6)


class QuantizedStore(Store):
    format = "burnpack"

    def __init__(self):
        scheme = {"value": "Q8S", "param": "F32", "store": "Native", "level": "Tensor", "mode": "Symmetric"}
        super().__init__("q.bpk", [TensorEntry("fc.weight", quantized(scheme), (4, 3), 16)])


def test_quantized_tensors_may_be_renamed_but_not_decoded():
    renamed = plan([QuantizedStore()], Recipe(remaps=(RemapRule("fc", "head"),)))
    assert renamed.names == ["head.weight"] and renamed.tensors[0].nbytes == 16
    with pytest.raises(RecipeError, match="'fc.weight' is quantized .*transpose"):
        plan([QuantizedStore()], Recipe(adapters=("pytorch-to-burn",)))


def test_untouched_tensors_stream_their_source_range_and_changed_ones_do_not(tmp_path):
    path = tmp_path / "m.safetensors"
    save_file({"fc.weight": np.ones((4, 3), np.float32), "fc.bias": np.zeros(4, np.float32)}, str(path))
    with open_store(path) as source:
        result = plan([source], Recipe(adapters=("pytorch-to-burn",), remaps=(RemapRule("fc", "out"),)))
        planned = {t.name: t for t in result.tensors}
        weight, bias = planned["out.weight"], planned["out.bias"]
        assert weight.byte_range() is None and bias.byte_range() == source.byte_range("fc.bias")
        assert b"".join(bytes(c) for c in weight.iter_bytes(5)) == np.ones((3, 4), np.float32).tobytes()


def test_export_through_a_plan_then_diff_is_all_identical(tmp_path):
    rng = np.random.default_rng(1)
    source = store(fc__weight=rng.standard_normal((5, 5), dtype=np.float32), norm__weight=np.ones(5, np.float32),
                   norm__bias=np.zeros(5, np.float32), norm__running_mean=np.zeros(5, np.float32),
                   norm__running_var=np.ones(5, np.float32), norm__num_batches_tracked=np.array(7))
    result = plan([source], Recipe(adapters=("pytorch-to-burn",), casts=(CastRule("F16"),)))
    with open_store(result.export(tmp_path / "out.bpk")) as out:
        report = diff(result, out)
        assert report.all_identical and report.summary["identical"] == 6
        assert out.metadata[RECIPE_METADATA_KEY] == result.recipe.digest()
        # the square Linear weight really was transposed, then cast: computed by hand from the source
        expected = np.ascontiguousarray(source.read("fc.weight").T).astype(np.float16)
        assert np.ascontiguousarray(out.read("fc.weight")).tobytes() == expected.tobytes()
        assert out.read("norm.gamma").tobytes() == np.ones(5, np.float16).tobytes()


def test_plan_is_plain_json_for_a_dry_run():
    doc = plan([model()], Recipe(adapters=("pytorch-to-burn",))).to_json()
    assert json.loads(json.dumps(doc))["modules"]["enc.ln"]["kind"] == "LayerNorm"
    assert doc["tensors"][0]["operations"] == ["transpose [4, 3] -> [3, 4]"]


def test_a_template_decides_linear_against_embedding():
    source = store(embed_out__weight=np.zeros((10, 3), np.float32), table__weight=np.zeros((10, 3), np.float32))
    template = store(embed_out__weight=np.zeros((3, 10), np.float32), table__weight=np.zeros((10, 3), np.float32))
    guessed = plan([source], Recipe(adapters=("pytorch-to-burn",)))
    assert {t.name: t.shape for t in guessed.tensors} == {"embed_out.weight": (10, 3), "table.weight": (3, 10)}
    taught = plan([source], Recipe(adapters=("pytorch-to-burn",)), template=template)
    assert {t.name: t.shape for t in taught.tensors} == {"embed_out.weight": (3, 10), "table.weight": (10, 3)}
    assert taught.modules["table"].reason == "the template wants this 2-D weight as it is"
    assert taught.modules["embed_out"].kind == "Linear"


def test_export_of_plan_tensors_goes_through_engine_export(tmp_path):
    result = plan([model()], Recipe(adapters=("pytorch-to-burn",)))
    with open_store(export(result.tensors, tmp_path / "x.safetensors")) as out:
        assert out.entry("enc.ln.gamma").shape == (4,)


def _own(*where) -> Recipe:
    """A recipe whose one source keeps what ``where`` accepts."""
    return Recipe(sources=(SourceSpec("model.safetensors", filter=Filter(where=where)),))


def _outcome(result) -> tuple[list[str], list[tuple[str, str]]]:
    return result.names, [(d.name, d.reason) for d in result.dropped]


def test_a_source_filters_predicates_see_each_tensors_name_dtype_and_shape():
    store = ArrayStore({"a.weight": np.ones((4, 3), np.float32), "a.bias": np.zeros(4, np.float32),
                        "b.weight": np.ones((4, 3), np.float16), "c.weight": np.ones((3, 4), np.float32)})
    recipe = _own(PredicateGroup("and", (Predicate("name", "matches", r"weight$"), Predicate("dtype", "==", "F32"),
                                         Predicate("shape", "==", (4, 3)))))
    assert _outcome(plan([store], recipe)) == (
        ["a.weight"], [("a.bias", "source filter: matched no include rule"),
                       ("b.weight", "source filter: matched no include rule"),
                       ("c.weight", "source filter: matched no include rule")])


def test_a_source_filters_module_predicate_follows_a_module_type_edit_on_the_same_store():
    store = ArrayStore({"fc.weight": np.ones((3, 2), np.float32), "fc.bias": np.zeros(3, np.float32),
                        "proj.weight": np.ones((4, 3), np.float32)})
    recipe = _own(Predicate("module", "==", "Linear"))
    assert _outcome(plan([store], recipe)) == (["fc.weight", "fc.bias", "proj.weight"], [])
    edited = recipe.with_changes(module_overrides={"fc": "Embedding"})
    assert _outcome(plan([store], edited)) == (
        ["proj.weight"], [("fc.weight", "source filter: matched no include rule"),
                          ("fc.bias", "source filter: matched no include rule")])


def test_a_source_filters_module_predicate_calls_a_parametrization_tensor_unknown():
    store = ArrayStore({"m.parametrizations.weight.original0": np.ones((4, 1), np.float32),
                        "m.parametrizations.weight.original1": np.ones((4, 3), np.float32),
                        "fc.weight": np.ones((3, 2), np.float32)})
    assert _outcome(plan([store], _own(Predicate("module", "==", "Unknown")))) == (
        ["m.parametrizations.weight.original0", "m.parametrizations.weight.original1"],
        [("fc.weight", "source filter: matched no include rule")])


def test_a_source_filter_with_a_list_valued_module_predicate_plans_like_a_tuple_valued_one():
    store = ArrayStore({"fc.weight": np.ones((3, 2), np.float32), "fc.bias": np.zeros(3, np.float32),
                        "norm.weight": np.ones(3, np.float32), "norm.bias": np.zeros(3, np.float32)})
    listed = plan([store], _own(Predicate("module", "in", ["LayerNorm", "Embedding"])))
    tupled = plan([store], _own(Predicate("module", "in", ("LayerNorm", "Embedding"))))
    expected = (["norm.weight", "norm.bias"], [("fc.weight", "source filter: matched no include rule"),
                                               ("fc.bias", "source filter: matched no include rule")])
    assert _outcome(listed) == _outcome(tupled) == expected


OUTPUTS = [f"lstm.{gate}_gate.input_transform.weight" for gate in ("input", "forget", "cell", "output")]


def test_a_split_names_its_rows_and_every_output():
    store = ArrayStore({"lstm.weight_ih_l0": np.zeros((8, 3), np.float32),
                        "lstm.weight_hh_l0": np.zeros((8, 2), np.float32)}, name="a.pt")
    tensors = {t.name: t for t in plan([store], Recipe(adapters=("pytorch-to-burn",))).tensors}
    assert tensors[OUTPUTS[1]].operations == [
        f"split LSTM gates: lstm.weight_ih_l0 rows 2:4 -> {', '.join(OUTPUTS)}", "transpose [2, 3] -> [3, 2]"]


def test_fusing_attention_back_names_the_inputs_and_whether_they_were_transposed():
    arrays = {f"attn.{p}.{leaf}": np.ones((4, 4) if leaf == "weight" else (4,), np.float32)
              for p in ("query", "key", "value", "output") for leaf in ("weight", "bias")}
    tensors = {t.name: t for t in plan([ArrayStore(arrays)], Recipe(adapters=("burn-to-pytorch",))).tensors}
    assert tensors["attn.in_proj_weight"].operations == [
        "fuse attention q/k/v: attn.query.weight, attn.key.weight, attn.value.weight transposed and stacked "
        "-> attn.in_proj_weight"]
    assert tensors["attn.in_proj_bias"].operations == [
        "fuse attention q/k/v: attn.query.bias, attn.key.bias, attn.value.bias stacked -> attn.in_proj_bias"]


def test_a_planned_tensor_shows_its_name_dtype_shape_and_where_it_comes_from():
    store = ArrayStore({"fc.weight": np.zeros((3, 2), np.float32), "fc.bias": np.zeros(3, np.float32)}, name="a.pt")
    first = plan([store], Recipe(adapters=("pytorch-to-burn",))).tensors[0]
    assert repr(first) == "<PlannedTensor fc.weight F32 [2, 3] from a.pt:fc.weight>"


def test_filters_that_leave_nothing_name_every_rule():
    store = ArrayStore({"a.weight": np.ones(2, np.float32), "b.weight": np.ones(2, np.float32)}, name="x.safetensors")
    rules = Filter(include=("q",), full_paths=("p.x",), where=(Predicate("ndim", "==", 2),), exclude=("w",))
    assert plan([store], Recipe(filter=rules, remaps=(RemapRule("^a", "c"),))).emptied_by() == (
        "filter (include 'q', path 'p.x', where ndim == 2, exclude 'w') left none of 2 tensor(s) (the recipe's "
        "filter matches names after remaps and adapters, e.g. 'c.weight')")
    own = Recipe(sources=(SourceSpec("x.safetensors", filter=Filter(include=("zz",))),))
    assert plan([store], own).emptied_by() == (
        "source filter of x.safetensors left none of 2 tensor(s) (the recipe's filter matches names after remaps "
        "and adapters, e.g. 'a.weight')")
    assert plan([store], Recipe(filter=Filter(include=("a",)))).emptied_by() is None


def test_export_metadata_is_what_convert_writes():
    store = ArrayStore({"a.weight": np.ones(2, np.float32)}, name="x.safetensors", metadata={"format": "pt", "k": "v"})
    recipe = Recipe(remaps=(RemapRule("a", "b"),), metadata={"m": "1", "k": "mine"})
    assert export_metadata([store], recipe, "burnpack") == {
        "producer": "store-studio", "format": "burnpack", "version": engine.__version__, "m": "1", "k": "mine",
        "store_studio.recipe": recipe.digest(), "memory.format": "pt"}
    assert export_metadata([store], Recipe(clear_metadata=True), "safetensors") == {"producer": "store-studio"}
    assert export_metadata([store], Recipe(), "safetensors") == {"producer": "store-studio", "k": "v",
                                                                 "memory.format": "pt"}


def test_a_fresh_selection_cache_keeps_a_sources_filtered_entries():
    store = ArrayStore({"a.weight": np.ones(2, np.float32), "b.weight": np.ones(2, np.float32)}, name="x.safetensors")
    recipe = Recipe(sources=(SourceSpec("x.safetensors", filter=Filter(exclude=("^a",))),))
    cache = _SelectionCache()
    first = cache.get([store], recipe)
    assert [e.name for e in first.kept[0]] == ["b.weight"] and [d.name for d in first.dropped] == ["a.weight"]
    assert cache.get([store], recipe) is first


def test_a_sources_fields_keep_their_names_within_one_format_and_scalars_only_into_burnpack(tmp_path):
    from safetensors.numpy import save_file
    from engine import export, open_store
    from engine.surgery import carried_metadata
    save_file({"a.weight": np.ones(2, np.float32)}, str(tmp_path / "x.safetensors"), metadata={"format": "pt"})
    export(ArrayStore({"a.weight": np.ones(2, np.float32)}).entries, tmp_path / "x.bpk", scalars={"step": {"Int": 7}})
    with open_store(tmp_path / "x.safetensors") as source:
        assert export_metadata([source], Recipe(), "safetensors") == {"producer": "store-studio", "format": "pt"}
        assert export_metadata([source], Recipe(), "burnpack")["safetensors.format"] == "pt"
    with open_store(tmp_path / "x.bpk") as source:
        assert carried_metadata([source], Recipe(), "burnpack")[1] == {"step": {"Int": 7}}
        assert carried_metadata([source], Recipe(), "safetensors")[1] is None


def test_a_source_filter_and_the_recipes_filter_are_both_named_and_an_empty_name_is_shown_as_it_is():
    store = ArrayStore({"": np.ones(2, np.float32), "b": np.ones(2, np.float32)}, name="x.safetensors")
    assert plan([store], Recipe(filter=Filter(include=("zz",)))).emptied_by() == (
        "filter (include 'zz') left none of 2 tensor(s) (the recipe's filter matches names after remaps and "
        "adapters, e.g. '')")
    both = Recipe(sources=(SourceSpec("x.safetensors", filter=Filter(exclude=("^b",))),), filter=Filter(include=("zz",)))
    assert plan([store], both).emptied_by().startswith("source filter of x.safetensors and filter (include 'zz') left")


def test_an_empty_transposed_tensor_streams_no_bytes():
    store = ArrayStore({"fc.weight": np.zeros((0, 3), np.float32), "fc.bias": np.zeros(0, np.float32)})
    weight = plan([store], Recipe(adapters=("pytorch-to-burn",))).tensors[0]
    assert weight.operations == ["transpose [0, 3] -> [3, 0]"] and b"".join(map(bytes, weight.iter_bytes())) == b""


def test_a_plan_exports_in_the_format_asked_refuses_to_overwrite_and_names_every_conflict(tmp_path):
    from engine import ExportError, open_store
    store = ArrayStore({"a.weight": np.ones(2, np.float32), "b.weight": np.zeros(2, np.float32),
                        "c.weight": np.zeros(2, np.float32)}, name="m")
    written = plan([store], Recipe()).export(tmp_path / "out.bin", "safetensors")
    with open_store(written) as out:  # opened by its bytes: the name says .bin
        assert out.format == "safetensors"
        assert [e.name for e in out.entries] == ["a.weight", "b.weight", "c.weight"]
        assert "store_studio.recipe" not in out.metadata  # a recipe that changes nothing records no digest
    with pytest.raises(ExportError, match="exists"):
        plan([store], Recipe()).export(tmp_path / "out.bin", "safetensors")
    clash = plan([store], Recipe(remaps=(RemapRule("^[bc]", "a"),)))
    with pytest.raises(ExportError) as refused:
        clash.export(tmp_path / "clash.safetensors")
    assert str(refused.value) == ("clash.safetensors: two tensors would be named 'a.weight': m:a.weight and m:b.weight; "
                                  "two tensors would be named 'a.weight': m:a.weight and m:c.weight")


def test_a_plans_export_passes_on_scalars_overwrite_progress_cancel_burn_version_and_dequantize(tmp_path):
    import sys
    from pathlib import Path
    from engine import ExportError, open_store
    from engine.burn_versions import BurnVersion
    from tests.helpers.formats_quantized_files import f32, gen2, i8, read_meta, write
    store = ArrayStore({"on": np.array([True, False]), "w": np.ones(2, np.float32)}, name="m")
    dest = tmp_path / "out.bpk"
    dest.write_bytes(b"old")
    seen: list[tuple[int, int]] = []
    written = plan([store], Recipe()).export(dest, metadata={"k": "v"}, scalars={"step": {"Int": 7}}, overwrite=True,
                                             progress=lambda done, total: seen.append((done, total)),
                                             burn_version=BurnVersion.V0_20)
    with open_store(written) as out:
        assert out.scalars == {"step": {"Int": 7}} and out.read("on").tolist() == [True, False]
        assert out.metadata["k"] == "v"
    assert seen[-1] == (10, 10)
    assert read_meta(written)["tensors"]["on"]["dtype"] == "Bool"  # Burn 0.20's spelling (0.21 on: {"Bool": ...})
    with pytest.raises(ExportError, match="cancel"):
        plan([store], Recipe()).export(tmp_path / "stopped.bpk", cancel=lambda: True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bpk"]
    source = write(tmp_path, {"q": ({"QFloat": gen2(blocks=(8,))}, [16], i8(*range(-8, 8)) + f32(0.5, 0.25))})
    with open_store(source) as quantized:
        out = plan([quantized], Recipe()).export(tmp_path / "plain.safetensors", dequantize=True)
    with open_store(out) as plain:
        assert plain.read("q").dtype == np.float32


def test_the_dry_run_document_names_every_field_of_each_tensor():
    store = ArrayStore({"fc.weight": np.zeros((3, 2), np.float32), "fc.bias": np.zeros(3, np.float32)}, name="a.pt")
    tensors = plan([store], Recipe(adapters=("pytorch-to-burn",))).to_json()["tensors"]
    assert tensors[0] == {"name": "fc.weight", "source": "a.pt", "source_name": "fc.weight", "dtype": "F32",
                          "shape": [2, 3], "module": "Linear", "operations": ["transpose [3, 2] -> [2, 3]"]}


def test_a_plan_as_data_holds_every_part_under_its_key() -> None:
    result = plan([ArrayStore({"fc.weight": np.ones((3, 2), np.float32)})], Recipe(adapters=("pytorch-to-burn",)))
    reason = "2-D weight without bias, and the name 'fc' says nothing"
    assert result.to_json() == {
        "tensors": [{"name": "fc.weight", "source": "<memory>", "source_name": "fc.weight", "dtype": "F32",
                     "shape": [2, 3], "module": "Linear", "operations": ["transpose [3, 2] -> [2, 3]"]}],
        "dropped": [], "conflicts": [], "overrides": [],
        "modules": {"fc": {"kind": "Linear", "reason": reason, "overridden": False, "guessed": True}},
        "rule_hits": [],
        "guesses": [{"name": "fc.weight", "source_name": "fc.weight", "module": "fc", "kind": "Linear",
                     "decision": "Linear: transposed", "reason": reason,
                     "settle": "--module fc=Linear or --module fc=Embedding", "alternatives": ["Linear", "Embedding"]}]}


def test_a_later_source_overriding_a_name_is_listed_in_the_plans_data() -> None:
    first = ArrayStore({"w": np.ones(2, np.float32)}, name="a.safetensors")
    later = ArrayStore({"w": np.zeros(2, np.float32)}, name="b.safetensors")
    assert plan([first, later], Recipe()).to_json()["overrides"] == [
        {"name": "w", "kept": "b.safetensors:w", "replaced": "a.safetensors:w", "replaced_source": "a.safetensors",
         "replaced_name": "w"}]
