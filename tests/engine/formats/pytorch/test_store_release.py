"""Giving a read tensor's pages back without losing its values: ``PyTorchStore.release`` after a tensor
was read (export releases each tensor after copying it) leaves every tensor readable with the same values: a
view at an offset into its storage, a memory-mapped one (over 1 GiB, lowered here), and a numpy array, whose
bytes are in the pickle, not in a storage of the file.

Promises (README, "PyTorch files" and "Limits") -> tests:
- numpy arrays inside a checkpoint read as numpy holds them, and releasing them is harmless
  -> test_releasing_a_numpy_array_keeps_it_readable
- a tensor over 1 GiB is memory-mapped; releasing its pages (and any other tensor's) changes no value
  -> test_releasing_mapped_views_keeps_their_values
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.formats import open_store


def checkpoint(path: Path) -> Path:
    """A view at element 3 of a 64-float storage, a whole tensor after it, and a numpy array."""
    base = torch.arange(64, dtype=torch.float32)
    torch.save({"view": base[3:43].reshape(5, 8), "whole": torch.arange(16, dtype=torch.int32),
                "arr": np.arange(6, dtype="<f8").reshape(2, 3)}, path)
    return path


def test_releasing_a_numpy_array_keeps_it_readable(tmp_path: Path) -> None:
    with open_store(checkpoint(tmp_path / "np.pt")) as store:
        assert store.names == ["view", "whole", "arr"]
        assert store.read("arr").tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        store.release("arr")
        assert store.read("arr").tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_releasing_mapped_views_keeps_their_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tensors over MAP_ABOVE (1 GiB) are memory-mapped: lowered to 16 bytes so these small ones are, and their
    pages are then given back to the system for real."""
    from engine.sources import local as mapped
    monkeypatch.setattr(mapped, "MAP_ABOVE", 16)
    expected = {"view": np.arange(3, 43, dtype=np.float32).reshape(5, 8).tolist(), "whole": list(range(16)),
                "arr": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]}
    with open_store(checkpoint(tmp_path / "mapped.pt")) as store:
        for name in store.names:
            assert store.read(name).tolist() == expected[name], name
        for name in store.names:
            store.release(name)
        for name in store.names:
            assert store.read(name).tolist() == expected[name], name
