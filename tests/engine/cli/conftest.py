"""Fixtures shared by the command-line tests: a checkpoint of weights and values that ``inspect``, ``config`` and
``migrate`` read."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    torch.save({"model": {"w": torch.ones(2, 3), "b": torch.zeros(3, dtype=torch.float16)}, "epoch": 3, "lr": 0.5,
                "cfg": {"a.b": 1, "a": {"b": 2, "c": [10, 20, {"d": "deep"}]}, "list": [5, 6]}},
               tmp_path / "ck.pt")
    return str(tmp_path / "ck.pt")
