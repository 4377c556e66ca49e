"""Re-planning after an edit, and what a plan's tensors hold, each asserted through ``plan`` on real stores: a user
editing a recipe must get what a fresh plan of it gives, never a stale cached result.

Promises (README, section) -> tests:
- "## Performance", Re-planning after an edit (each result kept by its inputs, an edit re-runs only the stages after
  it; a property test compares every step with a plan from scratch): a filter whose predicate holds a list cannot
  be kept by its inputs, and an edit between two such filters still plans as from scratch ->
  test_an_edit_between_two_filters_holding_lists_plans_as_from_scratch; a script that re-plans edits ends when
  it is done -> test_a_script_that_re_plans_edits_ends_when_it_is_done
- "## The workbench", Remap (each rule with its hit count): with no source open every rule reads 0 hits ->
  test_with_no_sources_every_remap_rule_is_listed_with_no_hits
- "**Validation.**" and "### Surgery" (a template lends enum variants): the names a template spells with enum
  variants are taken without any PyTorch/Burn adapter too ->
  test_a_template_alone_gives_tensors_its_enum_variant_names
- "## The workbench", Adapters (the inferred module types listed, a type overridden by double-click): a type the
  user set is listed under its module's path -> test_a_module_type_the_user_set_is_listed_under_its_path
- "## The workbench", Preview (each tensor's module type): a weight-norm parametrization's tensor belongs to no
  module of its own path and reads "Unknown" -> test_a_parametrization_tensor_without_a_module_of_its_own_reads_unknown
- engine.surgery's ``PlannedTensor`` (a public ``TensorSource``, built from sequences): it holds its own copy of
  its inputs and operations, so the lists it was built from may be reused ->
  test_a_planned_tensor_built_from_lists_keeps_what_it_was_given
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine import ArrayStore, export, open_store
from engine.dtypes import F32
from engine.surgery import Filter, PlannedTensor, Predicate, Recipe, RemapRule, plan
from engine.surgery.ops import Transpose
from engine.surgery.plan import StageCache

ROOT = Path(__file__).parents[3]


def outcome(result) -> object:
    return result.to_json(), [(t.name, t.operations, t.source_name) for t in result.tensors]


def test_an_edit_between_two_filters_holding_lists_plans_as_from_scratch():
    """``shape == [4, 3]`` holds a list, so the filter cannot be a key: each plan filters anew, and the second
    keeps the tensor its own predicate names (and counts its own hits), not the first one's."""
    store = ArrayStore({"a.weight": np.ones((4, 3), np.float32), "b.weight": np.ones((2, 2), np.float32)})
    first = Recipe(filter=Filter(where=(Predicate("shape", "==", [4, 3]),)))
    second = Recipe(filter=Filter(where=(Predicate("shape", "==", [2, 2]),)))
    cache = StageCache()
    assert plan([store], first, cache=cache).names == ["a.weight"]
    edited = plan([store], second, cache=cache)
    assert edited.names == ["b.weight"]
    assert [d.name for d in edited.dropped] == ["a.weight"]
    assert [h.to_json() for h in edited.rule_hits] == [
        {"kind": "where", "index": 0, "pattern": "shape == [2, 2]", "count": 1, "rule": "where shape == [2, 2]"}]
    assert outcome(edited) == outcome(plan([store], second, cache=StageCache()))


def test_with_no_sources_every_remap_rule_is_listed_with_no_hits():
    recipe = Recipe(remaps=(RemapRule(r"^blocks\.", "layers."), RemapRule("norm", "ln")))
    result = plan([], recipe, cache=StageCache())
    assert result.tensors == [] and result.dropped == []
    assert [h.to_json() for h in result.rule_hits] == [
        {"kind": "remap", "index": 0, "pattern": r"^blocks\.", "replacement": "layers.", "count": 0,
         "rule": r"remap '^blocks\.' -> 'layers.'"},
        {"kind": "remap", "index": 1, "pattern": "norm", "replacement": "ln", "count": 0, "rule": "remap 'norm' -> 'ln'"}]


def test_a_template_alone_gives_tensors_its_enum_variant_names():
    """No adapter, only a template whose ``feature.BaseConv.weight`` the source writes as ``feature.weight``."""
    weight = np.arange(12, dtype=np.float32).reshape(4, 3)
    source = ArrayStore({"feature.weight": weight, "head.bias": np.zeros(2, np.float32)})
    template = ArrayStore({"feature.BaseConv.weight": np.zeros((4, 3), np.float32), "head.bias": np.zeros(2, np.float32)})
    result = plan([source], Recipe(), template=template, cache=StageCache())
    assert result.names == ["feature.BaseConv.weight", "head.bias"]
    renamed = result.tensors[0]
    assert renamed.source_name == "feature.weight"
    assert renamed.operations == ["rename feature.weight -> feature.BaseConv.weight (template enum variant)"]
    np.testing.assert_array_equal(renamed.read(), weight)


def test_a_module_type_the_user_set_is_listed_under_its_path():
    store = ArrayStore({"enc.fc.weight": np.ones((4, 3), np.float32), "enc.fc.bias": np.zeros(4, np.float32)})
    result = plan([store], Recipe(module_overrides={"enc.fc": "Embedding"}), cache=StageCache())
    guess = result.modules["enc.fc"]
    assert (guess.path, guess.kind, guess.reason, guess.overridden) == ("enc.fc", "Embedding", "set by user", True)
    assert [t.module for t in result.tensors] == ["Embedding", "Embedding"]


def test_a_parametrization_tensor_without_a_module_of_its_own_reads_unknown():
    """``m.parametrizations.weight.original0/1`` fold onto module ``m``; their own path
    ``m.parametrizations.weight`` has no type, so (without ``--fuse-weight-norm``) they read "Unknown"."""
    store = ArrayStore({"m.parametrizations.weight.original0": np.ones((4, 1), np.float32),
                        "m.parametrizations.weight.original1": np.ones((4, 3), np.float32),
                        "m.bias": np.zeros(4, np.float32)})
    result = plan([store], Recipe(), cache=StageCache())
    assert [(t["name"], t["module"]) for t in result.to_json()["tensors"]] == [
        ("m.parametrizations.weight.original0", "Unknown"), ("m.parametrizations.weight.original1", "Unknown"),
        ("m.bias", result.modules["m"].kind)]


def test_a_planned_tensor_built_from_lists_keeps_what_it_was_given(tmp_path):
    """Built from a list of inputs and an empty list of operations, then those lists reused for something
    else: the tensor still reads, describes and exports its own input, untouched."""
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    store = ArrayStore({"a": values, "b": np.full((2, 3), 7, np.float32)})
    a, b = store.entries
    inputs, ops = [a], []
    tensor = PlannedTensor("out", F32, (2, 3), inputs, ops, "memory", "Unknown")
    inputs[0] = b
    ops.append((Transpose, (2, 3)))
    assert tensor.source_name == "a" and tensor.operations == [] and tensor.shape == (2, 3)
    np.testing.assert_array_equal(tensor.read(), values)
    dest = export([tensor], tmp_path / "out.safetensors")
    with open_store(dest) as written:
        assert written.names == ["out"]
        np.testing.assert_array_equal(written.read("out"), values)


SCRIPT = """
import numpy as np
from engine import ArrayStore
from engine.surgery import Recipe, RemapRule, plan
from engine.surgery.plan import StageCache
store, cache = ArrayStore({"fc.weight": np.ones((2, 3), np.float32)}), StageCache()
for k in range(StageCache.SIZE + 2):
    print(plan([store], Recipe(remaps=(RemapRule("^fc", f"layer{k}"),)), cache=cache).names[0])
"""


@pytest.mark.child
def test_a_script_that_re_plans_edits_ends_when_it_is_done():
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [f"layer{k}.weight" for k in range(6)]
