"""The dotted-path tree behind every view of a store's names."""


import numpy as np
import pytest

from engine import ArrayStore, TensorEntry, open_store
from engine.dtypes import F32, DType
from engine.rust_regex import PatternError
from tests.helpers.samples import SAMPLES
from engine.tree import (ORDERS, build_tree, filter_entries, first_levels, is_buffer, name_matcher, natural_key,
                         values_by_dtype)


def _store(names: list[str]) -> ArrayStore:
    return ArrayStore({n: np.zeros((2, 3), np.float32) for n in names})


def test_children_come_in_natural_order():
    root = build_tree(_store(["layer.10.w", "layer.2.w", "layer.1.w", "Layer.3.w", "head"]).entries)
    assert [c.name for c in root.children] == ["head", "Layer", "layer"]
    assert [c.name for c in root.find("layer").children] == ["1", "2", "10"]


def test_natural_key_orders_digit_runs_by_value():
    names = ["b10", "b2", "a", "b1c", "b1"]
    assert sorted(names, key=natural_key) == ["a", "b1", "b1c", "b2", "b10"]


def test_groups_total_their_tensors():
    with open_store(SAMPLES / "sample_cnn.bpk") as store:
        root = build_tree(store.entries)
        conv1 = root.find("conv1")
        assert conv1 is not None and not conv1.is_tensor
        assert conv1.tensors == 2
        assert conv1.params == 16 * 9 + 16
        assert conv1.nbytes == store.entry("conv1.weight").nbytes + store.entry("conv1.bias").nbytes
        assert root.tensors == len(store.entries)
        assert root.params == store.total_params and root.nbytes == store.total_bytes


def test_nodes_know_their_full_path_parent_and_row():
    root = build_tree(_store(["a.b.c", "a.b.d", "a.e"]).entries)
    d = root.find("a.b.d")
    assert d is not None and d.path == "a.b.d" and d.name == "d" and d.entry.name == "a.b.d"
    assert d.parent is root.find("a.b")
    assert root.find("a.b").children[d.row] is d
    assert root.find("a.x") is None


def test_a_name_can_be_a_tensor_and_a_group():
    root = build_tree(_store(["a", "a.b"]).entries)
    a = root.find("a")
    assert a.is_tensor and a.has_children
    assert a.tensors == 2 and [c.path for c in a.children] == ["a.b"]


def test_walk_visits_every_node_in_natural_order():
    root = build_tree(_store(["x.2", "x.10", "y"]).entries)
    assert [n.path for n in root.walk()] == ["", "x", "x.2", "x.10", "y"]


def test_builds_a_100000_name_tree():
    names = [f"model.layers.{i // 100}.block.{i % 100}.weight" for i in range(100_000)]
    entries = [TensorEntry(n, F32, (4, 4), 64) for n in names]
    root = build_tree(entries)
    assert root.tensors == 100_000 and root.params == 1_600_000
    layers = root.find("model.layers")
    assert len(layers.children) == 1000
    assert [c.name for c in layers.children[:3]] == ["0", "1", "2"]
    assert layers.children[-1].name == "999"
    assert root.find("model.layers.999.block.99.weight").entry.name == names[-1]


def test_text_filter_is_a_case_insensitive_substring():
    entries = _store(["conv1.weight", "Conv2.bias", "fc.weight"]).entries
    assert [e.name for e in filter_entries(entries, name_matcher("CONV", regex=False))] == ["conv1.weight", "Conv2.bias"]
    assert [e.name for e in filter_entries(entries, name_matcher("[", regex=False))] == []


def test_regex_filter_searches_names_and_rejects_invalid_patterns():
    entries = _store(["conv1.weight", "conv2.bias", "fc.weight", "CONV٣.W"]).entries
    assert [e.name for e in filter_entries(entries, name_matcher(r"^conv\d\.w", regex=True))] == [
        "conv1.weight", "CONV٣.W"]  # burn-store's dialect (\d is any digit), case-insensitive
    with pytest.raises(PatternError, match="unclosed class at position 0"):
        name_matcher("[", regex=True)
    with pytest.raises(PatternError, match="look-around"):
        name_matcher("(?<=conv)1", regex=True)
    assert not name_matcher("(a+)+$", regex=True)("a" * 100_000 + "b")  # linear time, not for ever


T5_NAMES = ["shared.weight"] + [f"encoder.block.0.layer.0.SelfAttention.{x}.weight" for x in "qkvo"] + [
    "encoder.block.0.layer.0.layer_norm.weight", "encoder.block.0.layer.1.DenseReluDense.wi.weight",
    "encoder.block.0.layer.1.DenseReluDense.wo.weight", "encoder.block.0.layer.1.layer_norm.weight"]


def _shown(root) -> list[str]:
    return [node.path for node in root.walk()][1:]


def test_compact_tree_shows_a_single_child_chain_as_one_row():
    entries = _store(T5_NAMES).entries
    compact, full = build_tree(entries, order="file", compact=True), build_tree(entries, order="file")
    assert [c.name for c in compact.children] == ["shared", "encoder.block.0.layer"]
    assert len(_shown(compact)) == 23 and len(_shown(full)) == 26  # encoder, block, 0 fold into one row
    chain = compact.children[1]
    assert chain.path == "encoder.block.0.layer" and chain.parent is compact and chain.tensors == 8
    assert [c.name for c in chain.children] == ["0", "1"]
    assert compact.find("encoder") is chain and compact.find("encoder.block") is chain  # found as its row
    assert compact.find("encoder.block.0.layer.1.layer_norm.weight").entry.name.endswith("1.layer_norm.weight")


def test_compaction_stops_at_a_group_holding_one_tensor():
    root = build_tree(_store(["conv.weight", "fc.weight", "fc.bias"]).entries, compact=True)
    assert [c.name for c in root.children] == ["conv", "fc"]  # like a folder with one file: not folded
    assert [c.name for c in root.children[0].children] == ["weight"]


def test_file_order_keeps_the_order_the_file_lists_its_tensors():
    names = ["layer.10.w", "layer.2.w", "head.b", "head.a", "embed.w"]
    root = build_tree(_store(names).entries, order="file")
    assert [c.name for c in root.children] == ["layer", "head", "embed"]
    assert [c.name for c in root.find("layer").children] == ["10", "2"]
    assert [c.name for c in root.find("head").children] == ["b", "a"]


def test_resort_orders_opened_levels_and_later_ones_then_returns_to_file_order():
    store = ArrayStore({"small.w": np.zeros(2, np.float32), "big.w": np.zeros(100, np.float32),
                        "mid.a": np.zeros(10, np.float32), "mid.b": np.zeros(30, np.float32)})
    root = build_tree(store.entries, order="file", compact=True)
    assert [c.name for c in root.children] == ["small", "big", "mid"]
    key, reverse = ORDERS["params"]
    root.resort(key, reverse)
    assert [c.name for c in root.children] == ["big", "mid", "small"] and [c.row for c in root.children] == [0, 1, 2]
    assert [c.name for c in root.find("mid").children] == ["b", "a"]  # opened after the sort: sorted too
    root.resort(None)
    assert [c.name for c in root.children] == ["small", "big", "mid"]
    assert [c.name for c in root.find("mid").children] == ["a", "b"]


def test_flat_tree_lists_full_names_one_level_deep():
    root = build_tree(_store(["b.x", "a.y.z"]).entries, order="file", flat=True)
    assert [c.name for c in root.children] == ["b.x", "a.y.z"] and not root.children[1].has_children
    assert root.find("a.y.z") is root.children[1]


def test_buffers_are_counted_apart_from_parameters():
    store = ArrayStore({"bn.weight": np.zeros(4, np.float32), "bn.running_mean": np.zeros(4, np.float32),
                        "bn.running_var": np.zeros(4, np.float32), "bn.num_batches_tracked": np.array(3, np.int64),
                        "mask": np.zeros(5, bool), "fc.weight": np.zeros((2, 3), np.float32)})
    root = build_tree(store.entries)
    assert (root.params, root.buffer_values, root.parameters) == (24, 14, 10)
    assert (root.find("bn").parameters, root.find("bn").buffer_values) == (4, 9)
    assert [e.name for e in store.entries if is_buffer(e)] == ["bn.running_mean", "bn.running_var",
                                                               "bn.num_batches_tracked", "mask"]


def test_first_levels_open_a_large_tree_breadth_first_within_a_row_budget():
    names = [f"model.layers.{i}.{p}" for i in range(30) for p in ("attn.q", "attn.k", "mlp")]
    root = build_tree(_store(names).entries, order="file", compact=True)
    opened = first_levels(root, rows=40)
    assert [n.path for n in opened] == ["model.layers"]  # one row always opens; its 30 children fit
    assert len(first_levels(root, rows=200)) > 1


def test_a_lone_row_with_a_thousand_children_stays_closed():
    root = build_tree(_store([f"layers.{i}.w" for i in range(1000)]).entries, order="file", compact=True)
    assert first_levels(root) == []  # laying out 1,000 rows would cost the window more than it tells


def test_values_by_dtype_sum_each_dtype_most_first_and_equal_dtypes_held_apart_under_one_name():
    store = ArrayStore({"a": np.zeros(4, np.float32), "b": np.zeros((2, 3), np.float16), "c": np.zeros(5, np.float32),
                        "mask": np.zeros(2, bool)})
    assert values_by_dtype(build_tree(store.entries)) == [("F32", 9), ("F16", 6), ("BOOL", 2)]
    twin = TensorEntry("d", DType("F32", 32, "float"), (7,), 28)  # equal to F32, another object
    assert twin.dtype is not F32 and twin.dtype == F32
    assert values_by_dtype(build_tree([*store.entries, twin])) == [("F32", 16), ("F16", 6), ("BOOL", 2)]


def test_a_group_of_many_tensors_totals_and_splits_them_as_a_small_one_does():
    names = [f"enc.{i % 7}.{'w' if i % 3 else 'b'}{i}" for i in range(3000)] + ["enc", "enc.0"]
    store = ArrayStore({n: np.zeros(i % 5 + 1, np.float32) for i, n in enumerate(names)})
    root = build_tree(store.entries, order="file", compact=True)
    enc = root.find("enc")
    assert enc.entry is not None and enc.tensors == 3002 and enc.params == sum(i % 5 + 1 for i in range(3002))
    zero = root.find("enc.0")
    assert zero.entry is not None and zero.tensors == 1 + sum(1 for i in range(3000) if i % 7 == 0)
    assert [c.name for c in enc.children] == [str(i) for i in range(7)]
    assert sorted(n.path for n in root.walk() if n.is_tensor) == sorted(names)
