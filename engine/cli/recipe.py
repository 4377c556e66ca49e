"""``store-studio recipe FILE --as cli|rust``: a saved recipe as the command or the burn-store code replaying it."""

from __future__ import annotations

import argparse

from ..surgery.printers import as_cli, as_rust
from ..surgery.recipe import Recipe

NAME = "recipe"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="print a recipe as a convert command line or a burn-store builder chain")
    p.add_argument("file")
    p.add_argument("--as", dest="form", choices=("cli", "rust"), default="cli", help="what to print (default: cli)")
    p.add_argument("--output", default="OUT", help="the output file the printed command names (cli only)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    recipe = Recipe.load(args.file)
    print(as_cli(recipe, args.output) if args.form == "cli" else as_rust(recipe))
    return 0
