"""``store-studio convert IN [IN...] OUT``: copy models into Burnpack or SafeTensors, streaming and atomic.

Surgery flags (filters, remaps, adapters, casts) build a recipe; ``--recipe`` loads one and the
flags extend it; ``--save-recipe`` writes the result; ``--dry-run`` prints the plan and writes
nothing. With ``--template``, the alignment against the target model is printed and missing
tensors stop the conversion (exit 3) unless ``--allow-partial``.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack

from ..errors import ExportError
from ..formats import burn_record, format_for_path, open_store
from ..store import Store
from ..surgery import adapters as ad
from ..surgery.align import align
from ..surgery.filters import Filter
from ..surgery.plan import Plan, plan
from ..surgery.recipe import CAST_TARGETS, CastRule, Recipe, SourceSpec
from ..surgery.remap import RemapRule

NAME = "convert"
FORMATS = {"bpk": "burnpack", "burnpack": "burnpack", "safetensors": "safetensors"}
EXIT_MISSING = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="convert model files to Burnpack or SafeTensors, with optional surgery")
    p.add_argument("paths", nargs="+", metavar="IN [IN...] OUT", help="input files (merged in order) and the output")
    p.add_argument("--format", choices=sorted(FORMATS), help="output format (default: from OUT's extension)")
    p.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE", help="add output metadata")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    s = p.add_argument_group("surgery")
    s.add_argument("--include", action="append", default=[], metavar="REGEX", help="keep tensors matching (OR-ed)")
    s.add_argument("--exclude", action="append", default=[], metavar="REGEX", help="drop tensors matching")
    s.add_argument("--remap", action="append", nargs=2, default=[], metavar=("PATTERN", "REPLACEMENT"),
                   help="rename tensors by regex ($1 or \\1); rules apply in order")
    s.add_argument("--adapter", action="append", default=[], choices=[ad.PYTORCH_TO_BURN, ad.BURN_TO_PYTORCH],
                   help="transpose Linear weights and rename norm parameters")
    s.add_argument("--contiguous-indices", action="store_true", help="renumber fc.0, fc.2, fc.4 as fc.0, fc.1, fc.2")
    s.add_argument("--skip-enum-variants", action="store_true", help="drop CamelCase (enum variant) path segments")
    s.add_argument("--fuse-weight-norm", action="store_true", help="fuse weight_g/weight_v into weight")
    s.add_argument("--top-level-key", metavar="KEY", help="PyTorch: read only this branch of the checkpoint")
    s.add_argument("--cast", action="append", default=[], choices=sorted(CAST_TARGETS), help="cast float tensors")
    s.add_argument("--template", metavar="FILE", help="check the result against a file saved from the target model")
    s.add_argument("--allow-partial", action="store_true", help="with --template: convert even if tensors are missing")
    s.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
    s.add_argument("--recipe", metavar="FILE", help="start from a saved recipe (flags add to it)")
    s.add_argument("--save-recipe", metavar="FILE", help="save the recipe these arguments make")
    p.set_defaults(run=run)


def parse_metadata(pairs: list[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ExportError(f"--metadata wants KEY=VALUE, got {pair!r}")
        result[key] = value
    return result


def build_recipe(args: argparse.Namespace, inputs: list[str]) -> Recipe:
    """The recipe the arguments describe: ``--recipe``'s, extended by the flags."""
    base = Recipe.load(args.recipe) if args.recipe else Recipe()
    known = {s.path: s for s in base.sources}
    key = args.top_level_key or base.top_level_key
    sources = tuple(known.get(path, SourceSpec(path)) for path in inputs) if inputs else base.sources
    adapters = list(base.adapters)
    wanted = [*args.adapter, *([ad.CONTIGUOUS_INDICES] if args.contiguous_indices else []),
              *([ad.SKIP_ENUM_VARIANTS] if args.skip_enum_variants else []),
              *([ad.FUSE_WEIGHT_NORM] if args.fuse_weight_norm else [])]
    adapters += [a for a in wanted if a not in adapters]
    f = base.filter
    return base.with_changes(
        sources=sources,
        filter=Filter(f.include + tuple(args.include), f.full_paths, f.where, f.exclude + tuple(args.exclude)),
        remaps=base.remaps + tuple(RemapRule(p, r) for p, r in args.remap),
        adapters=tuple(adapters),
        casts=base.casts + tuple(CastRule(CAST_TARGETS[c]) for c in args.cast),
        top_level_key=key,
        metadata={**base.metadata, **parse_metadata(args.metadata)},
        allow_partial=base.allow_partial or args.allow_partial,
    )


def open_sources(recipe: Recipe, stack: ExitStack, template: str | None = None) -> list[Store]:
    """``template`` also names the parameters of Burn Bin records, which have no names of their own."""
    stores = []
    for spec in recipe.sources:
        key = spec.top_level_key or recipe.top_level_key
        options = {**({"top_level_key": key} if key else {}), **({"template": template} if template else {})}
        stores.append(stack.enter_context(open_store(spec.path, **options)))
    return stores


def run(args: argparse.Namespace) -> int:
    *inputs, output = args.paths
    recipe = build_recipe(args, inputs)
    if not recipe.sources:
        print("store-studio convert: give at least one input and an output (or a --recipe with sources)",
              file=sys.stderr)
        return 2
    if args.save_recipe:
        recipe.save(args.save_recipe)
        print(f"saved recipe {args.save_recipe}", file=sys.stderr)
    fmt = FORMATS[args.format] if args.format else None
    with ExitStack() as stack:
        stores = open_sources(recipe, stack, args.template)
        template = stack.enter_context(open_store(args.template)) if args.template else None
        result = plan(stores, recipe, template=template)
        if args.dry_run:
            print_plan(result)
        if template is not None:
            report = align(result, template)
            print("\n".join(report.lines()))
            if report.missing and not recipe.allow_partial:
                print(f"store-studio: {len(report.missing)} tensor(s) the template wants are missing "
                      "(use --allow-partial to convert anyway)", file=sys.stderr)
                return EXIT_MISSING
        if args.dry_run:
            return 0
        only = stores[0] if len(stores) == 1 else None
        # a Burn record's metadata (burn.version, ...) and optimizer scalars carry over to the migrated file
        carried = only is not None and only.format in (fmt or format_for_path(output), burn_record.NAME)
        base = dict(only.metadata) if carried else {}
        base.pop("producer", None)
        out = result.export(output, fmt, metadata={**base, **recipe.metadata},
                            scalars=only.scalars if carried else None, overwrite=args.overwrite)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def print_plan(result: Plan) -> None:
    """The plan as a user reads it: each output tensor, where it comes from and what happens to it."""
    for t in result.tensors:
        origin = f"{t.source_name}" if t.source_name == t.name else f"{t.source_name} -> {t.name}"
        print(f"{t.name}  {t.dtype} {list(t.shape)}  [{t.module}]  from {origin}")
        for op in t.operations:
            print(f"    {op}")
    for d in result.dropped:
        print(f"dropped {d.name} ({d.reason})")
    for o in result.overrides:
        print(f"override {o.name}: {o.kept} replaces {o.replaced}")
    for c in result.conflicts:
        print(f"conflict: {c}")
    for h in result.rule_hits:
        print(f"rule {h.rule}: {h.count} tensor(s)")
    print(f"{len(result.tensors)} tensors out, {len(result.dropped)} dropped, {len(result.conflicts)} conflicts")
