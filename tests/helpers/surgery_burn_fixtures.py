"""Opening the shared Burn PyTorch fixtures as stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from engine import Store, open_store

FIXTURES = Path(__file__).parents[1] / "fixtures" / "burn-pytorch-tests"


def load_pt(path: str | Path, top_level_key: str | None = None) -> Store:
    """A fixture as a store (only the tensors; ``top_level_key`` picks a branch)."""
    path = FIXTURES / path if not Path(path).is_absolute() else Path(path)
    return open_store(path, **({"top_level_key": top_level_key} if top_level_key else {}))


def torch_state(store: Store) -> dict[str, torch.Tensor]:
    return {e.name: torch.from_numpy(np.array(store.read(e.name))) for e in store.entries}
