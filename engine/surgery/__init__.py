"""Model surgery as data: filters, remaps, adapters, plans, alignment and diffs, never Qt.

A ``Recipe`` says what to do; ``plan(stores, recipe)`` says what would happen, tensor by tensor,
without touching bytes; ``plan.export(dest)`` (or ``engine.export(plan.tensors, dest)``) does it.
"""

from . import stages
from .align import AlignmentReport, ShapeMismatch, align, validate
from .diff import DiffReport, TensorDiff, diff
from .filters import Filter, Predicate, PredicateGroup
from .guesses import Guess
from .modules import ENUM_VARIANT, KINDS, ModuleGuess, infer_modules, parse_kind
from .plan import Dropped, Plan, PlannedTensor, carried_metadata, export_metadata, plan
from .recipe import CastRule, Recipe, SourceSpec
from .remap import RemapRule

__all__ = ["AlignmentReport", "CastRule", "DiffReport", "Dropped", "ENUM_VARIANT", "Filter", "Guess", "KINDS",
           "ModuleGuess", "Plan", "PlannedTensor", "Predicate", "PredicateGroup", "Recipe", "RemapRule",
           "ShapeMismatch", "SourceSpec", "TensorDiff", "align", "carried_metadata", "diff", "export_metadata", "infer_modules", "parse_kind", "plan",
           "stages", "validate"]
