"""``store-studio recipe FILE --as cli|rust``: a saved recipe as the command or the burn-store code replaying it."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack

from ..errors import StoreStudioError
from ..formats import open_store
from ..surgery.plan import plan
from ..surgery.printers import as_cli, as_rust, needs_sources
from ..surgery.recipe import Recipe
from .convert import open_sources

NAME = "recipe"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="print a recipe as a convert command line or a burn-store builder chain")
    p.add_argument("file")
    p.add_argument("--as", dest="form", choices=("cli", "rust"), default="cli", help="what to print (default: cli)")
    p.add_argument("--output", default="OUT", help="the output file the printed command names (cli only)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    recipe = Recipe.load(args.file)
    print(as_cli(recipe, args.output) if args.form == "cli" else rust(recipe))
    return 0


def rust(recipe: Recipe) -> str:
    """The chain; when a store lacks a step, the sources are opened so their renames can be spelled out."""
    if not needs_sources(recipe):
        return as_rust(recipe)
    try:
        with ExitStack() as stack:
            stores = open_sources(recipe, stack, recipe.template)
            template = stack.enter_context(open_store(recipe.template)) if recipe.template else None
            return as_rust(recipe, stores, plan(stores, recipe, template=template))
    except StoreStudioError as exc:
        print(f"note: {exc}; the steps its store cannot take are left as comments", file=sys.stderr)
        return as_rust(recipe)
