"""Opening the shared Burn PyTorch fixtures: through open_store once the .pt reader has landed, else via torch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from engine import ArrayStore, Store, open_store

FIXTURES = Path(__file__).parents[2] / "fixtures" / "burn-pytorch-tests"


def pt_reader_ready() -> bool:
    from engine.formats import _formats
    return any(getattr(fmt, "NAME", "") == "pytorch" and hasattr(fmt, "sniff") for fmt in _formats())


def _flatten(tree: dict, prefix: str = "") -> dict[str, np.ndarray]:
    out = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, torch.Tensor):
            out[name] = value.numpy()
        elif isinstance(value, dict):
            out.update(_flatten(value, name + "."))
    return out


def load_pt(path: str | Path, top_level_key: str | None = None) -> Store:
    """A fixture as a store (only the tensors; ``top_level_key`` picks a branch)."""
    path = FIXTURES / path if not Path(path).is_absolute() else Path(path)
    if pt_reader_ready():
        return open_store(path, **({"top_level_key": top_level_key} if top_level_key else {}))
    tree = torch.load(path, weights_only=True)
    if top_level_key:
        tree = tree[top_level_key]
    return ArrayStore(_flatten(tree), name=str(path))


def torch_state(store: Store) -> dict[str, torch.Tensor]:
    return {e.name: torch.from_numpy(np.array(store.read(e.name))) for e in store.entries}
