"""Plans: filters, remaps, merges, conflicts, casts, weight-norm fusion and laziness, on real stores."""

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import ArrayStore, ExportError, RecipeError, export, open_store
from engine.dtypes import quantized
from engine.store import Store, TensorEntry
from engine.surgery import CastRule, Filter, Predicate, PredicateGroup, Recipe, RemapRule, diff, plan
from engine.surgery.plan import RECIPE_METADATA_KEY


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
