"""Model surgery as data: filters, remaps, adapters, plans, alignment and diffs, never Qt.

A ``Recipe`` says what to do; ``plan(sources, recipe)`` says what would happen, tensor by tensor,
without touching bytes; ``engine.export(plan.tensors, dest)`` does it.
"""

from .modules import KINDS, ModuleGuess, infer_modules

__all__ = ["KINDS", "ModuleGuess", "infer_modules"]
