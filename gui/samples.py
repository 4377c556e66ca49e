"""Where the bundled sample models live (``resources/samples`` beside the packages)."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "resources" / "samples"


def default_sample() -> Path:
    """The model the app opens when given none: the Burn-layout sample CNN."""
    return SAMPLES / "sample_cnn.bpk"
