"""Checkpoints written by real torch once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.pytorch_checkpoints import LAYOUTS, checkpoints, save

from tests.mutation import mutant_runs


@pytest.fixture(scope="session")
def torch_files(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """(stem, layout) -> a file torch.save wrote."""
    folder = tmp_path_factory.mktemp("torch")
    return {(stem, layout): save(obj, folder / f"{stem}_{layout}.pt", layout)
            for stem, obj in checkpoints().items() for layout in LAYOUTS}


def pytest_collection_finish(session: pytest.Session) -> None:
    """In a fork server (``mutant_runs.in_fork_server``: it only collects, then forks each run from itself), build
    the checkpoints once: torch's first backward pass and optimizer step cost 1.8 s of CPU, which each forked run
    that asks for ``torch_files`` would pay again (0.01 s once the server has paid it). One intra-op thread first:
    a child forked after torch has started its thread pool hangs at its next parallel operation."""
    if mutant_runs.in_fork_server(session.config):
        import torch
        torch.set_num_threads(1)
        checkpoints()
