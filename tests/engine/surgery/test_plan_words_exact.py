"""Words and metadata of a plan that session 6's mutation run of engine/surgery/plan.py and ops.py (issue 25)
showed no in-process test checked, each asserted through ``plan`` on real names and shapes.

Promise -> test:
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


import numpy as np
import pytest

import engine
from engine import ArrayStore
from engine.surgery import Filter, Predicate, Recipe, RemapRule, SourceSpec, export_metadata, plan
from engine.surgery.plan import _SelectionCache

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
