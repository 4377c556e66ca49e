"""A .pt file exports to SafeTensors and Burnpack like any other store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from tests.helpers.pytorch_checkpoints import LAYOUTS, checkpoints, raw_bytes, torch_flat
from safetensors.torch import load_file

from engine import dtypes
from engine.exporting import export
from engine.formats import open_store


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("stem", ["views", "shared", "nested", "scalars_empty", "dtypes"])
def test_export_to_safetensors_equals_torch_load(torch_files, tmp_path: Path, stem: str, layout: str) -> None:
    source = torch_files[(stem, layout)]
    with open_store(source) as store:
        items = [e for e in store.entries if dtypes.writable_to(e.dtype, "safetensors") is None]
        export(items, tmp_path / "out.safetensors")
    # torch cannot load its own legacy file of every dtype (see test_pytorch_read): compare with what was saved
    saved = checkpoints()[stem] if (stem, layout) == ("dtypes", "legacy") else torch.load(source, weights_only=True)
    expected = torch_flat(saved)
    loaded = load_file(tmp_path / "out.safetensors")
    assert sorted(loaded) == sorted(e.name for e in items)
    for name, tensor in loaded.items():
        assert tensor.dtype == expected[name].dtype and tensor.shape == expected[name].shape
        assert raw_bytes(tensor) == raw_bytes(expected[name]), name


def test_export_to_burnpack_round_trips(torch_files, tmp_path: Path) -> None:
    with open_store(torch_files[("nested", "zip")]) as store:
        export(store.entries, tmp_path / "out.bpk")
        with open_store(tmp_path / "out.bpk") as copy:
            assert copy.names == store.names
            for name in store.names:
                np.testing.assert_array_equal(copy.read(name), store.read(name))


def test_contiguous_tensors_export_by_kernel_copy(torch_files, tmp_path: Path, monkeypatch) -> None:
    """Contiguous tensors give export a byte range; only the others are materialized."""
    with open_store(torch_files[("views", "zip")]) as store:
        ranged = [e.name for e in store.entries if e.byte_range() is not None]
        assert ranged == ["base", "row"]
        calls = []
        original = type(store).read
        monkeypatch.setattr(type(store), "read", lambda self, name: calls.append(name) or original(self, name))
        export(store.entries, tmp_path / "views.safetensors")
        assert set(calls).isdisjoint(ranged) and "t" in calls
