"""``store-studio recipe FILE --as cli|rust``: a saved recipe as the command or the burn-store code replaying it."""

from __future__ import annotations

import argparse
from contextlib import ExitStack

from ..errors import StoreStudioError
from ..formats import open_template
from ..formats.rust_model import is_rust_source
from ..store import Store
from ..surgery.plan import plan
from ..surgery.printers import as_cli, as_rust, needs_sources
from ..surgery.recipe import Recipe
from . import terminal
from .convert import open_sources

NAME = "recipe"
EXAMPLES = ("store-studio recipe fix.recipe.json", "store-studio recipe fix.recipe.json --as rust")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="print a recipe as a convert command line or a burn-store builder chain")
    p.add_argument("file", metavar="RECIPE", help="a recipe file (saved by convert --save-recipe or the window)")
    p.add_argument("--as", dest="form", choices=("cli", "rust"), default="cli", help="what to print (default: cli)")
    p.add_argument("--output", default="OUT", help="the output file the printed command names (cli only)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    recipe = Recipe.load(args.file)
    terminal.code(as_cli(recipe, args.output) if args.form == "cli" else rust(recipe))
    return 0


def rust(recipe: Recipe) -> str:
    """The chain; when a store lacks a step, the sources are opened so their renames can be spelled out, and a
    template that is the model's Rust source is read so that the chain names the struct it loads into."""
    with ExitStack() as stack:
        model = rust_model(recipe, stack)
        if not needs_sources(recipe):
            return as_rust(recipe, template=model)
        try:
            stores = open_sources(recipe, stack, recipe.template)
            template = model or (stack.enter_context(open_template(recipe.template, recipe.burn_version))
                                 if recipe.template else None)
            return as_rust(recipe, stores, plan(stores, recipe, template=template), template=model)
        except StoreStudioError as exc:
            terminal.err(f"note: {exc}; the steps its store cannot take are left as comments")
            return as_rust(recipe, template=model)


def rust_model(recipe: Recipe, stack: ExitStack) -> Store | None:
    """The recipe's template when it is the model's Rust source (None otherwise, or when it cannot be read: noted)."""
    if not recipe.template or not is_rust_source(recipe.template):
        return None
    try:
        return stack.enter_context(open_template(recipe.template, recipe.burn_version))
    except StoreStudioError as exc:
        terminal.err(f"note: {exc}; the chain does not name the model's struct")
        return None
