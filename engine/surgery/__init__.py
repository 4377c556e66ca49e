"""Model surgery as data: filters, remaps, adapters, plans, alignment and diffs, never Qt.

A ``Recipe`` says what to do; ``plan(stores, recipe)`` says what would happen, tensor by tensor,
without touching bytes; ``plan.export(dest)`` (or ``engine.export(plan.tensors, dest)``) does it.
"""

from .align import AlignmentReport, align
from .diff import DiffReport, TensorDiff, diff
from .filters import Filter, Predicate, PredicateGroup
from .modules import KINDS, ModuleGuess, infer_modules
from .plan import Plan, PlannedTensor, plan
from .recipe import CastRule, Recipe, SourceSpec
from .remap import RemapRule

__all__ = ["AlignmentReport", "CastRule", "DiffReport", "Filter", "KINDS", "ModuleGuess", "Plan", "PlannedTensor",
           "Predicate", "PredicateGroup", "Recipe", "RemapRule", "SourceSpec", "TensorDiff", "align", "diff",
           "infer_modules", "plan"]
