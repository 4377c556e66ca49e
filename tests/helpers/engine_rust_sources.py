"""Shared by the Rust-template tests: Burn's own model sources (tests/fixtures/burn-rust-models), and small
models written here, read as templates."""

from __future__ import annotations

import textwrap
from pathlib import Path

from engine import BurnVersion
from engine.formats.rust_model import RustTemplate, open_rust_template

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BURN_MODELS = FIXTURES / "burn-rust-models"
BURN_PT = FIXTURES / "burn-pytorch-tests"
MIRROR = Path("/work/.mirror/tracel-ai+burn/repo")  # Burn's source, fetched (github:tracel-ai/burn), when present


def write(folder: Path, source: str, name: str = "model.rs") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def read(folder: Path, source: str, version: BurnVersion = BurnVersion.V0_21, struct: str = "") -> RustTemplate:
    """A model written in ``folder`` and read as Burn ``version`` saves it (``struct``: ``::Net``)."""
    return open_rust_template(f"{write(folder, source)}{struct}", version)


def shapes(template: RustTemplate) -> dict[str, tuple[int, ...]]:
    """Every tensor the model saves (``*``: a Vec of run-time length), with its shape (-1: set at run time)."""
    return {t.name: t.shape for t in template.model.tensors}


def optional(template: RustTemplate) -> set[str]:
    return {t.name for t in template.model.tensors if t.optional}
