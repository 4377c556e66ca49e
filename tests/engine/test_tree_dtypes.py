"""dtypes_of: the distinct dtype objects a tree's tensors hold, from the one pass build_tree makes."""

import numpy as np

from engine import ArrayStore
from engine.tree import build_tree, dtypes_of, values_by_dtype


def test_every_dtype_a_tree_holds_is_listed_once():
    store = ArrayStore({"a": np.zeros(3, np.float32), "b": np.zeros(2, np.float32), "c": np.zeros(4, np.int64),
                        "d.e": np.zeros((2, 2), np.float16)})
    root = build_tree(store.entries)
    assert sorted(str(dtype) for dtype in dtypes_of(root)) == ["F16", "F32", "I64"]
    assert dict(values_by_dtype(root)) == {"F32": 5, "I64": 4, "F16": 4}


def test_an_empty_tree_holds_no_dtype():
    assert dtypes_of(build_tree([])) == [] and values_by_dtype(build_tree([])) == []
