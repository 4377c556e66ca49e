"""Model surgery as data: filters, remaps, adapters, plans, alignment and diffs, never Qt.

A ``Recipe`` says what to do; ``plan(stores, recipe)`` says what would happen, tensor by tensor,
without touching bytes; ``plan.export(dest)`` (or ``engine.export(plan.tensors, dest)``) does it.
The suggestions (``suggest``, ``fit``) and the printers (``as_cli``, ``as_rust``) are imported on first use
(PEP 562): a conversion needs neither.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import stages
from .adapters import (
    ADAPTERS,
    BURN_TO_PYTORCH,
    CONTIGUOUS_INDICES,
    FUSE_WEIGHT_NORM,
    PYTORCH_TO_BURN,
    SKIP_ENUM_VARIANTS,
)
from .align import AlignmentReport, ShapeMismatch, align, validate
from .diff import DiffReport, TensorDiff, ValueDifference, diff, value_difference
from .filters import (
    EXCLUDE,
    FIELDS,
    INCLUDE,
    OPERATORS,
    PATH,
    REMAP,
    WHERE,
    Filter,
    Predicate,
    PredicateGroup,
    Rule,
    compile_pattern,
)
from .guesses import Guess
from .modules import ENUM_VARIANT, KINDS, ModuleFinder, ModuleGuess, infer_modules, logical_leaf, parse_kind
from .ops import Cast, FuseSplit, FuseWeightNorm, MergedLora, Rename, SplitFused, Transpose, UnpermuteRotary
from .plan import Dropped, Plan, PlannedTensor, carried_metadata, export_metadata, plan
from .recipe import BUNDLED_PURPOSES, CastRule, LoraSpec, Recipe, RotaryRule, SourceSpec, bundled_recipes
from .remap import RemapRule, compile_rules, remap_name

_LAZY = {"Fit": ".suggestions", "Suggestion": ".suggestions", "fit": ".suggestions", "remap_input_name": ".suggestions",
         "reopen_at_key": ".suggestions", "suggest": ".suggestions", "as_cli": ".printers", "as_rust": ".printers"}

if TYPE_CHECKING:
    from .printers import as_cli, as_rust
    from .suggestions import Fit, Suggestion, fit, remap_input_name, reopen_at_key, suggest

__all__ = ["ADAPTERS", "AlignmentReport", "BUNDLED_PURPOSES", "BURN_TO_PYTORCH", "CONTIGUOUS_INDICES", "Cast", "CastRule", "DiffReport",
           "Dropped", "ENUM_VARIANT", "EXCLUDE", "FIELDS", "FUSE_WEIGHT_NORM", "Filter", "Fit", "FuseSplit",
           "FuseWeightNorm", "Guess", "INCLUDE", "KINDS", "LoraSpec", "MergedLora", "ModuleFinder", "ModuleGuess", "OPERATORS", "PATH",
           "PYTORCH_TO_BURN", "Plan", "PlannedTensor", "Predicate", "PredicateGroup", "REMAP", "Recipe", "RemapRule",
           "Rename", "RotaryRule", "Rule", "UnpermuteRotary", "bundled_recipes", "SKIP_ENUM_VARIANTS", "ShapeMismatch", "SourceSpec", "SplitFused", "Suggestion",
           "TensorDiff", "Transpose", "ValueDifference", "WHERE", "align", "as_cli", "as_rust", "carried_metadata",
           "compile_pattern", "compile_rules", "diff", "export_metadata", "fit", "infer_modules", "logical_leaf",
           "parse_kind", "plan", "remap_input_name", "remap_name", "reopen_at_key", "stages", "suggest",
           "validate", "value_difference"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # once: later lookups are plain module attributes
    return value
