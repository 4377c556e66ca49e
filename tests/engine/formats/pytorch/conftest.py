"""Checkpoints written by real torch once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytorch_helpers import LAYOUTS, checkpoints, save


@pytest.fixture(scope="session")
def torch_files(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """(stem, layout) -> a file torch.save wrote."""
    folder = tmp_path_factory.mktemp("torch")
    return {(stem, layout): save(obj, folder / f"{stem}_{layout}.pt", layout)
            for stem, obj in checkpoints().items() for layout in LAYOUTS}
