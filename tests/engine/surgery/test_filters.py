"""The filter's rules, exactly as README "Model surgery" and burn-store's ``PathFilter`` promise them:
includes OR-ed and searched anywhere in a name, exact paths, predicates on a tensor's facts, exclusions after,
the first exclusion that matches naming the reason; a recipe's filter read from JSON refuses what it cannot mean.

Promises -> tests:
- each predicate operator (==, !=, <, <=, >, >=, contains, matches, in) on each fact -> ``test_each_operator_on_each_fact``
- a predicate that cannot compare is one line naming it -> ``test_a_predicate_that_cannot_compare_names_itself``
- ``and``/``or`` groups -> ``test_groups_combine_with_and_or``
- the counts a window's rule rows show, per rule, merged over sources -> ``test_rule_counts_in_rule_order``
- verdicts name the rule -> ``test_verdicts_name_the_first_rule_that_drops``
- a recipe's filter JSON: unknown fields, wrong types and bad predicates refused by path -> ``test_filter_json_refusals``
"""

from __future__ import annotations

import numpy as np
import pytest
from engine import ArrayStore
from engine.errors import RecipeError
from engine.surgery import Filter, Recipe
from engine.surgery.filters import Predicate, PredicateGroup, RuleHits, facts
from engine.surgery.plan import plan

W = facts("enc.fc.weight", "F32", (4, 3), "Linear")
B = facts("enc.fc.bias", "F16", (4,), "Linear")
S = facts("step", "I64", (), "Unknown")


def test_facts_are_what_predicates_ask_about():
    assert W == {"name": "enc.fc.weight", "dtype": "F32", "ndim": 2, "shape": [4, 3], "numel": 12, "module": "Linear"}
    assert S["numel"] == 1 and S["ndim"] == 0 and S["shape"] == []
    assert facts("x", "F32", (2, 0, 5))["numel"] == 0
    assert facts("x", "F32", (3,))["module"] == "Unknown"


@pytest.mark.parametrize("field, op, value, accepted", [
    ("ndim", "==", 2, [True, False, False]),
    ("ndim", "!=", 2, [False, True, True]),
    ("numel", "<", 4, [False, False, True]),
    ("numel", "<=", 4, [False, True, True]),
    ("numel", ">", 4, [True, False, False]),
    ("numel", ">=", 4, [True, True, False]),
    ("name", "contains", "fc", [True, True, False]),
    ("shape", "contains", 3, [True, False, False]),
    ("name", "matches", r"b\w+s$", [False, True, False]),
    ("name", "matches", "^step", [False, False, True]),
    ("dtype", "in", ("F16", "I64"), [False, True, True]),
    ("module", "in", ["Linear"], [True, True, False]),
    ("shape", "==", (4,), [False, True, False]),  # a tuple value compares as the list a shape is
    ("dtype", "==", "F32", [True, False, False]),
])
def test_each_operator_on_each_fact(field, op, value, accepted):
    predicate = Predicate(field, op, value)
    assert [predicate.accepts(f) for f in (W, B, S)] == accepted


def test_a_predicate_that_cannot_compare_names_itself():
    with pytest.raises(RecipeError) as error:
        Predicate("name", "<", 3).accepts(W)
    assert str(error.value) == "predicate name < 3: cannot compare name 'enc.fc.weight' with 3"
    with pytest.raises(RecipeError) as error:
        Predicate("ndim", "contains", 2).accepts(W)
    assert str(error.value) == "predicate ndim contains 2: cannot compare ndim 2 with 2"


@pytest.mark.parametrize("make, says", [
    (lambda: Predicate("colour", "==", 1), "predicate colour == 1: unknown field 'colour' (one of name, dtype, ndim, "
                                           "shape, numel, module)"),
    (lambda: Predicate("ndim", "~", 1), "predicate ndim ~ 1: unknown operator '~' (one of ==, !=, <, <=, >, >=, "
                                        "contains, matches, in)"),
    (lambda: Predicate("dtype", "in", "F32"), "predicate dtype in 'F32': 'in' wants a list of values"),
    (lambda: Predicate("name", "matches", "(a"), "predicate name matches '(a': invalid regex '(a': unclosed group "
                                                 "at position 0"),
    (lambda: Predicate("name", "matches", "(?<=a)b"), "predicate name matches '(?<=a)b': invalid regex '(?<=a)b': "
                                                      "look-around ((?=, (?!, (?<=, (?<!) is not supported by Rust's "
                                                      "regex at position 0"),
    (lambda: PredicateGroup("xor", ()), "predicate group: combine must be 'and' or 'or', not 'xor'"),
])
def test_a_bad_predicate_is_refused_naming_it(make, says):
    with pytest.raises(RecipeError) as error:
        make()
    assert str(error.value) == says


def test_a_bad_include_or_exclude_names_its_rule_by_number():
    with pytest.raises(RecipeError) as error:
        Filter(include=("a", "("))
    assert str(error.value) == "include rule 2: invalid regex '(': unclosed group at position 0"
    with pytest.raises(RecipeError) as error:
        Filter(exclude=("[",))
    assert str(error.value) == "exclude rule 1: invalid regex '[': unclosed class at position 0"


def test_groups_combine_with_and_or():
    two_d, linear, f16 = Predicate("ndim", "==", 2), Predicate("module", "==", "Linear"), Predicate("dtype", "==", "F16")
    both = PredicateGroup("and", (two_d, linear))
    either = PredicateGroup("or", (two_d, f16))
    assert [both.accepts(f) for f in (W, B, S)] == [True, False, False]
    assert [either.accepts(f) for f in (W, B, S)] == [True, True, False]
    nested = PredicateGroup("and", (either, PredicateGroup("or", (linear,))))
    assert nested.label == "((ndim == 2 or dtype == 'F16') and (module == 'Linear'))"
    assert [nested.accepts(f) for f in (W, B, S)] == [True, True, False]


def test_verdicts_name_the_first_rule_that_drops():
    f = Filter(include=("fc",), full_paths=("step",), exclude=("bias$", "enc"))
    names = ["enc.fc.weight", "enc.fc.bias", "step", "head.weight"]
    expected = ["excluded by rule 2 ('enc')", "excluded by rule 1 ('bias$')", None, "matched no include rule"]
    assert [f.verdict(n) for n in names] == expected
    verdicts, counts = f.judge(names)
    assert verdicts == expected and counts == (2, 1, 1, 2)
    only_excludes = Filter(exclude=("^step$",))
    assert only_excludes.judge(names) == ([None, None, "excluded by rule 1 ('^step$')", None], (1,))
    assert Filter().judge(names) == ([None] * 4, ())
    assert Filter(include=("weight", "step")).judge(names) == ([None, "matched no include rule", None, None], (2, 1))
    assert Filter(full_paths=("step", "gone")).judge(names)[1] == (1, 0)
    where = Filter(where=(Predicate("ndim", "==", 1),))
    assert where.verdict("enc.fc.bias", B) is None and where.verdict("x", W) == "matched no include rule"
    with pytest.raises(ValueError, match="^judge is for filters without predicates: they need each tensor's facts$"):
        where.judge(names)


def test_rule_counts_in_rule_order():
    f = Filter(include=("fc",), full_paths=("step", "gone"), where=(Predicate("ndim", "==", 1),), exclude=("bias",))
    names = ["enc.fc.weight", "enc.fc.bias", "step"]
    hits = f.rule_hits(names, [W, B, S])
    assert [(h.kind, h.index, h.pattern, h.count) for h in hits] == [
        ("include", 0, "fc", 2), ("path", 0, "step", 1), ("path", 1, "gone", 0), ("where", 0, "ndim == 1", 1),
        ("exclude", 0, "bias", 1)]
    assert [h.rule for h in hits] == ["include 'fc'", "path 'step'", "path 'gone'", "where ndim == 1",
                                      "exclude 'bias'"]
    assert f.merged_counts([(2, 1, 0, 1, 1), (3, 1, 1, 0, 2)]) == [5, 1, 1, 1, 3]
    remap = RuleHits.remap(2, type("Rule", (), {"pattern": "^a", "replacement": "b"})(), 7)
    assert remap.rule == "remap '^a' -> 'b'"
    assert remap.to_json() == {"kind": "remap", "index": 2, "pattern": "^a", "replacement": "b", "count": 7,
                               "rule": "remap '^a' -> 'b'"}
    assert hits[0].to_json() == {"kind": "include", "index": 0, "pattern": "fc", "count": 2, "rule": "include 'fc'"}


def test_a_plan_counts_and_drops_by_the_same_rules():
    source = ArrayStore({"enc.fc.weight": np.ones((4, 3), np.float32), "enc.fc.bias": np.ones(4, np.float16),
                         "step": np.array(3, np.int64)})
    result = plan([source], Recipe(filter=Filter(where=(Predicate("module", "==", "Linear"),), exclude=("bias",))))
    assert [t.name for t in result.tensors] == ["enc.fc.weight"]
    assert [(d.name, d.reason) for d in result.dropped] == [("enc.fc.bias", "filter: excluded by rule 1 ('bias')"),
                                                           ("step", "filter: matched no include rule")]
    assert Filter(where=(Predicate("module", "==", "Linear"),)).needs_modules()
    assert Filter(where=(PredicateGroup("or", (Predicate("ndim", "==", 1), Predicate("module", "in", ("Linear",)))),)
                  ).needs_modules()
    assert not Filter(where=(Predicate("ndim", "==", 1),), include=("module",)).needs_modules()


def test_filter_json_round_trips_and_leaves_out_empty_parts():
    f = Filter(include=("a",), full_paths=("b",), where=(PredicateGroup("or", (Predicate("dtype", "in", ("F16",)),
                                                                                 Predicate("ndim", ">", 1))),),
               exclude=("c",))
    doc = f.to_json()
    assert doc == {"include": ["a"], "full_paths": ["b"], "where": [{"or": [
        {"field": "dtype", "op": "in", "value": ["F16"]}, {"field": "ndim", "op": ">", "value": 1}]}], "exclude": ["c"]}
    assert Filter.from_json(doc) == f
    assert Filter().to_json() == {} and Filter.from_json(None) == Filter() and Filter().is_empty
    assert not Filter(exclude=("x",)).is_empty and Filter.from_json({"exclude": ["x"]}).to_json() == {"exclude": ["x"]}
    listed = Filter.from_json({"where": [{"field": "shape", "op": "==", "value": [4, 3]}]})
    assert listed.where[0].value == [4, 3] and listed.where[0].accepts(W)


@pytest.mark.parametrize("doc, says", [
    ([], "filter: must be an object"),
    ({"include": ["a"], "colour": 1, "alpha": 2}, "filter: unknown field(s) alpha, colour"),
    ({"include": "a"}, "filter.include: must be a list"),
    ({"exclude": [1]}, "filter.exclude: must be a list of strings"),
    ({"full_paths": [None]}, "filter.full_paths: must be a list of strings"),
    ({"where": {"field": "ndim"}}, "filter.where: must be a list"),
    ({"where": [{"field": "ndim", "op": "=="}]},
     'filter.where[0]: a predicate is {"field", "op", "value"} or {"and"|"or": [...]}'),
    ({"where": [{"and": [{"field": "ndim", "op": "==", "value": 1}, {"or": 3}]}]}, "filter.where[0].and[1].or: must be a list"),
    ({"where": [{"or": [{"field": "size", "op": "==", "value": 1}]}]},
     "filter.where[0].or[0]: predicate size == 1: unknown field 'size' (one of name, dtype, ndim, shape, numel, module)"),
    ({"where": [{"and": [], "or": []}]}, 'filter.where[0]: a predicate is {"field", "op", "value"} or {"and"|"or": [...]}'),
    ({"where": ["ndim == 2"]}, 'filter.where[0]: a predicate is {"field", "op", "value"} or {"and"|"or": [...]}'),
])
def test_filter_json_refusals(doc, says):
    with pytest.raises(RecipeError) as error:
        Filter.from_json(doc)
    assert str(error.value) == says


def test_an_in_predicate_from_json_reads_its_list():
    rule = Filter.from_json({"where": [{"field": "dtype", "op": "in", "value": ["F16", "I64"]}]}).where[0]
    assert rule.value == ("F16", "I64") and [rule.accepts(f) for f in (W, B, S)] == [False, True, True]
    assert Filter.from_json({"where": [{"field": "dtype", "op": "in", "value": ["F16"]}]}, "recipe.filter") \
        .to_json() == {"where": [{"field": "dtype", "op": "in", "value": ["F16"]}]}
    with pytest.raises(RecipeError, match=r"^recipe\.filter: must be an object$"):
        Filter.from_json(3, "recipe.filter")
