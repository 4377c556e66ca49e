"""One plan's whole outcome, made once in the planning worker and handed, unchanged, to every panel.

The tree's marks, the preview's rows and template column, the diff's sources and the export's alignment
all come from one ``PlanResult``: a panel renders from what it receives and never reads the document back,
so no panel can show one plan's rows beside another plan's marks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from engine import Store
from engine.surgery import AlignmentReport, Plan, Recipe
from gui.workbench.marks import Mark


@dataclass(frozen=True)
class PlanResult:
    """``plan`` of ``recipe`` over ``planned_stores`` (PyTorch files at their key); with a ``template``, its
    ``alignment`` and ``fit`` (planned name -> state, word, sentence); ``marks`` for the tab's own tensors."""

    plan: Plan
    recipe: Recipe
    planned_stores: tuple[Store, ...]
    marks: Mapping[str, Mark] = field(default_factory=lambda: MappingProxyType({}))
    template: Store | None = None
    alignment: AlignmentReport | None = None
    fit: Mapping[str, tuple[str, str, str]] = field(default_factory=lambda: MappingProxyType({}))
