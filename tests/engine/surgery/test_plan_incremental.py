"""Re-planning after an edit: results reused by content (same names, same kept tensors), never stale; the
column-wise remap and the filter's one-pass counts agree with the name-by-name rules they replace."""

import weakref

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import ArrayStore, rust_regex
from engine.surgery import CastRule, Filter, Recipe, RemapRule, SourceSpec, plan, stages
from engine.surgery.plan import StageCache
from engine.surgery.remap import compile_rules, remap_name

AFTER_REMAP = ["module inference", "adapters", "filter", "cast", "guesses", "merge"]


def model():
    rng = np.random.default_rng(0)
    return ArrayStore({"blocks.0.fc.weight": rng.standard_normal((3, 2), dtype=np.float32),
                       "blocks.0.fc.bias": np.zeros(3, np.float32),
                       "blocks.0.norm.weight": np.ones(3, np.float32), "blocks.0.norm.bias": np.zeros(3, np.float32),
                       "blocks.2.fc.weight": rng.standard_normal((3, 3), dtype=np.float32),
                       "blocks.2.fc.bias": np.ones(3, np.float32)})


RECIPE = Recipe(adapters=("pytorch-to-burn",), remaps=(RemapRule(r"^blocks\.", "layers."),),
                filter=Filter(exclude=("norm",)))


def ran(cache, names):
    return [cache.ran[name] for name in names]


def test_an_edit_then_its_undo_gives_the_identical_plan_and_reruns_nothing():
    cache, store = StageCache(), model()
    first = plan([store], RECIPE, cache=cache)
    edited = plan([store], RECIPE.with_changes(remaps=(RemapRule(r"^blocks\.", "enc."),)), cache=cache)
    before = ran(cache, ["remap", *AFTER_REMAP])
    undone = plan([store], RECIPE, cache=cache)
    assert ran(cache, ["remap", *AFTER_REMAP]) == before
    assert undone.to_json() == first.to_json() != edited.to_json()
    assert undone.names == ["layers.0.fc.weight", "layers.0.fc.bias", "layers.2.fc.weight", "layers.2.fc.bias"]


def test_a_remap_that_changes_no_name_reruns_no_stage_after_it_but_counts_its_hits():
    cache, store = StageCache(), model()
    first = plan([store], RECIPE, cache=cache)
    before = ran(cache, AFTER_REMAP)
    # a second rule typed halfway: it matches nothing yet, so every name is what it was
    typing = plan([store], RECIPE.with_changes(remaps=(*RECIPE.remaps, RemapRule(r"^head\.", "out."))), cache=cache)
    assert ran(cache, AFTER_REMAP) == before and cache.ran["remap"] == 2
    assert typing.names == first.names and [t.operations for t in typing.tensors] == [t.operations for t in first.tensors]
    assert [(h.pattern, h.count) for h in typing.rule_hits if h.kind == "remap"] == [(r"^blocks\.", 6), (r"^head\.", 0)]
    # the same names written another way: still the first result's stages
    other = plan([store], RECIPE.with_changes(remaps=(RemapRule(r"^blocks[.]", "layers."),)), cache=cache)
    assert ran(cache, AFTER_REMAP) == before and other.names == first.names


def test_a_filter_edit_keeping_the_same_tensors_reruns_no_cast_but_reports_the_new_rule():
    cache, store = StageCache(), model()
    plan([store], RECIPE, cache=cache)
    edited = plan([store], RECIPE.with_changes(filter=Filter(exclude=("nor",))), cache=cache)
    assert ran(cache, ["filter", "cast", "guesses", "merge"]) == [2, 1, 1, 1]
    assert {d.reason for d in edited.dropped} == {"filter: excluded by rule 1 ('nor')"}
    assert [(h.pattern, h.count) for h in edited.rule_hits] == [("nor", 2), (r"^blocks\.", 6)]
    cast = plan([store], RECIPE.with_changes(filter=Filter(exclude=("nor",)), casts=(CastRule("F16"),)), cache=cache)
    assert {str(t.dtype) for t in cast.tensors} == {"F16"} and ran(cache, ["cast", "merge"]) == [2, 2]


def test_renumbering_after_a_source_filter_is_never_taken_from_another_rule_with_the_same_kept_names():
    # the source filter drops y.3.w; the indices still count it, under whatever name the rules give it
    store = ArrayStore({name: np.zeros(2, np.float32) for name in ("x.0.w", "x.5.w", "y.3.w")})
    spec = SourceSpec("s", filter=Filter(exclude=("^y",)))
    cache = StageCache()

    def names(replacement: str) -> list[str]:
        recipe = Recipe(sources=(spec,), adapters=("contiguous-indices",), remaps=(RemapRule("^y", replacement),))
        return plan([store], recipe, cache=cache).names

    assert names("x") == ["x.0.w", "x.2.w"]  # y.3.w becomes x.3.w: x counts 0, 3, 5
    assert names("z") == ["x.0.w", "x.1.w"]  # z.3.w: x counts 0, 5
    assert names("x") == ["x.0.w", "x.2.w"]


NAMES = st.lists(st.text("ab.01", min_size=1, max_size=8), max_size=12)
PATTERNS = st.sampled_from(["a", "^a", "b$", r"\.", "0", "a.*b", "", "^$", "(a)(b)?", "x",
                           # plain text, applied with string methods: each must do what its regex does
                           r"^a\.", "^ab", r"a\.0", r"^\.", r"\.\.", "^^a", r"\d", r"\\", "a{1}", "aa"])
REPLACEMENTS = st.sampled_from(["", "a", "b.", "$1", "${1}x", "ab", "$$", r"\1", ".a."])


@settings(max_examples=200, deadline=None)
@given(NAMES, st.lists(st.tuples(PATTERNS, REPLACEMENTS), max_size=3))
def test_the_remap_stage_does_what_each_rule_does_name_by_name(names, rules):
    rules = [(p, r) for p, r in rules if not any(ref in r for ref in ("$1", "${1}", r"\1")) or "(" in p]
    compiled = compile_rules([RemapRule(p, r) for p, r in rules])
    batch = stages.Batch.of(ArrayStore({name: np.zeros(1, np.float32) for name in names}).entries)
    expected_hits = [0] * len(compiled)
    expected = [remap_name(name, compiled, expected_hits) for name in batch.names]
    out, hits = stages.remap(batch, compiled)
    assert out.names == expected and list(hits) == expected_hits
    assert [len(ops) for ops in out.ops] == [int(new != old) for new, old in zip(out.names, batch.names)]


@settings(max_examples=200, deadline=None)
@given(NAMES, st.lists(PATTERNS, max_size=2), st.lists(st.text("ab.01", max_size=4), max_size=2),
       st.lists(PATTERNS, max_size=2))
def test_the_filter_judges_and_counts_in_one_pass_as_rule_by_rule(names, include, paths, exclude):
    keep = Filter(include=tuple(include), full_paths=tuple(paths), exclude=tuple(exclude))
    verdicts, counts = keep.judge(names)
    assert verdicts == [keep.verdict(name) for name in names]
    assert keep.hits(counts) == keep.rule_hits(names)
    halves = [keep.judge(names[:len(names) // 2])[1], keep.judge(names[len(names) // 2:])[1]]
    assert keep.hits(keep.merged_counts(halves)) == keep.rule_hits(names)


def test_editing_a_later_remap_rule_reruns_only_the_rules_from_it_on():
    cache, store = StageCache(), model()
    rules = (RemapRule(r"^blocks\.", "layers."), RemapRule(r"\.fc\.", ".linear."), RemapRule(r"bias$", "b"))
    plan([store], RECIPE.with_changes(remaps=rules), cache=cache)
    edited = RECIPE.with_changes(remaps=(*rules[:2], RemapRule(r"weight$", "w")))
    result = plan([store], edited, cache=cache)
    assert ran(cache, ["remap rule 1", "remap rule 2", "remap rule 3", "remap"]) == [1, 1, 2, 2]
    assert result.to_json() == plan([store], edited, cache=StageCache()).to_json()
    assert result.names == ["layers.0.linear.w", "layers.0.linear.bias", "layers.2.linear.w", "layers.2.linear.bias"]
    assert [(h.pattern, h.count) for h in result.rule_hits if h.kind == "remap"] == [
        (r"^blocks\.", 6), (r"\.fc\.", 4), ("weight$", 3)]


def literal_text(pattern: str) -> tuple[str, bool] | None:
    regex = rust_regex.compile(pattern)
    return (regex.literal, regex.at_start) if regex.literal is not None else None


def test_plain_text_patterns_are_told_from_regexes():
    assert literal_text(r"^blocks\.") == ("blocks.", True) and literal_text(r"\.fc\.") == (".fc.", False)
    assert literal_text(r"a\ b\-c") == ("a b-c", False) and literal_text("ünï") == ("ünï", False)
    assert literal_text(r"\x41\u00e9\n") == ("Aé\n", False)  # escapes Rust reads as characters are text too
    for regex in ("", "^", "a.b", r"\d", "a$", "(a)", "[ab]", "a+", "a{2}", "a|b", "^^a", "(?i)a", r"\Aa"):
        assert literal_text(regex) is None, regex
    rule, = compile_rules([RemapRule(r"^blocks\.", "layers.")])
    assert (rule.literal, rule.at_start, rule.plain) == ("blocks.", True, "layers.")
    grouped, = compile_rules([RemapRule(r"^(blocks)\.", "$1-")])
    assert grouped.literal is None and grouped.plain is None
    names = ["blocks.0.w", "x.blocks.1", "blocks.blocks.2"]
    assert stages.remap_rule(names, rule) == (["layers.0.w", "x.blocks.1", "layers.blocks.2"], 2)
    inner, = compile_rules([RemapRule(r"blocks\.", "b$$.")])
    assert stages.remap_rule(names, inner) == (["b$.0.w", "x.b$.1", "b$.b$.2"], 3)


def test_results_the_cache_lets_go_are_freed_not_kept():
    cache, store = StageCache(), model()
    first = weakref.ref(plan([store], RECIPE, cache=cache).dropped[0])  # held by the first plan's filter result only
    for k in range(StageCache.SIZE + 1):
        plan([store], RECIPE.with_changes(remaps=(RemapRule(r"^blocks\.", f"e{k}."),)), cache=cache)
    assert first() is None
    again = plan([store], RECIPE, cache=cache)  # computed anew, the same
    assert again.dropped[0].matched == "layers.0.norm.gamma" and cache.ran["filter"] == StageCache.SIZE + 3
