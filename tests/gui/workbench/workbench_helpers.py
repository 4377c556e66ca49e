"""Shared by the workbench tests: sample files and waiting for a document's plan."""

from __future__ import annotations

from pathlib import Path

from engine.samples import SAMPLES
from gui.workbench.document import RecipeDocument

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "burn-pytorch-tests"
SAMPLE_PT = SAMPLES / "sample_cnn.pt"
SAMPLE_BPK = SAMPLES / "sample_cnn.bpk"


def settle(qtbot, document: RecipeDocument) -> None:
    """Wait until the plan for the newest recipe is in (debounce and worker both done)."""
    qtbot.waitUntil(lambda: not document.busy, timeout=10_000)
