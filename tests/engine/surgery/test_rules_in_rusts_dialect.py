r"""Every pattern a recipe carries is read in burn-store's dialect and run in linear time (a recipe that loads here must
load in Burn, and no pattern may hang the app):
includes, excludes, a source's own filter, predicates' ``matches``, remap rules; the chain printed for Rust
holds only patterns Rust's regex takes.

Promise -> test:
- a pattern Rust refuses is a RecipeError naming its rule, in every place a recipe holds one
  -> test_a_pattern_rust_refuses_is_refused_naming_its_rule
- filters and remaps match the Rust way (\d is any digit, $ the end of the text, replace_all's matches)
  -> test_filters_and_remaps_match_the_rust_way
- a recipe's patterns together compile within a budget -> test_a_recipe_of_too_many_costly_patterns_is_refused
- the printed chain never holds a pattern Rust refuses, and the printed command line's exact paths are
  Rust-escaped -> test_the_printed_chain_refuses_a_remap_rust_would_refuse, test_exact_paths_print_rust_escaped
- a suggested segment rename needs no look-ahead and renames as before
  -> test_a_suggested_segment_rename_is_rusts_and_renames_the_segment
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import ArrayStore, rust_regex
from engine.errors import RecipeError
from engine.surgery import Filter, Recipe, RemapRule
from engine.surgery.plan import plan
from engine.surgery.printers import as_cli, as_rust
from engine.surgery.remap import compile_rules, remap_name
from engine.surgery.suggestions import name_votes

LOOK_BEHIND = "look-around ((?=, (?!, (?<=, (?<!) is not supported by Rust's regex at position 0"


@pytest.mark.parametrize("doc, says", [
    ({"filter": {"include": ["^enc", "(?<=conv)1"]}}, f"include rule 2: invalid regex '(?<=conv)1': {LOOK_BEHIND}"),
    ({"filter": {"exclude": ["(?<=conv)1"]}}, f"exclude rule 1: invalid regex '(?<=conv)1': {LOOK_BEHIND}"),
    ({"filter": {"where": [{"field": "name", "op": "matches", "value": "(?<=conv)1"}]}},
     f"filter.where[0]: predicate name matches '(?<=conv)1': invalid regex '(?<=conv)1': {LOOK_BEHIND}"),
    ({"sources": [{"path": "a.pt", "filter": {"include": ["(?<=conv)1"]}}]},
     f"include rule 1: invalid regex '(?<=conv)1': {LOOK_BEHIND}"),
    ({"remaps": [["^a", "b"], ["(?<=conv)1", "x"]]},
     f"remap rule 2 ('(?<=conv)1' -> 'x'): invalid regex '(?<=conv)1': {LOOK_BEHIND}"),
    ({"remaps": [["(" * 5_000 + ")" * 5_000, "x"]]},
     "it nests deeper than 250 levels (Rust's regex limit) at position 4749"),
    ({"filter": {"include": ["a{100000}"]}},
     "include rule 1: invalid regex 'a{100000}': a repeat count above 1,000 (RE2's limit) at position 1"),
])
def test_a_pattern_rust_refuses_is_refused_naming_its_rule(doc, says):
    with pytest.raises(RecipeError) as error:
        Recipe.from_json({"version": 1, **doc})
    assert str(error.value).endswith(says)


def test_filters_and_remaps_match_the_rust_way():
    names = ["enc.٣.w", "enc.3.w", "enc.x.w\n", "head.w"]
    store = ArrayStore({name: np.zeros(1, np.float32) for name in names})
    recipe = Recipe(filter=Filter(include=(r"\.\d\.", r"w$")), remaps=(RemapRule(r"^enc\.(\d)", "layer$1"),))
    result = plan([store], recipe)
    assert result.names == ["layer٣.w", "layer3.w", "head.w"]  # \d is any digit; $ is not before a final newline
    assert [d.name for d in result.dropped] == ["enc.x.w\n"]
    assert remap_name("baaac", compile_rules([RemapRule("a*", "-")])) == "-b-c-"  # replace_all's matches, not re's


def test_a_recipe_of_too_many_costly_patterns_is_refused():
    include = [rf"\w{{1,20}}x{i}" for i in range(60)]  # about 28,000 RE2 instructions each
    with pytest.raises(RecipeError, match=r"^include rule 38: invalid regex .*: the patterns together are too "
                                          r"costly: more than 1,048,576 characters and RE2 instructions"):
        Recipe.from_json({"version": 1, "filter": {"include": include}})
    assert Recipe.from_json({"version": 1, "filter": {"include": include[:30]}}).filter.include == tuple(include[:30])


def test_the_printed_chain_refuses_a_remap_rust_would_refuse():
    with pytest.raises(RecipeError, match=r"^remap rule 1 \('\(\?<=conv\)1' -> 'x'\): invalid regex"):
        as_rust(Recipe(remaps=(RemapRule("(?<=conv)1", "x"),)))


def test_exact_paths_print_rust_escaped():
    line = as_cli(Recipe(filter=Filter(full_paths=("enc.#1 a&b",))))
    assert "--include '^enc\\.\\#1 a\\&b$'" in line  # regex::escape's spelling, which Rust's regex reads back
    assert rust_regex.compile(r"^enc\.\#1 a\&b$").search("enc.#1 a&b")


def test_a_suggested_segment_rename_is_rusts_and_renames_the_segment():
    (pattern, replacement, _), = [v for v in name_votes(["enc.norm1.x"], ["enc.bn1.x"]) if v[2] == "rename norm to bn"]
    assert (pattern, replacement) == (r"(^|\.)norm(\d*)(\.|$)", "${1}bn${2}${3}")
    rule = compile_rules([RemapRule(pattern, replacement)])
    assert [remap_name(n, rule) for n in ("enc.norm1.x", "norm.w", "enc.norm", "enc.normal.x", "xnorm1.y")] == [
        "enc.bn1.x", "bn.w", "enc.bn", "enc.normal.x", "xnorm1.y"]
