"""The dotted-path tree behind every view of a store's names."""

import re

import numpy as np
import pytest

from engine import ArrayStore, TensorEntry, open_store
from engine.dtypes import F32
from engine.samples import SAMPLES
from engine.tree import build_tree, filter_entries, name_matcher, natural_key


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
    entries = _store(["conv1.weight", "conv2.bias", "fc.weight"]).entries
    assert [e.name for e in filter_entries(entries, name_matcher(r"^conv\d\.w", regex=True))] == ["conv1.weight"]
    with pytest.raises(re.error):
        name_matcher("[", regex=True)
