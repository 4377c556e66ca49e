"""Shared by the workbench tests: sample files and waiting for a document's plan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file

from gui.workbench.document import RecipeDocument
from tests.helpers.samples import SAMPLES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "burn-pytorch-tests"
SAMPLE_PT = SAMPLES / "sample_cnn.pt"
SAMPLE_BPK = SAMPLES / "sample_cnn.bpk"


def settle(qtbot, document: RecipeDocument) -> None:
    """Wait until the plan for the newest recipe is in (debounce and worker both done)."""
    qtbot.waitUntil(lambda: not document.busy, timeout=30_000)


def model_and_template(tmp_path: Path) -> tuple[Path, Path]:
    """A Sequential(Linear, ReLU, Linear) and a template that wants 2.weight wider, no 2.bias, and a 3.weight."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    source = tmp_path / "net.pt"
    torch.save(net.state_dict(), source)
    template = tmp_path / "target.safetensors"
    save_file({"0.weight": np.zeros((4, 3), np.float32), "0.bias": np.zeros(4, np.float32),
               "2.weight": np.zeros((5, 4), np.float32), "3.weight": np.zeros((2, 2), np.float32)}, str(template))
    return source, template
