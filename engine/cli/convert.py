"""``store-studio convert IN [IN...] OUT``: copy models into Burnpack or SafeTensors, streaming and atomic.

Surgery flags (filters, remaps, adapters, module kinds, casts) build a recipe; ``--recipe`` loads
one and the flags extend it; ``--save-recipe`` writes the result (as OUT is written: atomically, an existing file
only with ``--overwrite``, never over a file the command reads); ``--dry-run`` prints the plan and
writes nothing. With ``--template``, the alignment against the target model is printed, and a shape
mismatch (unless ``--no-validate``) or a missing tensor (unless ``--allow-partial``) stops the
conversion with exit 3; so do decisions resting on a name alone under ``--strict``.
"""

from __future__ import annotations

import argparse
import os
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from .. import humanize
from ..burn_versions import CHOICES, NEWEST, BurnVersion, parse_burn_version
from ..errors import ExportError, FormatError, RecipeError
from ..exporting import export
from ..exporting.metadata import carried_fields, carried_scalars
from ..exporting.written_forms import DEFAULT_DEQUANTIZE_TO, Conversion, conversions
from ..ggml import DEQUANTIZE_TO
from ..quantize import RANGES, QuantizeSpec, quantized_choices
from ..formats import format_for_path, open_store, open_template
from ..sources.locations import Location, is_url
from ..store import Store, TensorEntry
from . import exits, progress, terminal
from .exits import UsageError
from .inspect import branches_of, top_level_key_flag

if TYPE_CHECKING:
    from ..surgery.plan import Plan
    from ..surgery.recipe import Recipe

NAME = "convert"
EXAMPLES = ("store-studio convert model.pt model.bpk --adapter pytorch-to-burn",
            "store-studio convert model.pt model.bpk --recipe fix.recipe.json --template src/model.rs")
FORMATS = {"bpk": "burnpack", "burnpack": "burnpack", "safetensors": "safetensors"}
EXIT_MISSING = exits.VALIDATION
# The surgery's names for the flags' choices, spelled here so that a plain conversion never imports the
# surgery (a test checks them against engine.surgery's own).
ADAPTERS = ("pytorch-to-burn", "burn-to-pytorch")
CASTS = ("bf16", "f16", "f32")
QUANTIZE_CHOICES = tuple(value.lower() for value in RANGES)
# Flags that need a recipe and a plan; a conversion without any copies one file as it is, without them.
SURGERY_FLAGS = ("include", "exclude", "remap", "adapter", "contiguous_indices", "skip_enum_variants",
                 "fuse_weight_norm", "cast", "module", "strict", "template", "allow_partial", "no_validate",
                 "dry_run", "recipe", "save_recipe", "fit", "quantize", "lora")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="convert model files to Burnpack or SafeTensors, with optional surgery",
                       usage="%(prog)s [options] IN [IN ...] OUT")
    p.add_argument("paths", nargs="+", metavar="IN... OUT",
                   help="one or more input files or http(s):// and hf:// addresses (merged in order), then the output")
    p.add_argument("--format", choices=sorted(FORMATS), help="output format (default: from OUT's extension)")
    p.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE", help="add output metadata")
    p.add_argument("--overwrite", action="store_true", help="replace OUT (and --save-recipe's FILE) if it exists")
    p.add_argument("-v", "--verbose", action="store_true", help="list every guessed tensor, not one line per kind")
    add_burn_version_flag(p)
    p.add_argument("--dequantize", action="store_true",
                   help="write quantized tensors as their F32 values (SafeTensors has no quantized dtype); GGUF's "
                        "Q8_0 and Q4_0 too, which a Burnpack otherwise keeps quantized")
    p.add_argument("--dequantize-to", choices=tuple(DEQUANTIZE_TO), default=DEFAULT_DEQUANTIZE_TO,
                   help="the float type GGUF tensors Burn cannot hold quantized are written as (default: f16)")
    q = p.add_argument_group("quantization (Burnpack only)")
    q.add_argument("--quantize", choices=QUANTIZE_CHOICES, type=str.lower,
                   help="quantize float weights as Burn's quantize_dynamic does (min-max, symmetric, per block)")
    q.add_argument("--block", type=int, default=32, metavar="N", help="values per block, along the last dimension "
                   "(default: 32)")
    q.add_argument("--modules", metavar="KIND,...", help="quantize the float tensors of these module kinds (default: "
                   "weights of 2+ dimensions outside norms and embeddings)")
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
    s.add_argument("--lora", action="append", default=[], metavar="ADAPTER",
                   help="merge a PEFT LoRA adapter (its folder, or adapter_model.safetensors) into the first input; "
                        "repeat for several, merged in order")
    s.add_argument("--lora-scale", action="append", default=[], type=float, metavar="S",
                   help="the scale of the --lora given at the same place (default 1.0)")
    s.add_argument("--cast", action="append", default=[], choices=CASTS, help="cast float tensors")
    s.add_argument("--module", action="append", default=[], metavar="PATH=TYPE",
                   help="settle a module's type (Linear, Embedding, LayerNorm, RmsNorm, PRelu, EnumVariant, ...)")
    s.add_argument("--strict", action="store_true", help="refuse (exit 3) while any decision rests on a name alone, "
                   "or a GGUF tensor would be dequantized")
    s.add_argument("--template", metavar="FILE",
                   help="check the result against a file saved from the target model, or its Rust source (model.rs "
                        "or the crate's src/, ::Struct to name the model)")
    s.add_argument("--allow-partial", action="store_true", help="with --template: convert even if tensors are missing")
    s.add_argument("--no-validate", action="store_true",
                   help="with --template: write even if shapes differ from the template's")
    s.add_argument("--fit", action="store_true",
                   help="with --template: first make the recipe changes that load the most of its tensors (printed)")
    s.add_argument("--clear-metadata", action="store_true", help="do not carry the sources' metadata over")
    s.add_argument("--dry-run", action="store_true", help="print the plan; write nothing")
    s.add_argument("--recipe", metavar="FILE", help="start from a saved recipe (flags add to it)")
    s.add_argument("--save-recipe", metavar="FILE", help="save the recipe these arguments make")
    progress.add_quiet_flag(p)
    p.set_defaults(run=run)


def add_burn_version_flag(p: argparse.ArgumentParser, default: str = f"default: the recipe's, else {NEWEST.value}"
                          ) -> None:
    """``--burn-version``: the Burn release a written Burnpack must load in (its Bool spelling and
    quantization scheme); ``default`` says what applies when it is not given."""
    p.add_argument("--burn-version", choices=CHOICES, metavar="|".join(CHOICES),
                   help=f"the Burn release the output must load in ({default})")


def parse_metadata(pairs: list[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--metadata wants KEY=VALUE, got {pair!r}")
        result[key] = value
    return result


def check_patterns(args: argparse.Namespace) -> None:
    """A regex on the command line that burn-store's regex refuses, or that cannot be matched as it would
    (``engine.rust_regex``), is a usage error (2), not a file's (1); so are patterns past the budget together."""
    from ..rust_regex import pattern_budget
    from ..surgery.filters import compile_pattern
    from ..surgery.remap import RemapRule, compile_rules
    try:
        with pattern_budget():
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
    from ..surgery.recipe import CAST_TARGETS, CastRule, LoraSpec, Recipe, SourceSpec
    from ..surgery.remap import RemapRule
    check_patterns(args)
    base = Recipe.load(args.recipe) if args.recipe else Recipe()
    known = {_same_file(s.path): s for s in base.sources}
    key = args.top_level_key or base.top_level_key
    sources = tuple(known.get(_same_file(p), SourceSpec(p)) for p in inputs) if inputs else base.sources
    if args.lora:
        if len(args.lora_scale) > len(args.lora):
            raise UsageError(f"{len(args.lora_scale)} --lora-scale for {len(args.lora)} --lora: give each scale after "
                             "its adapter")
        from dataclasses import replace  # here: a plain conversion imports no dataclasses
        scales = [*args.lora_scale, *[1.0] * (len(args.lora) - len(args.lora_scale))]
        first = sources[0]
        sources = (replace(first, lora=first.lora + tuple(LoraSpec(a, s) for a, s in zip(args.lora, scales))),
                   *sources[1:])
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
    from ..lora import with_adapters  # only a recipe with adapters opens them
    return [stack.enter_context(with_adapters(open_source(spec.path, spec.top_level_key or recipe.top_level_key,
                                                          template), [(a.path, a.scale) for a in spec.lora]))
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
    if not args.quantize and (args.modules or args.block != 32):
        raise UsageError("--block and --modules say how to --quantize: give --quantize q8s|q4s|q2s too")
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
        say_conversions(store.entries, fmt, version, args)
        metadata = {} if args.clear_metadata else carried_fields([store], fmt)
        with progress.line(args, f"writing {Path(output).name}") as report:
            # the recipe path's order: the recipe's keys first, the sources' after them, the recipe's values winning
            out = export(store.entries, output, fmt, metadata={**extra, **metadata, **extra},
                         scalars=carried_scalars([store], fmt), overwrite=args.overwrite, progress=report,
                         burn_version=version, dequantize=args.dequantize, dequantize_to=args.dequantize_to)
        terminal.err(f"wrote {out}")
        say_included(store)
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
    if args.fit and not recipe.template:
        raise UsageError("--fit fits the recipe to a target model: give --template FILE (or a --recipe that names one)")
    fmt = FORMATS[args.format] if args.format else None
    check_quantize_flags(args, fmt or format_for_path(output))
    if not args.dry_run:
        check_destination(output, fmt, args.overwrite)
    named = [output, *([args.recipe] if args.recipe else [])]  # besides the recipe's own sources and template
    if args.save_recipe:
        recipe.check_destination(args.save_recipe, overwrite=args.overwrite, keep=named)
    with ExitStack() as stack:
        stores = open_sources(recipe, stack, recipe.template)
        say_merged(stores)
        template = stack.enter_context(open_template(recipe.template, recipe.burn_version)) if recipe.template else None
        if args.fit:
            recipe, stores = fitted(recipe, stores, template, output, stack)
        if args.save_recipe:
            save_recipe(recipe, args, [*named, *files_of([*stores, template])])
        result = plan(stores, recipe, template=template)
        if args.dry_run:
            print_plan(result, args)
        refused = refusal(result, template, args, fmt or format_for_path(output))
        if refused or args.dry_run:
            return refused
        metadata, scalars = carried_metadata(stores, recipe, fmt or format_for_path(output))
        quantize = say_quantized(result, args)
        with progress.line(args, f"writing {Path(output).name}") as report:
            out = result.export(output, fmt, metadata={**metadata, **recipe.metadata}, scalars=scalars,
                                overwrite=args.overwrite, progress=report, dequantize=args.dequantize,
                                dequantize_to=args.dequantize_to, quantize=quantize)
        terminal.err(f"wrote {out}")
        written = {id(entry) for tensor in result.tensors for entry in tensor.inputs}
        for store in stores:
            say_included(store, [e for e in store.entries if id(e) in written], len(stores) > 1)
    for line in guess_lines(result, args):
        terminal.err(line)
    return 0


def guess_lines(result: Plan, args: argparse.Namespace) -> list[str]:
    """Each guess (``-v``), else one line per decision and reason with its count."""
    from ..surgery.guesses import grouped_lines  # the surgery is loaded by now: only a plan has guesses
    return [g.line() for g in result.guesses] if args.verbose else grouped_lines(result.guesses)


def say_merged(stores: Iterable[Store]) -> None:
    """One stderr line per LoRA adapter merged into a source: which, with what scale, into how many tensors."""
    from ..lora import adapter_name
    for store in stores:
        for adapter in getattr(store, "lora", ()):
            terminal.err(f"{adapter_name(adapter.path)}: LoRA merged into {humanize.plural(len(adapter.tensors), 'tensor')} of "
                         f"{store.path.name} (scale {adapter.scale:g})")


def say_included(store: Store, written: Iterable[TensorEntry] | None = None, named: bool = False) -> None:
    """A training checkpoint converted whole (burn-store's semantics, kept) says in one line what went in beside
    the model weights (its ``written`` tensors: all by default), and the ``--top-level-key`` that leaves it out."""
    found = branches_of(store, written)
    if found is None:
        return
    besides = ", ".join(f"{b.key} ({b.amount()})" for b in found.besides_weights)
    if found.weights is None:
        text = f"included {len(found.branches)} top-level branches: {besides} — --top-level-key KEY reads one alone"
    else:
        text = (f"included beside the model weights: {besides} — {top_level_key_flag(found.weights.key)} converts "
                "the weights alone")
    terminal.err(f"{store.path.name}: {text}" if named else text)


def fitted(recipe: Recipe, stores: list[Store], template: Store, output: str,
           stack: ExitStack) -> tuple[Recipe, list[Store]]:
    """``--fit``: the recipe with the chain of changes that makes the most of the template's tensors load
    (engine ``fit``), printed as the command that replays it and one line per change, and the sources as its
    plan reads them (opened again at a top-level key the chain reads)."""
    from ..surgery.printers import as_cli
    from ..surgery.suggestions import fit, reopen_at_key
    made = fit(stores, recipe, template, template=template, reopen=reopen_at_key)
    if not made.steps:
        done = made.report.ok and not made.report.dtype_differences
        terminal.out("fit: nothing to change: every tensor the template wants loads" if done else
                     "fit: no change makes more of the template's tensors load")
        return recipe, stores
    terminal.code(f"fit: {as_cli(made.recipe, output)}")
    for step in made.steps:
        terminal.out(step.line("fit"))
    if made.recipe.top_level_key != recipe.top_level_key:
        stores = open_sources(made.recipe, stack, made.recipe.template)
    return made.recipe, stores


def files_of(stores: Iterable[Store | None]) -> list[Location]:
    """Every file the open stores read: a sharded checkpoint's index and each of its shards."""
    return [file for store in stores if store is not None for file in store.files]


def save_recipe(recipe: Recipe, args: argparse.Namespace, keep: Iterable[str | os.PathLike]) -> None:
    """``--save-recipe FILE``, once the sources are open: checked again with their shards among the files
    (``keep``) it must never replace, then written atomically (``--overwrite`` replaces an existing FILE)."""
    recipe.save(args.save_recipe, overwrite=args.overwrite, keep=keep)
    terminal.err(f"saved recipe {args.save_recipe}")


def refusal(result: Plan, template: Store | None, args: argparse.Namespace, fmt: str | None) -> int:
    """The exit code that stops the conversion before a byte is written (0 to go on), with its reason."""
    from ..surgery.align import align
    empty = result.emptied_by()
    if empty:
        terminal.err(f"store-studio: nothing to write: {empty}")
        return 1
    if template is not None:
        report = align(result, template)
        for line in report.lines():
            terminal.out(line)
        if report.shape_mismatches and not args.no_validate:
            count = len(report.shape_mismatches)
            terminal.err(f"store-studio: {humanize.plural(count, 'tensor')} {'has' if count == 1 else 'have'} another "
                         "shape than the template's (listed above); nothing written (--no-validate writes anyway)")
            return EXIT_MISSING
        if report.shape_mismatches and not args.dry_run:
            count = len(report.shape_mismatches)
            terminal.err(f"store-studio: --no-validate: writing {humanize.plural(count, 'tensor')} whose shape "
                         "differs from the template's")
        if report.missing and not result.recipe.allow_partial:
            terminal.err(f"store-studio: {humanize.plural(len(report.missing), 'tensor')} the template wants "
                         f"{'is' if len(report.missing) == 1 else 'are'} missing (use --allow-partial to convert "
                         "anyway)")
            return EXIT_MISSING
    changed = say_conversions(result.tensors, fmt, result.recipe.burn_version, args)
    if args.strict and changed:
        terminal.err(f"store-studio: --strict: {humanize.plural(sum(c.count for c in changed), 'GGUF tensor')} "
                     "would be dequantized (listed above); nothing written")
        return EXIT_MISSING
    if args.strict and result.guesses:
        for line in [] if args.dry_run else guess_lines(result, args):  # a dry run listed them already
            terminal.err(line)
        terminal.err(f"store-studio: --strict: {humanize.plural(len(result.guesses), 'tensor')} "
                     f"{'rests' if len(result.guesses) == 1 else 'rest'} on a guess (listed above); nothing written")
        return EXIT_MISSING
    return 0


def say_conversions(items: Iterable[TensorEntry], fmt: str | None, version: BurnVersion,
                    args: argparse.Namespace) -> list[Conversion]:
    """One stderr line per GGML type the export keeps quantized or dequantizes; the dequantized ones returned."""
    found = conversions(list(items), fmt, version, args.dequantize, args.dequantize_to)
    for conversion in found:
        terminal.err(conversion.line())
    return [c for c in found if not c.kept]


def check_quantize_flags(args: argparse.Namespace, fmt: str | None) -> None:
    """``--quantize`` writes a Burnpack, never with ``--dequantize``; a block Burn can store; known module kinds."""
    if not args.quantize:
        return
    if fmt != "burnpack":
        raise UsageError("--quantize writes Burn's quantization, which only a Burnpack (.bpk) holds")
    if args.dequantize:
        raise UsageError("--quantize and --dequantize ask opposite things: give one")
    if not 1 <= args.block <= 255:
        raise UsageError(f"--block {args.block}: Burn stores a block of 1 to 255 values")
    from ..surgery.modules import KINDS, parse_kind
    modules = []
    for kind in args.modules.split(",") if args.modules else ():
        try:
            modules.append(parse_kind(kind, "--modules"))
        except RecipeError:
            raise UsageError(f"--modules: unknown module kind {kind.strip()!r} (one of {', '.join(KINDS)})") from None
    args.modules = tuple(modules)


def say_quantized(result: Plan, args: argparse.Namespace) -> QuantizeSpec | None:
    """The ``--quantize`` spec, after one stderr line for what it quantizes and one per reason it leaves a
    selected tensor as it is."""
    if not args.quantize:
        return None
    spec = QuantizeSpec(args.quantize.upper(), args.block, args.modules)
    chosen, refused = quantized_choices(result.tensors, spec)
    terminal.err(f"{humanize.plural(len(chosen), 'tensor')} quantized as Burn's {spec.describe(result.recipe.burn_version)}")
    for reason, names in refused.items():
        terminal.err(f"left as {'they are' if len(names) > 1 else 'it is'}: {_some(names)} ({reason})")
    if chosen:  # which ones: the default choice rests on module kinds read from names and shapes
        how = "" if spec.modules else "; --modules KIND,... chooses by kind outright"
        terminal.err(f"quantized: {_some(chosen, 8)}{how}")
    return spec


def _some(names: list[str], most: int = 3) -> str:
    """``a, b, c and 12 more``."""
    return ", ".join(names[:most]) + (f" and {len(names) - most:,} more" if len(names) > most else "")


def print_plan(result: Plan, args: argparse.Namespace) -> None:
    """The plan as a user reads it: one aligned row per output tensor (name, dtype, shape, module, origin),
    its operations indented below it."""
    rows = [(t.name, str(t.dtype), humanize.shape(t.shape), f"[{t.module}]",
             "from " + (t.source_name if t.source_name == t.name else f"{t.source_name} -> {t.name}"))
            for t in result.tensors]
    for t, line in zip(result.tensors, terminal.aligned(rows)):
        terminal.out(line)
        for op in t.operations:
            terminal.out(f"    {op}")
    for d in result.dropped:
        seen = f" as {d.matched}" if d.matched and d.matched != d.name else ""
        terminal.out(f"dropped {d.name}{seen} ({d.reason})")
    for o in result.overrides:
        terminal.out(f"override {o.name}: {o.kept} replaces {o.replaced}")
    for c in result.conflicts:
        terminal.out(f"conflict: {c}")
    for h in result.rule_hits:
        terminal.out(f"rule {h.rule}: {humanize.plural(h.count, 'tensor')}")
    terminal.out(f"{humanize.plural(len(result.tensors), 'tensor')} out, {len(result.dropped)} dropped, "
                 f"{humanize.plural(len(result.conflicts), 'conflict')}, {len(result.guesses)} guessed")
    for line in guess_lines(result, args):
        terminal.out(line)
