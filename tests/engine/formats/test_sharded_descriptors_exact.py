"""A PyTorch sharded checkpoint holds each shard's file open once, and closing the store closes every one of them
(README "Formats": a store reads its files while open; a long GUI session opens many models, so a descriptor left
to the garbage collector, or never closed, is a leak that ends in "too many open files").

Promise -> test:
- each shard is open once while the store is, none after it is closed ->
  here::test_each_shard_is_open_once_and_closed_with_the_store
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from engine import open_store


def open_descriptors(folder: Path) -> list[str]:
    """The names of the files under ``folder`` this process holds open, one per descriptor (/proc/self/fd)."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the descriptor listdir itself used, closed meanwhile
            continue
        if target.parent == folder:
            names.append(target.name)
    return sorted(names)


def test_each_shard_is_open_once_and_closed_with_the_store(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2)}, tmp_path / "p2.bin")
    index = tmp_path / "pytorch_model.bin.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "p1.bin", "b": "p2.bin"}}))
    folder = tmp_path.resolve()
    with open_store(index) as store:
        assert store.read("a").tolist() == [0.0, 1.0, 2.0] and store.read("b").tolist() == [1.0, 1.0]
        assert open_descriptors(folder) == ["p1.bin", "p2.bin"]
    assert open_descriptors(folder) == []
