"""Running the real `python -m engine` command line, and Burn PyTorch fixtures rewritten as SafeTensors files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch
from safetensors.numpy import save_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "burn-pytorch-tests"


def fixture_as_safetensors(relative: str, dest: Path) -> Path:
    """A Burn PyTorch fixture rewritten as SafeTensors (same names and values)."""
    state = torch.load(FIXTURES / relative, weights_only=True)
    save_file({k: v.numpy() for k, v in state.items() if isinstance(v, torch.Tensor)}, str(dest))
    return dest


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True)

