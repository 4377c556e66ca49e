"""What a source's own filter keeps, as ``plan`` reports it, in the cases session 9's mutation run of
engine/surgery/plan.py (``_select``, ``_select_all``, ``_SelectionCache.get``) showed no test checked.

Promises (README, section) -> tests:
- "### Surgery", Order of operations, 1. (a source's own filter, on the names as the file writes them): its
  predicates see each tensor's own name, dtype and shape ->
  test_a_source_filters_predicates_see_each_tensors_name_dtype_and_shape; its module predicates see the inferred
  kinds, and a ``--module PATH=TYPE`` edit on the same open file re-selects by the new kind ->
  test_a_source_filters_module_predicate_follows_a_module_type_edit_on_the_same_store; a tensor whose module path
  has no kind of its own (a weight-norm parametrization, folded onto its module) is of module "Unknown" ->
  test_a_source_filters_module_predicate_calls_a_parametrization_tensor_unknown
- "### Surgery", Order of operations, 1.: a predicate holding a list (made in code, as ``Predicate`` allows) is
  applied like any other, module kinds and all ->
  test_a_source_filter_with_a_list_valued_module_predicate_plans_like_a_tuple_valued_one
"""

from __future__ import annotations

import numpy as np

from engine import ArrayStore
from engine.surgery import Filter, Predicate, PredicateGroup, Recipe, SourceSpec, plan


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
