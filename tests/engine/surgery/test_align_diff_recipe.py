"""Template alignment (the offline LoadResult), value diffs, recipe documents and their printed forms."""

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import ArrayStore, RecipeError, open_store
from engine.surgery import CastRule, Filter, Predicate, Recipe, RemapRule, SourceSpec, align, diff
from engine.surgery.align import closest_names
from engine.surgery.printers import as_cli, as_rust


def arrays(**named):
    return ArrayStore({k.replace("__", "."): v for k, v in named.items()})


# --- alignment ------------------------------------------------------------------------------

def test_alignment_reports_applied_mismatches_missing_unused_and_suggestions():
    source = arrays(enc__fc__weight=np.zeros((4, 3), np.float32), enc__norm__weight=np.zeros(4, np.float16),
                    dec__out__weight=np.zeros((2, 2), np.float32), extra=np.zeros(1, np.float32))
    template = arrays(enc__fc__weight=np.zeros((3, 4), np.float32), enc__norm__weight=np.zeros(4, np.float32),
                      dec__output__weight=np.zeros((2, 2), np.float32))
    report = align(source, template)
    assert report.applied == ["enc.norm.weight"]
    (mismatch,) = report.shape_mismatches
    assert mismatch.matches_if_transposed and mismatch.template_shape == (3, 4)
    assert [(d.name, d.source_dtype, d.template_dtype) for d in report.dtype_differences] == [("enc.norm.weight", "F16", "F32")]
    assert report.missing == ["dec.output.weight"] and report.unused == ["dec.out.weight", "extra"]
    assert report.suggestions == {"dec.output.weight": ["dec.out.weight"]}
    assert not report.ok and any("matches if transposed" in line for line in report.lines())


def test_alignment_matches_through_an_enum_variant_segment_of_the_template():
    report = align(arrays(feature__weight=np.zeros(2, np.float32)), arrays(feature__BaseConv__weight=np.zeros(2, np.float32)))
    assert report.ok and report.through_variants == {"feature.BaseConv.weight": "feature.weight"}


def test_closest_names_scale_to_ten_thousand_names():
    available = [f"layers.{i}.attn.{p}.weight" for i in range(2500) for p in ("q", "k", "v", "o")]
    wanted = [f"layers.{i}.attention.{p}.weight" for i in range(0, 2500, 25) for p in ("q", "k")]
    found = closest_names(wanted, available)
    assert found["layers.100.attention.q.weight"][0] == "layers.100.attn.q.weight"
    assert closest_names(["l.0.attn.q.weight"], ["l.0.attn.k_proj.weight", "l.0.attn.q_proj.weight"])["l.0.attn.q.weight"][0] \
        == "l.0.attn.q_proj.weight"


# --- diff -------------------------------------------------------------------------------------

def test_diff_statuses_and_value_statistics(tmp_path):
    a = {"same": np.arange(6, dtype=np.float32), "near": np.ones(3, np.float32), "far": np.zeros(2, np.float32),
         "ints": np.array([1, 2, 3]), "shape": np.zeros(3, np.float32), "kind": np.zeros(2, np.float32),
         "mine": np.zeros(1, np.float32), "nan": np.array([np.nan, 1.0], np.float32)}
    b = {"same": np.arange(6, dtype=np.float32), "near": np.ones(3, np.float32) + 1e-7, "far": np.array([1.0, 3.0], np.float32),
         "ints": np.array([1, 2, 4]), "shape": np.zeros(4, np.float32), "kind": np.zeros(2, np.float16),
         "theirs": np.zeros(1, np.float32), "nan": np.array([np.nan, 1.0], np.float32)}
    save_file(a, str(tmp_path / "a.safetensors"))
    save_file(b, str(tmp_path / "b.safetensors"))
    with open_store(tmp_path / "a.safetensors") as sa, open_store(tmp_path / "b.safetensors") as sb:
        report = diff(sa, sb, chunk_elements=2)
    by = {t.name: t for t in report.tensors}
    assert {n: t.status for n, t in by.items()} == {
        "far": "different", "ints": "different", "kind": "dtype_mismatch", "mine": "only_in_a", "nan": "identical",
        "near": "different", "same": "identical", "shape": "shape_mismatch", "theirs": "only_in_b"}
    assert by["far"].max_abs == 3.0 and by["far"].mean_abs == 2.0 and by["far"].allclose is False
    assert by["near"].allclose is True and by["near"].max_abs < 1e-6
    assert by["ints"].max_abs == 1.0 and by["kind"].allclose is True
    assert report.summary == {"identical": 2, "different": 3, "only_in_a": 1, "only_in_b": 1, "shape_mismatch": 1,
                              "dtype_mismatch": 1, "total": 9}


def test_diff_without_values_still_tells_identical_from_different():
    report = diff(arrays(x=np.zeros(3), y=np.ones(2)), arrays(x=np.zeros(3), y=np.zeros(2)), values=False)
    assert [(t.status, t.max_abs) for t in report.tensors] == [("identical", None), ("different", None)]


# --- recipes ----------------------------------------------------------------------------------

FULL = Recipe(sources=(SourceSpec("model.pt", "state_dict", Filter(exclude=("optimizer",))), SourceSpec("extra.safetensors")),
              filter=Filter(include=(r"^enc",), where=(Predicate("ndim", ">=", 1),), exclude=("num_batches_tracked",)),
              remaps=(RemapRule(r"^enc\.(\d+)", "encoder.$1"),), adapters=("pytorch-to-burn", "contiguous-indices"),
              casts=(CastRule("F16", ("Linear",)),), module_overrides={"encoder.0": "Linear"}, top_level_key="state_dict",
              metadata={"note": "x"}, allow_partial=True)


def test_a_recipe_survives_save_and_load_with_the_same_digest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # FULL's relative paths lie under the recipe's folder: they stay relative
    FULL.save("r.json")
    loaded = Recipe.load("r.json")
    assert loaded.to_json() == FULL.to_json() and loaded.digest() == FULL.digest() and len(FULL.digest()) == 16
    assert json.loads((tmp_path / "r.json").read_text())["version"] == 1
    assert Recipe().digest() != FULL.digest()


@pytest.mark.parametrize("doc,message", [
    ({}, "'version' is missing"),
    ({"version": 2}, "'version' is 2"),
    ({"version": 1, "remap": []}, "unknown field.*remap"),
    ({"version": 1, "remaps": [["(", "x"]]}, r"remap rule 1 \('\('"),
    ({"version": 1, "remaps": ["a"]}, r"remaps\[0\]"),
    ({"version": 1, "adapters": ["to-jax"]}, "unknown adapter 'to-jax'"),
    ({"version": 1, "casts": [{"to": "F8"}]}, r"casts\[0\]"),
    ({"version": 1, "filter": {"where": [{"field": "size", "op": "==", "value": 1}]}}, r"filter.where\[0\].*'size'"),
    ({"version": 1, "sources": [{"file": "x"}]}, r"sources\[0\]"),
    ({"version": 1, "module_overrides": {"fc": "Dense"}}, "'fc'.*'Dense'"),
    ({"version": 1, "top_level_key": 3}, "'top_level_key'"),
])
def test_bad_recipe_documents_name_the_field(tmp_path, doc, message):
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(RecipeError, match=message):
        Recipe.load(tmp_path / "bad.json")


def test_a_recipe_that_is_not_json_names_the_file(tmp_path):
    (tmp_path / "r.json").write_text("{nope")
    with pytest.raises(RecipeError, match="r.json: not a JSON recipe"):
        Recipe.load(tmp_path / "r.json")


def test_recipe_prints_as_a_convert_command():
    simple = Recipe(sources=(SourceSpec("a.pt"),), remaps=(RemapRule(r"conv\.(.*)", "$1"),), adapters=("pytorch-to-burn",),
                    casts=(CastRule("BF16"),), top_level_key="model")
    assert as_cli(simple, "out.bpk") == (r"store-studio convert a.pt out.bpk --top-level-key model --remap 'conv\.(.*)' '$1' "
                                         "--adapter pytorch-to-burn --cast bf16")
    assert "need --recipe FILE" in as_cli(FULL)


def test_recipe_prints_as_the_burn_store_builder_chain():
    rust = as_rust(FULL)
    assert rust.startswith("// burn-store 0.22.0-pre.2 (Burn 0.22)\nuse burn_store::{")
    assert 'let mut store = PytorchStore::from_file(r"model.pt")\n    .with_top_level_key(r"state_dict")' in rust
    assert '.with_key_remapping(r"^enc\\.(\\d+)", r"encoder.${1}")' in rust  # references always braced
    assert ".allow_partial(true);" in rust and "model.load_from(&mut store)?" in rust
    assert 'SafetensorsStore::from_file(r"extra.safetensors")' in rust
    assert '.with_from_adapter(PyTorchToBurnAdapter.chain(HalfPrecisionAdapter::new().without_module("Embedding")' in rust
    assert ".map_indices_contiguous(true)" in rust  # SafetensorsStore does not renumber by default
    assert "// left to do: HalfPrecisionAdapter::new()" in rust  # PytorchStore takes no adapter for the cast
    assert '!(regex::Regex::new(r"num_batches_tracked").unwrap().is_match(path))' in rust


def test_python_group_references_print_as_rust_ones():
    assert 'r"${1}.x"' in as_rust(Recipe(remaps=(RemapRule("(a)", r"\1.x"),)))
