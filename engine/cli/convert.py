"""``store-studio convert IN OUT``: copy a model into Burnpack or SafeTensors, streaming and atomic."""

from __future__ import annotations

import argparse
import sys

from ..errors import ExportError
from ..export import export
from ..formats import format_for_path, open_store

NAME = "convert"
FORMATS = {"bpk": "burnpack", "burnpack": "burnpack", "safetensors": "safetensors"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="convert a model file to Burnpack or SafeTensors")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--format", choices=sorted(FORMATS), help="output format (default: from OUT's extension)")
    p.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE", help="add output metadata")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    p.set_defaults(run=run)


def parse_metadata(pairs: list[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ExportError(f"--metadata wants KEY=VALUE, got {pair!r}")
        result[key] = value
    return result


def run(args: argparse.Namespace) -> int:
    fmt = FORMATS[args.format] if args.format else None
    metadata = parse_metadata(args.metadata)
    with open_store(args.input) as store:
        same_format = store.format == (fmt or format_for_path(args.output))
        base = dict(store.metadata) if same_format else {}
        base.pop("producer", None)
        out = export(store.entries, args.output, fmt, metadata={**base, **metadata},
                     scalars=store.scalars if same_format else None, overwrite=args.overwrite)
    print(f"wrote {out}", file=sys.stderr)
    return 0

