"""``store-studio diff A B [--json] [--no-values]``: what differs between two model files, tensor by tensor.

With ``--recipe``, A is read through the recipe's plan, so a source and the file exported from it
compare identical when the only changes are the recipe's own. With ``--suggest``, B is the target model
(a template) and the recipe changes that make A load into it are printed, one ``suggest:`` line each,
each proven on top of the ones before (engine ``fit``: changes searched together, where one alone loads
nothing, as a Lightning checkpoint's key and prefix); ``--save-recipe`` saves the recipe
they make, with A as its source and B as its template, for ``convert --recipe`` (as ``convert`` saves one: never
over A, B or their shards, an existing file only with ``--overwrite``, atomically).
"""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from pathlib import Path

from ..formats import open_store, open_template
from ..store import Store
from ..surgery.align import AlignmentReport, align
from ..surgery.diff import DiffReport, diff
from ..surgery.plan import Plan, plan
from ..surgery.recipe import Recipe, SourceSpec
from ..surgery.suggestions import Step, fit, reopen_at_key
from . import exits, progress, terminal
from .convert import files_of, save_recipe
from .exits import UsageError

NAME = "diff"
EXAMPLES = ("store-studio diff model.pt model.bpk",
            "store-studio diff model.pt model.bpk --recipe fix.recipe.json --suggest")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="compare two model files tensor by tensor, values included")
    p.add_argument("a", metavar="A", help="a model file (read through --recipe, when given)")
    p.add_argument("b", metavar="B", help="the model file to compare it with")
    p.add_argument("--json", action="store_true", help="print JSON instead of text (every pair)")
    p.add_argument("--all", action="store_true", help="list identical pairs too (by default only what differs)")
    p.add_argument("--no-values", action="store_true", help="compare bytes only; skip value statistics")
    p.add_argument("--recipe", metavar="FILE", help="read A through this recipe's plan")
    p.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance of allclose (default 1e-5)")
    p.add_argument("--atol", type=float, default=1e-8, help="absolute tolerance of allclose (default 1e-8)")
    p.add_argument("--exit-code", action="store_true", help="exit 1 when anything differs, as git diff --exit-code")
    p.add_argument("--suggest", action="store_true",
                   help="print the recipe changes that make A load into B (B: a file saved from the target model)")
    p.add_argument("--save-recipe", metavar="FILE", help="with --suggest: save the recipe the suggestions make")
    p.add_argument("--overwrite", action="store_true", help="with --save-recipe: replace FILE if it exists")
    progress.add_quiet_flag(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.save_recipe and not args.suggest:
        raise UsageError("--save-recipe saves what --suggest finds: give --suggest too")
    recipe = Recipe.load(args.recipe) if args.recipe else None
    named = [args.a, args.b, *([args.recipe] if args.recipe else [])]
    base = suggestion_base(args, recipe)
    if args.save_recipe:  # before A and B are read, so that a refused FILE leaves every file as it was
        base.check_destination(args.save_recipe, overwrite=args.overwrite, keep=named)
    key = recipe and (recipe.top_level_key or next((s.top_level_key for s in recipe.sources if s.top_level_key), None))
    with ExitStack() as stack:
        a = stack.enter_context(open_store(args.a, **({"top_level_key": key} if key else {})))
        b = stack.enter_context(open_template(args.b, base.burn_version))
        left = plan([a], recipe) if recipe else a
        report = compare(args, left, b)
        steps = suggestions(args, a, b, base, named) if args.suggest else ()
    if args.json:
        terminal.document({**report.to_json(), **({"suggestions": [s.line() for s in steps]} if args.suggest else {})})
    else:
        print_report(report, every_pair=args.all)
        for step in steps:
            terminal.out(step.line())
    same = report.all_identical if isinstance(report, DiffReport) else report.ok
    return exits.DIFFERS if args.exit_code and not same else exits.OK


def compare(args: argparse.Namespace, left: Store | Plan, b: Store) -> DiffReport | AlignmentReport:
    """The tensor-by-tensor diff; against a model read from its Rust source (names and shapes, no values), the
    alignment: what would load, what is missing, what has another shape or one set at run time."""
    if not b.has_values:
        return align(left, b)
    with progress.line(args, "comparing") as report_progress:
        return diff(left, b, values=not args.no_values, rtol=args.rtol, atol=args.atol, progress=report_progress)


def suggestion_base(args: argparse.Namespace, recipe: Recipe | None) -> Recipe:
    """The recipe the suggestions start from: ``--recipe``'s, with A as its source and B as its template where
    it names none (what ``--save-recipe`` saves, the suggestions added)."""
    base = recipe or Recipe()
    if not base.sources:
        base = base.with_changes(sources=(SourceSpec(str(Path(args.a).absolute())),))
    if not base.template:
        base = base.with_changes(template=str(Path(args.b).absolute()))
    return base


def suggestions(args: argparse.Namespace, a: Store, b: Store, base: Recipe, named: list[str]) -> tuple[Step, ...]:
    """The suggestion chain for A into B from ``base``; saved as a recipe with ``--save-recipe``, never over
    ``named`` files nor A's or B's shards."""
    made = fit([a], base, b, template=b, reopen=reopen_at_key)
    if args.save_recipe:
        save_recipe(made.recipe, args, [*named, *files_of([a, b])])
    return made.steps


def print_report(report: DiffReport | AlignmentReport, every_pair: bool = False) -> None:
    """What differs, one pair a line, then the summary (which counts the identical pairs); ``every_pair`` lists
    the identical ones too."""
    if isinstance(report, AlignmentReport):
        for line in report.lines():
            terminal.out(line)
        return
    for t in report.tensors:
        if t.status == "identical" and not every_pair:
            continue
        detail = ""
        if t.status in ("shape_mismatch", "dtype_mismatch"):
            detail = f"  {t.dtype_a} {list(t.shape_a or ())} vs {t.dtype_b} {list(t.shape_b or ())}"
        if t.max_abs is not None and t.status != "identical":
            detail += f"  max |a-b| {t.max_abs:.6g}, mean {t.mean_abs:.6g}, allclose {'yes' if t.allclose else 'no'}"
        terminal.out(f"{t.status:<14} {t.name}{detail}")
    summary = report.summary
    terminal.out(", ".join(f"{summary[k]} {k.replace('_', ' ')}" for k in summary if k != "total" and summary[k])
               or "nothing to compare")
