"""Index segments are what Rust's ``parse::<usize>()`` accepts, everywhere, and no segment crashes anything.

burn-store renumbers a segment when ``part.parse::<usize>()`` succeeds (crates/burn-store/src/keyremapper.rs:247
and :307 at v0.20.0, v0.21.0, v0.22.0-pre.2 and main). Rust's ``from_str_radix`` for unsigned types
(library/core/src/num/mod.rs) takes an optional ``+``, then one or more ASCII digits, and fails on overflow.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from engine import ArrayStore, open_store
from engine.cli import main
from engine.cli.config import branch
from engine.surgery import Recipe, RemapRule, align, plan
from engine.surgery.adapters import contiguous_indices
from engine.surgery.guesses import Guess
from engine.surgery.printers import as_rust
from engine.surgery.recipe import CastRule, SourceSpec
from engine.tree import USIZE_MAX, build_tree, natural_key, parse_index

RUST = [("0", 0), ("5", 5), ("+5", 5), ("007", 7), ("+007", 7), (str(USIZE_MAX), USIZE_MAX),
        ("0" * 5000 + "12", 12), (str(USIZE_MAX + 1), None), ("9" * 5000, None), ("²", None), ("٣", None),
        ("1_000", None), ("-0", None), ("-5", None), ("+", None), ("", None), ("++5", None), (" 5", None),
        ("5 ", None), ("５", None), ("0x10", None), ("1e3", None), ("Ⅻ", None), ("½", None), ("𝟙", None)]


@pytest.mark.parametrize("segment,value", RUST, ids=[repr(s[:12]) for s, _ in RUST])
def test_parse_index_is_rusts_parse_usize(segment, value):
    assert parse_index(segment) == value


def test_renumbering_takes_only_rust_indices():
    names = ["fc.+5.bias", "fc.3.bias", "fc.².weight", "fc.٣.weight", "fc.1_000.w", f"fc.{USIZE_MAX + 1}.w", "fc.0.weight"]
    assert contiguous_indices(names) == {"fc.+5.bias": "fc.2.bias", "fc.3.bias": "fc.1.bias", "fc.².weight": "fc.².weight",
                                         "fc.٣.weight": "fc.٣.weight", "fc.1_000.w": "fc.1_000.w",
                                         f"fc.{USIZE_MAX + 1}.w": f"fc.{USIZE_MAX + 1}.w", "fc.0.weight": "fc.0.weight"}


def test_a_non_index_segment_names_its_module_in_the_plans_explanations():
    store = ArrayStore({"tokens.3.weight": np.zeros((4, 3), np.float32), "tokens.².weight": np.zeros((4, 3), np.float32)})
    result = plan([store], Recipe(adapters=("pytorch-to-burn",)))
    reasons = {g.name: g.reason for g in result.guesses}
    assert "the name 'tokens' says nothing" in reasons["tokens.3.weight"]  # 3 is an index: the module is 'tokens'
    assert "the name '²' says nothing" in reasons["tokens.².weight"]      # ² is not: it names the module


def test_convert_with_contiguous_indices_and_odd_segments_writes_the_file(tmp_path, capsys):
    source = tmp_path / "m.safetensors"
    save_file({"fc.².weight": np.ones((2, 2), np.float32), "fc.0.weight": np.ones((2, 2), np.float32),
               "fc.+5.bias": np.ones(2, np.float32), "fc.3.bias": np.ones(2, np.float32)}, str(source))
    out = tmp_path / "m.bpk"
    assert main(["convert", str(source), str(out), "--contiguous-indices", "-q"]) == 0
    with open_store(out) as written:
        assert sorted(written.names) == ["fc.0.weight", "fc.1.bias", "fc.2.bias", "fc.².weight"]


def test_config_keys_index_lists_as_rust_reads_them():
    values = {"layers": [{"width": 8}, {"width": 16}]}
    assert branch(values, "layers.+1.width") == 16
    assert branch(values, "layers.².width") is not branch(values, "layers.1.width")  # missing, not a crash


segments = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12).filter(lambda s: "." not in s)
digitish = st.sampled_from(["0", "1", "+2", "٣", "²", "1_0", "00", str(USIZE_MAX + 1), "-1", "+", "Ⅻ", "𝟙"])
names = st.lists(st.lists(st.one_of(segments, digitish), min_size=1, max_size=5).map(".".join),
                 min_size=1, max_size=12, unique=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names)
def test_no_path_segment_crashes_renumbering_planning_printing_or_sorting(drawn):
    renumbered = contiguous_indices(drawn)
    assert set(renumbered) == set(drawn)
    store = ArrayStore({name: np.zeros((2, 3), np.float32) for name in drawn})
    recipe = Recipe(sources=(SourceSpec("m.bpk"),), adapters=("pytorch-to-burn", "contiguous-indices", "skip-enum-variants"),
                    remaps=(RemapRule(r"^(\d+)", "x$1"),), casts=(CastRule("F16"),))
    result = plan([store], recipe, template=store)
    assert len(result.tensors) + len(result.conflicts) >= 1
    report = align(result, store)
    assert len(report.applied) + len(report.missing) + len(report.shape_mismatches) >= 1
    assert all(isinstance(g, Guess) and g.line() for g in result.guesses)
    text = as_rust(recipe, [store], result)
    assert text.count("let mut store") == 1
    sorted(drawn, key=natural_key)
    assert sum(node.is_tensor for node in build_tree(store.entries, order="natural").walk()) == len(drawn)
    for name in drawn:
        branch({"a": [1, 2]}, name)
