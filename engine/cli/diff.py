"""``store-studio diff A B [--json] [--no-values]``: what differs between two model files, tensor by tensor.

With ``--recipe``, A is read through the recipe's plan, so a source and the file exported from it
compare identical when the only changes are the recipe's own. With ``--suggest``, B is the target model
(a template) and the recipe changes that make A load into it are printed, one ``suggest:`` line each,
each proven on top of the ones before (engine ``suggest_recipe``); ``--save-recipe`` saves the recipe
they make, with A as its source and B as its template, for ``convert --recipe``.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path

from ..formats import open_store
from ..surgery.diff import DiffReport, diff
from ..surgery.plan import plan
from ..store import Store
from ..surgery.recipe import Recipe, SourceSpec
from ..surgery.suggest import Suggestion, suggest_recipe
from . import exits, progress
from .exits import UsageError

NAME = "diff"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="compare two model files tensor by tensor, values included")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--no-values", action="store_true", help="compare bytes only; skip value statistics")
    p.add_argument("--recipe", metavar="FILE", help="read A through this recipe's plan")
    p.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance of allclose (default 1e-5)")
    p.add_argument("--atol", type=float, default=1e-8, help="absolute tolerance of allclose (default 1e-8)")
    p.add_argument("--exit-code", action="store_true", help="exit 1 when anything differs, as git diff --exit-code")
    p.add_argument("--suggest", action="store_true",
                   help="print the recipe changes that make A load into B (B: a file saved from the target model)")
    p.add_argument("--save-recipe", metavar="FILE", help="with --suggest: save the recipe the suggestions make")
    progress.add_quiet_flag(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.save_recipe and not args.suggest:
        raise UsageError("--save-recipe saves what --suggest finds: give --suggest too")
    recipe = Recipe.load(args.recipe) if args.recipe else None
    key = recipe and (recipe.top_level_key or next((s.top_level_key for s in recipe.sources if s.top_level_key), None))
    with ExitStack() as stack:
        a = stack.enter_context(open_store(args.a, **({"top_level_key": key} if key else {})))
        b = stack.enter_context(open_store(args.b))
        left = plan([a], recipe) if recipe else a
        with progress.line(args, "comparing") as report_progress:
            report = diff(left, b, values=not args.no_values, rtol=args.rtol, atol=args.atol, progress=report_progress)
        steps = suggestions(args, a, b, recipe) if args.suggest else []
    if args.json:
        print(json.dumps({**report.to_json(), **({"suggestions": [s.line() for s in steps]} if args.suggest else {})},
                         indent=2))
    else:
        print_report(report)
        for step in steps:
            print(step.line())
    return exits.DIFFERS if args.exit_code and not report.all_identical else exits.OK


def suggestions(args: argparse.Namespace, a: Store, b: Store, recipe: Recipe | None) -> list[Suggestion]:
    """The suggestion chain for A into B; saved as a recipe (A its source, B its template) with ``--save-recipe``."""
    base = recipe or Recipe()
    if not base.sources:
        base = base.with_changes(sources=(SourceSpec(str(Path(args.a).absolute())),))
    if not base.template:
        base = base.with_changes(template=str(Path(args.b).absolute()))
    made, steps = suggest_recipe([a], base, b, template=b,
                                 reopen=lambda store, key: open_store(store.path, top_level_key=key))
    if args.save_recipe:
        made.save(args.save_recipe)
        print(f"saved recipe {args.save_recipe}", file=sys.stderr)
    return steps


def print_report(report: DiffReport) -> None:
    for t in report.tensors:
        detail = ""
        if t.status in ("shape_mismatch", "dtype_mismatch"):
            detail = f"  {t.dtype_a} {list(t.shape_a or ())} vs {t.dtype_b} {list(t.shape_b or ())}"
        if t.max_abs is not None and t.status != "identical":
            detail += f"  max |a-b| {t.max_abs:.6g}, mean {t.mean_abs:.6g}, allclose {'yes' if t.allclose else 'no'}"
        print(f"{t.status:<14} {t.name}{detail}")
    summary = report.summary
    print(", ".join(f"{summary[k]} {k.replace('_', ' ')}" for k in summary if k != "total" and summary[k]) or "nothing to compare")
