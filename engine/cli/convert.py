"""``store-studio convert IN [IN...] OUT``: copy models into Burnpack or SafeTensors, streaming and atomic.

Surgery flags (filters, remaps, adapters, module kinds, casts) build a recipe; ``--recipe`` loads
one and the flags extend it; ``--save-recipe`` writes the result; ``--dry-run`` prints the plan and
writes nothing. With ``--template``, the alignment against the target model is printed, and a shape
mismatch (unless ``--no-validate``) or a missing tensor (unless ``--allow-partial``) stops the
conversion with exit 3; so do decisions resting on a name alone under ``--strict``.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from .. import humanize
from ..burn_versions import CHOICES, NEWEST, parse_burn_version
from ..errors import ExportError, FormatError, RecipeError
from ..export import export
from ..formats import format_for_path, open_store
from ..locations import is_url
from ..metadata_keys import carried_fields, carried_scalars
from ..store import Store
from . import exits, progress
from .exits import UsageError

if TYPE_CHECKING:
    from ..surgery.plan import Plan
    from ..surgery.recipe import Recipe

NAME = "convert"
FORMATS = {"bpk": "burnpack", "burnpack": "burnpack", "safetensors": "safetensors"}
EXIT_MISSING = exits.VALIDATION
# The surgery's names for the flags' choices, spelled here so that a plain conversion never imports the
# surgery (a test checks them against engine.surgery's own).
ADAPTERS = ("pytorch-to-burn", "burn-to-pytorch")
CASTS = ("bf16", "f16", "f32")
# Flags that need a recipe and a plan; a conversion without any copies one file as it is, without them.
SURGERY_FLAGS = ("include", "exclude", "remap", "adapter", "contiguous_indices", "skip_enum_variants",
                 "fuse_weight_norm", "cast", "module", "strict", "template", "allow_partial", "no_validate",
                 "dry_run", "recipe", "save_recipe")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="convert model files to Burnpack or SafeTensors, with optional surgery")
    p.add_argument("paths", nargs="+", metavar="IN [IN...] OUT",
                   help="input files or http(s):// and hf:// addresses (merged in order) and the output")
    p.add_argument("--format", choices=sorted(FORMATS), help="output format (default: from OUT's extension)")
    p.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE", help="add output metadata")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_burn_version_flag(p)
    p.add_argument("--dequantize", action="store_true",
                   help="write quantized tensors as their F32 values (SafeTensors has no quantized dtype)")
    s = p.add_argument_group("surgery")
    s.add_argument("--include", action="append", default=[], metavar="REGEX", help="keep tensors matching (OR-ed)")
    s.add_argument("--exclude", action="append", default=[], metavar="REGEX", help="drop tensors matching")
    s.add_argument("--remap", action="append", nargs=2, default=[], metavar=("PATTERN", "REPLACEMENT"),
                   help="rename tensors by regex ($1 or \\1); rules apply in order")
    s.add_argument("--adapter", action="append", default=[], choices=ADAPTERS,
                   help="transpose Linear weights and rename norm parameters")
    s.add_argument("--contiguous-indices", action="store_true", help="renumber fc.0, fc.2, fc.4 as fc.0, fc.1, fc.2")
    s.add_argument("--skip-enum-variants", action="store_true", help="drop CamelCase (enum variant) path segments")
    s.add_argument("--fuse-weight-norm", action="store_true", help="fuse weight_g/weight_v into weight")
    s.add_argument("--top-level-key", metavar="KEY", help="PyTorch: read only this branch of the checkpoint")
    s.add_argument("--cast", action="append", default=[], choices=CASTS, help="cast float tensors")
    s.add_argument("--module", action="append", default=[], metavar="PATH=TYPE",
                   help="settle a module's type (Linear, Embedding, LayerNorm, RmsNorm, PRelu, EnumVariant, ...)")
    s.add_argument("--strict", action="store_true", help="refuse (exit 3) while any decision rests on a name alone")
    s.add_argument("--template", metavar="FILE", help="check the result against a file saved from the target model")
    s.add_argument("--allow-partial", action="store_true", help="with --template: convert even if tensors are missing")
    s.add_argument("--no-validate", action="store_true",
                   help="with --template: write even if shapes differ from the template's")
    s.add_argument("--clear-metadata", action="store_true", help="do not carry the sources' metadata over")
    s.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
    s.add_argument("--recipe", metavar="FILE", help="start from a saved recipe (flags add to it)")
    s.add_argument("--save-recipe", metavar="FILE", help="save the recipe these arguments make")
    progress.add_quiet_flag(p)
    p.set_defaults(run=run)


def add_burn_version_flag(p: argparse.ArgumentParser) -> None:
    """``--burn-version``: the Burn release a written Burnpack must load in (its Bool spelling and
    quantization scheme); a recipe's own choice, else the newest, when not given."""
    p.add_argument("--burn-version", choices=CHOICES, metavar="|".join(CHOICES),
                   help=f"the Burn release the output must load in (default: the recipe's, else {NEWEST.value})")


def parse_metadata(pairs: list[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--metadata wants KEY=VALUE, got {pair!r}")
        result[key] = value
    return result


def check_patterns(args: argparse.Namespace) -> None:
    """A regex typed on the command line that does not compile is a usage error (2), not a file's (1)."""
    from ..surgery.filters import compile_pattern
    from ..surgery.remap import RemapRule, compile_rules
    try:
        for flag in ("include", "exclude"):
            for pattern in getattr(args, flag):
                compile_pattern(pattern, f"--{flag}")
        compile_rules([RemapRule(p, r) for p, r in args.remap])
    except RecipeError as exc:
        raise UsageError(str(exc)) from None


def check_destination(output: str, fmt: str | None, overwrite: bool) -> None:
    """What the command line can say about OUT before any source is opened, in the flags' own words."""
    if (fmt or format_for_path(output)) is None:
        raise UsageError(f"{Path(output).name}: its extension names no format Store Studio writes (.pt and .pth "
                         "are read only); use .bpk or .safetensors, or choose with --format bpk|safetensors")
    if Path(output).exists() and not overwrite and not Path(output).is_dir():
        raise ExportError(f"{output} already exists; use --overwrite to replace it")


def parse_modules(pairs: list[str]) -> dict[str, str]:
    """``--module PATH=TYPE`` flags as module overrides; a bad one is a usage error."""
    from ..surgery.modules import parse_kind
    result = {}
    for pair in pairs:
        path, sep, kind = pair.rpartition("=")
        if not sep or not path or not kind:
            raise UsageError(f"--module wants PATH=TYPE (e.g. tokens=Embedding), got {pair!r}")
        try:
            result[path] = parse_kind(kind, path)
        except RecipeError as exc:
            raise UsageError(str(exc)) from None
    return result


def _same_file(path: str) -> str | Path:
    """What two spellings of one source share: a local file's resolved path, a URL as written."""
    return path if is_url(path) else Path(path).resolve()


def build_recipe(args: argparse.Namespace, inputs: list[str], modules: dict[str, str] | None = None) -> Recipe:
    """The recipe the arguments describe: ``--recipe``'s, extended by the flags."""
    from ..surgery import adapters as ad
    from ..surgery.filters import Filter
    from ..surgery.recipe import CAST_TARGETS, CastRule, Recipe, SourceSpec
    from ..surgery.remap import RemapRule
    check_patterns(args)
    base = Recipe.load(args.recipe) if args.recipe else Recipe()
    known = {_same_file(s.path): s for s in base.sources}
    key = args.top_level_key or base.top_level_key
    sources = tuple(known.get(_same_file(p), SourceSpec(p)) for p in inputs) if inputs else base.sources
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
        module_overrides={**base.module_overrides, **(modules or {})},
        top_level_key=key,
        metadata={**base.metadata, **parse_metadata(args.metadata)},
        allow_partial=base.allow_partial or args.allow_partial,
        clear_metadata=base.clear_metadata or args.clear_metadata,
        template=args.template or base.template,
        burn_version=parse_burn_version(args.burn_version) if args.burn_version else base.burn_version,
    )


def open_sources(recipe: Recipe, stack: ExitStack, template: str | None = None) -> list[Store]:
    """Open every source; a top-level key on a file that is not a PyTorch checkpoint is an error, not ignored.

    ``template`` also names the parameters of Burn Bin records, which have no names of their own.
    """
    return [stack.enter_context(open_source(spec.path, spec.top_level_key or recipe.top_level_key, template))
            for spec in recipe.sources]


def open_source(path: str, key: str | None, template: str | None = None) -> Store:
    """One source, opened; a top-level key on a file that is not a PyTorch checkpoint is an error."""
    options = {**({"top_level_key": key} if key else {}), **({"template": template} if template else {})}
    store = open_store(path, **options)
    if key and store.format != "pytorch":
        store.close()
        raise FormatError(store.path, f"is a {store.format} file: --top-level-key {key!r} only picks a branch of a "
                                      "PyTorch checkpoint (drop the flag)")
    return store


def run(args: argparse.Namespace) -> int:
    *inputs, output = args.paths
    if len(inputs) == 1 and not any(getattr(args, flag) for flag in SURGERY_FLAGS):
        return copy_one(args, inputs[0], output)
    return run_recipe(args, inputs, output)


def copy_one(args: argparse.Namespace, source: str, output: str) -> int:
    """One file converted as it is: what ``run_recipe`` writes for an empty recipe, without building one (the
    surgery's imports were a sixth of the command's start-up; against cp, start-up is what a conversion adds)."""
    fmt = FORMATS[args.format] if args.format else None
    check_destination(output, fmt, args.overwrite)
    fmt = fmt or format_for_path(output)
    extra = parse_metadata(args.metadata)
    version = parse_burn_version(args.burn_version) if args.burn_version else NEWEST
    with open_source(source, args.top_level_key) as store:
        metadata = {} if args.clear_metadata else carried_fields([store], fmt)
        with progress.line(args, f"writing {Path(output).name}") as report:
            # the recipe path's order: the recipe's keys first, the sources' after them, the recipe's values winning
            out = export(store.entries, output, fmt, metadata={**extra, **metadata, **extra},
                         scalars=carried_scalars([store], fmt), overwrite=args.overwrite, progress=report,
                         burn_version=version, dequantize=args.dequantize)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def run_recipe(args: argparse.Namespace, inputs: list[str], output: str) -> int:
    """A conversion through a recipe (surgery flags, ``--recipe``, several sources): planned, then written."""
    from ..surgery.plan import carried_metadata, plan
    if len(args.cast) > 1:
        raise UsageError(f"--cast given {len(args.cast)} times ({', '.join(args.cast)}): give one target")
    modules = parse_modules(args.module)
    recipe = build_recipe(args, inputs, modules)
    if not recipe.sources:
        raise UsageError("give at least one input and an output (or a --recipe with sources)")
    fmt = FORMATS[args.format] if args.format else None
    if not args.dry_run:
        check_destination(output, fmt, args.overwrite)
    if args.save_recipe:
        recipe.save(args.save_recipe)
        print(f"saved recipe {args.save_recipe}", file=sys.stderr)
    with ExitStack() as stack:
        stores = open_sources(recipe, stack, recipe.template)
        template = stack.enter_context(open_store(recipe.template)) if recipe.template else None
        result = plan(stores, recipe, template=template)
        if args.dry_run:
            print_plan(result)
        refused = refusal(result, template, args)
        if refused or args.dry_run:
            return refused
        metadata, scalars = carried_metadata(stores, recipe, fmt or format_for_path(output))
        with progress.line(args, f"writing {Path(output).name}") as report:
            out = result.export(output, fmt, metadata={**metadata, **recipe.metadata}, scalars=scalars,
                                overwrite=args.overwrite, progress=report, dequantize=args.dequantize)
    print(f"wrote {out}", file=sys.stderr)
    for guess in result.guesses:
        print(guess.line(), file=sys.stderr)
    return 0


def refusal(result: Plan, template: Store | None, args: argparse.Namespace) -> int:
    """The exit code that stops the conversion before a byte is written (0 to go on), with its reason."""
    from ..surgery.align import align
    empty = result.emptied_by()
    if empty:
        print(f"store-studio: nothing to write: {empty}", file=sys.stderr)
        return 1
    if template is not None:
        report = align(result, template)
        print("\n".join(report.lines()))
        if report.shape_mismatches and not args.no_validate:
            count = len(report.shape_mismatches)
            print(f"store-studio: {humanize.plural(count, 'tensor')} {'has' if count == 1 else 'have'} another shape "
                  "than the template's (listed above); nothing written (--no-validate writes anyway)", file=sys.stderr)
            return EXIT_MISSING
        if report.shape_mismatches and not args.dry_run:
            print(f"store-studio: --no-validate: writing {humanize.plural(len(report.shape_mismatches), 'tensor')} "
                  "whose shape differs from the template's", file=sys.stderr)
        if report.missing and not result.recipe.allow_partial:
            print(f"store-studio: {humanize.plural(len(report.missing), 'tensor')} the template wants "
                  f"{'is' if len(report.missing) == 1 else 'are'} missing (use --allow-partial to convert anyway)",
                  file=sys.stderr)
            return EXIT_MISSING
    if args.strict and result.guesses:
        for guess in [] if args.dry_run else result.guesses:  # a dry run listed them already
            print(guess.line(), file=sys.stderr)
        print(f"store-studio: --strict: {humanize.plural(len(result.guesses), 'tensor')} "
              f"{'rests' if len(result.guesses) == 1 else 'rest'} on a guess (listed above); nothing written",
              file=sys.stderr)
        return EXIT_MISSING
    return 0


def print_plan(result: Plan) -> None:
    """The plan as a user reads it: one aligned row per output tensor (name, dtype, shape, module, origin),
    its operations indented below it."""
    rows = [(t.name, str(t.dtype), humanize.shape(t.shape), f"[{t.module}]",
             "from " + (t.source_name if t.source_name == t.name else f"{t.source_name} -> {t.name}"))
            for t in result.tensors]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(4)]
    for t, row in zip(result.tensors, rows):
        print("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[4]]))
        for op in t.operations:
            print(f"    {op}")
    for d in result.dropped:
        seen = f" as {d.matched}" if d.matched and d.matched != d.name else ""
        print(f"dropped {d.name}{seen} ({d.reason})")
    for o in result.overrides:
        print(f"override {o.name}: {o.kept} replaces {o.replaced}")
    for c in result.conflicts:
        print(f"conflict: {c}")
    for h in result.rule_hits:
        print(f"rule {h.rule}: {humanize.plural(h.count, 'tensor')}")
    print(f"{humanize.plural(len(result.tensors), 'tensor')} out, {len(result.dropped)} dropped, "
          f"{humanize.plural(len(result.conflicts), 'conflict')}, {len(result.guesses)} guessed")
    for guess in result.guesses:
        print(guess.line())
