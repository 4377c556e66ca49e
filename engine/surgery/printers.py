"""A recipe printed back as the command that replays it, or as the burn-store builder chain.

The Rust chain is what a Burn programmer pastes into their loader, and it must compile against the
recipe's target Burn release: it calls only what that store type has at that version
(``burn_store_api``, read from Burn's source). A step the store cannot take is spelled out where the
file's own names allow it (renumbering and enum-variant skipping on ``BurnpackStore`` become explicit
remap patterns when the sources are at hand) and is otherwise a ``// left to do:`` comment saying exactly
what remains; Store Studio's own extras (weight-norm fusion, dtype/shape predicates, module overrides)
are ``// Store Studio only:`` comments, so nothing a recipe does is silently lost.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Sequence

from ..burn_versions import NEWEST, BurnVersion
from ..humanize import plural, printable
from ..store import Store
from ..tree import parse_index
from . import adapters as ad
from . import burn_store_api as api
from .burn_store_api import TAGS
from .filters import Filter
from .modules import ENUM_VARIANT
from .ops import FuseSplit, Rename, SplitFused
from .plan import Plan
from .recipe import CAST_TARGETS, CastRule, Recipe, SourceSpec
from .remap import compile_rules, remap_name, rust_replacement

_CAST_FLAGS = {v: k for k, v in CAST_TARGETS.items()}
_ADAPTER_FLAGS = {ad.CONTIGUOUS_INDICES: "--contiguous-indices", ad.SKIP_ENUM_VARIANTS: "--skip-enum-variants",
                  ad.FUSE_WEIGHT_NORM: "--fuse-weight-norm"}


def as_cli(recipe: Recipe, output: str = "OUT") -> str:
    """The ``store-studio convert`` line doing what ``recipe`` does."""
    args = ["store-studio", "convert", *(s.path for s in recipe.sources), output]
    for adapter in recipe.sources[0].lora if recipe.sources else ():
        args += ["--lora", adapter.path, *(["--lora-scale", f"{adapter.scale:g}"] if adapter.scale != 1.0 else [])]
    key = recipe.top_level_key or next((s.top_level_key for s in recipe.sources if s.top_level_key), None)
    if key:
        args += ["--top-level-key", key]
    args += _filter_args(recipe.filter)
    for rule in recipe.remaps:
        args += ["--remap", rule.pattern, rule.replacement]
    for adapter in recipe.adapters:
        args += [_ADAPTER_FLAGS[adapter]] if adapter in _ADAPTER_FLAGS else ["--adapter", adapter]
    for cast in recipe.casts:
        args += ["--cast", _CAST_FLAGS[cast.to]]
    for path, kind in recipe.module_overrides.items():
        args += ["--module", f"{path}={kind}"]
    for key, value in recipe.metadata.items():
        args += ["--metadata", f"{key}={value}"]
    if recipe.clear_metadata:
        args.append("--clear-metadata")
    if recipe.template:
        args += ["--template", recipe.template]
    if recipe.allow_partial:
        args.append("--allow-partial")
    if recipe.burn_version is not NEWEST:
        args += ["--burn-version", recipe.burn_version.value]
    line = " ".join(_shell_word(a) for a in args)
    if _needs_recipe_file(recipe):
        line += ("  # predicates, casts by module, per-source filters, rotary rows or adapters on a later source "
                 "need --recipe FILE")
    return line


def _shell_word(word: str) -> str:
    r"""``word`` as bash reads it back: single-quoted, or ``$'...'`` with its hidden characters escaped
    (``$'a\n\033[2J'``, as ``ls`` quotes such a name) so that the printed line holds no control character."""
    if word.isprintable():
        return shlex.quote(word)
    return "$'" + printable(word).replace("'", "\\'") + "'"


def _filter_args(f: Filter) -> list[str]:
    args: list[str] = []
    for pattern in f.include:
        args += ["--include", pattern]
    for path in f.full_paths:
        args += ["--include", "^" + rust_escape(path) + "$"]
    for pattern in f.exclude:
        args += ["--exclude", pattern]
    return args


def _needs_recipe_file(recipe: Recipe) -> bool:
    return bool(recipe.filter.where or recipe.rotary_rows or any(s.lora for s in recipe.sources[1:])
                or any(c.modules for c in recipe.casts) or len(recipe.casts) > 1
                or any(not s.filter.is_empty for s in recipe.sources)
                or len({s.top_level_key or recipe.top_level_key for s in recipe.sources}) > 1)


def as_rust(recipe: Recipe, stores: Sequence[Store] | None = None, planned: Plan | None = None,
            template: Store | None = None) -> str:
    """The burn-store builder chain(s) for ``recipe.burn_version``: one store per source, loaded in order.

    ``stores`` (the recipe's sources, opened as the plan reads them) and ``planned`` (their plan) let
    steps a store cannot take be printed as that file's explicit renames; without them they are comments.
    A ``template`` read from the model's Rust source names the struct ``model`` is.
    """
    compile_rules(recipe.remaps)  # a chain holds only patterns Rust's regex takes (a Filter checks its own)
    sources = recipe.sources or (SourceSpec("model.pt"),)
    chains = [_RustChain(recipe, spec, _store_type(spec.path)) for spec in sources]
    for index, chain in enumerate(chains):
        chain.build(stores[index] if stores is not None and index < len(stores) else None, planned)
    notes = _rust_notes(recipe)
    body = "\n\n".join(chain.text() for chain in chains)
    uses = sorted({name for chain in chains for name in chain.uses})
    head = f"// burn-store {TAGS[recipe.burn_version].lstrip('v')} (Burn {recipe.burn_version.value})\n"
    head += f"use burn_store::{{{', '.join(uses)}}};\n"
    if any(chain.uses_dtype for chain in chains):
        head += "use burn::tensor::DType;\n"
    head += _target(template)
    return head + body + ("\n" + "\n".join(notes) if notes else "")


def _target(template: Store | None) -> str:
    """``// model: Net<B> ...``: the struct a template read from Rust source is, so the chain says what it loads."""
    from ..formats.rust_model.template_store import RustTemplate  # here: printing a chain needs no Rust reader
    if not isinstance(template, RustTemplate):
        return ""
    model = template.model
    return (f"// model: {model.rust_type}, the struct {model.root.name} at {printable(model.root.where)} "
            f"(the template), as your code builds it\n")


def needs_sources(recipe: Recipe) -> bool:
    """Whether the chain spells out renames only the sources' names can give (a step a source's store lacks)."""
    steps = ad.CONTIGUOUS_INDICES in recipe.adapters or ad.SKIP_ENUM_VARIANTS in recipe.adapters \
        or ENUM_VARIANT in recipe.module_overrides.values()
    return steps and any(_store_type(s.path) == api.BURNPACK for s in recipe.sources)


def _store_type(path: str) -> str:
    return {".bpk": api.BURNPACK, ".safetensors": api.SAFETENSORS}.get(Path(path).suffix.lower(), api.PYTORCH)


class _RustChain:
    """One store's builder chain, built call by call against that store's methods at the target version."""

    def __init__(self, recipe: Recipe, spec: SourceSpec, store: str):
        self.recipe = recipe
        self.spec = spec
        self.store = store
        self.api = api.store_api(store, recipe.burn_version)
        self.calls: list[str] = []
        self.comments: list[str] = []
        self.uses = {"ModuleSnapshot", store}
        self.uses_dtype = False

    def call(self, method: str, args: str) -> None:
        """Add ``.method(args)``; every call goes through here, so none the store lacks can be printed."""
        if not self.api.has(method):
            raise AssertionError(f"{self.store} has no {method} in Burn {self.recipe.burn_version.value}")
        self.calls.append(f".{method}({args})")

    def left_to_do(self, what: str) -> None:
        self.comments.append(f"// left to do: {printable(what)}")  # a name's newline would end the comment

    def build(self, store: Store | None, planned: Plan | None) -> None:
        recipe, adapters = self.recipe, self.recipe.adapters
        key = self.spec.top_level_key or recipe.top_level_key
        if key and self.store == api.PYTORCH:
            self.call("with_top_level_key", _rust_str(key))
        self._filter(recipe.filter)
        remap = "with_remap_pattern" if self.store == api.BURNPACK else "with_key_remapping"
        for rule in recipe.remaps:
            self.call(remap, f"{_rust_str(rule.pattern)}, {_rust_str(rust_replacement(rule.replacement))}")
        self._renumbering(store)
        self._enum_variants(planned)
        self._adapters()
        self._fused_modules(planned)
        if recipe.allow_partial:
            self.call("allow_partial", "true")
        if self.store == api.PYTORCH and ad.PYTORCH_TO_BURN not in adapters:
            self.comments.insert(0, "// differs: PytorchStore always applies PyTorchToBurnAdapter (transposes Linear "
                                    "weights, renames norms); this recipe does not")

    def _filter(self, f: Filter) -> None:
        """burn-store ORs every filter rule, so exclusions go into one predicate holding the whole filter."""
        regex, full_path = "with_regex", "with_full_path"
        if not f.exclude:
            for pattern in f.include:
                self.call(regex, _rust_str(pattern))
            for path in f.full_paths:
                self.call(full_path, _rust_str(path))
            return
        keep = " || ".join([f"regex::Regex::new({_rust_str(p)}).unwrap().is_match(path)" for p in f.include]
                           + [f"path == {_rust_str(p)}" for p in f.full_paths]) or "true"
        drop = " || ".join(f"regex::Regex::new({_rust_str(p)}).unwrap().is_match(path)" for p in f.exclude)
        predicate = f"|path, _| ({keep}) && !({drop})"
        if self.api.has("with_predicate"):
            self.call("with_predicate", predicate)
        else:  # BurnpackStore: a PathFilter holding the predicate (filter.rs:107 at every tag)
            self.uses.add("PathFilter")
            self.call("with_filter", f"PathFilter::new().with_predicate({predicate})")

    def _renumbering(self, store: Store | None) -> None:
        wanted = ad.CONTIGUOUS_INDICES in self.recipe.adapters
        if self.api.has("map_indices_contiguous"):
            if wanted != (self.store == api.PYTORCH):  # PytorchStore renumbers by default, the others do not
                self.call("map_indices_contiguous", str(wanted).lower())
            return
        if not wanted:
            return
        if store is None:
            self.left_to_do(f"renumber indices contiguously ({self.store} cannot in Burn {self.recipe.burn_version.value}; "
                            f"print this chain with the sources at hand to get the renames spelled out)")
            return
        renames = _renumbered(store, self.recipe)
        self.comments.append(f"// contiguous indices, which {self.store} cannot do, as this file's {plural(len(renames), 'rename')}")
        self._explicit(renames)

    def _enum_variants(self, planned: Plan | None) -> None:
        skip = ad.SKIP_ENUM_VARIANTS in self.recipe.adapters
        if self.api.has("skip_enum_variants"):
            if skip and self.store != api.PYTORCH:  # on by default for PytorchStore
                self.call("skip_enum_variants", "true")
            return
        if not skip and ENUM_VARIANT not in self.recipe.module_overrides.values():
            return
        if planned is None:
            self.left_to_do(f"drop enum-variant segments ({self.store} cannot skip enum variants; print this chain "
                            f"with the sources at hand to get the renames spelled out)")
            return
        renames = _variant_renames(planned, self.spec.path)
        self.comments.append(f"// enum variants skipped, which {self.store} cannot do, as this file's {plural(len(renames), 'rename')}")
        self._explicit(renames)

    def _fused_modules(self, planned: Plan | None) -> None:
        """A fused LSTM/GRU/attention split (or fused back) by the plan: no burn-store adapter does it."""
        fused = _fused_inputs(planned, self.spec.path) if planned is not None else {}
        for what, names in fused.items():
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            self.left_to_do(f"{what} ({shown}): burn-store cannot split fused gates or q/k/v, nor fuse them back "
                            f"(tracel-ai/burn#1632); convert with Store Studio first and load its output")

    def _explicit(self, renames: list[tuple[str, str]]) -> None:
        """Exact-name remap patterns; KeyRemapper applies them in order, so a target never meets a later source."""
        remap = "with_remap_pattern" if self.store == api.BURNPACK else "with_key_remapping"
        for old, new in renames:
            self.call(remap, f"{_rust_str('^' + rust_escape(old) + '$')}, {_rust_str(new.replace('$', '$$'))}")

    def _adapters(self) -> None:
        """One ``with_from_adapter`` (a second would replace the first), the cast chained after the layout adapter."""
        version, adapters = self.recipe.burn_version, self.recipe.adapters
        chain: list[tuple[str, str]] = []  # (adapter type, expression)
        layout = next((a for a in adapters if a in (ad.PYTORCH_TO_BURN, ad.BURN_TO_PYTORCH)), None)
        if layout == ad.BURN_TO_PYTORCH or (layout == ad.PYTORCH_TO_BURN and self.store != api.PYTORCH):
            name = "PyTorchToBurnAdapter" if layout == ad.PYTORCH_TO_BURN else "BurnToPyTorchAdapter"
            chain.append((name, name))
        for cast in self.recipe.casts:
            adapter, caveat = _cast_adapter(cast, version)
            if adapter is None:
                self.left_to_do(caveat)
                continue
            if caveat:
                self.comments.append(f"// differs: {caveat}")
            chain.append(adapter)
        if not chain:
            return
        if not self.api.has("with_from_adapter"):
            what = " then ".join(expression for _, expression in chain)
            reason = ("its PyTorchToBurnAdapter is fixed" if self.store == api.PYTORCH
                      else f"it has no with_from_adapter in Burn {version.value}")
            self.left_to_do(f"{what} ({self.store} takes no adapter: {reason}; convert with Store Studio first, or "
                            f"load through a SafetensorsStore)")
            return
        if len(chain) > 1 and not api.has_adapter(version, "ModuleAdapter::chain"):
            self.left_to_do(f"{' then '.join(e for _, e in chain[1:])} (Burn {version.value} cannot chain adapters)")
            chain = chain[:1]
        self.uses.update(adapter for adapter, _ in chain)
        if len(chain) > 1:
            self.uses.add("ModuleAdapter")  # the trait that brings .chain into scope
        self.uses_dtype = self.uses_dtype or any(adapter == "FloatCastAdapter" for adapter, _ in chain)
        expressions = [expression for _, expression in chain]
        self.call("with_from_adapter", "".join([expressions[0], *(f".chain({e})" for e in expressions[1:])]))

    def text(self) -> str:
        lines = [f"let mut store = {self.store}::from_file({_rust_str(self.spec.path)})", *self.calls]
        return "".join(c + "\n" for c in self.comments) + "\n    ".join(lines) + \
            ";\nlet result = model.load_from(&mut store)?;"


def _cast_adapter(cast: CastRule, version: BurnVersion) -> tuple[tuple[str, str] | None, str]:
    """The adapter (type, expression) for ``cast`` at ``version`` (None if it has none) and what it does differently."""
    what = f"cast {'every float tensor' if not cast.modules else ', '.join(cast.modules) + ' tensors'} to {cast.to}"
    if not cast.modules and api.has_adapter(version, "FloatCastAdapter::to"):
        return ("FloatCastAdapter", f"FloatCastAdapter::to(DType::{cast.to})"), ""
    half = api.has_adapter(version, "HalfPrecisionAdapter::new")
    modules = [name for kind in cast.modules for name in _BURN_MODULES.get(kind, (kind,))]
    why = _no_cast_adapter(cast, version, half, bool(modules))
    if why:
        return None, f"{what} (Burn {version.value}: {why}; cast after loading, or convert with Store Studio first)"
    modules = modules or list(api.HALF_PRECISION_DEFAULT)
    expression = "HalfPrecisionAdapter::new()"
    expression += "".join(f'.without_module("{m}")' for m in api.HALF_PRECISION_DEFAULT if m not in modules)
    expression += "".join(f'.with_module("{m}")' for m in modules if m not in api.HALF_PRECISION_DEFAULT)
    source = "F16" if cast.to == "F32" else "F32"
    caveat = (f"{what}: HalfPrecisionAdapter casts only {source} tensors to {cast.to} and turns {cast.to} tensors "
              f"into {source} (it infers the direction)")
    if not cast.modules:
        caveat += ", only in Linear, Embedding, Conv*, DeformConv2d, LayerNorm, GroupNorm, InstanceNorm, RmsNorm and PRelu"
    unmapped = [kind for kind in cast.modules if not _BURN_MODULES.get(kind, (kind,))]
    if unmapped:
        caveat += f"; {', '.join(unmapped)} modules have no Burn module type and are not cast"
    return ("HalfPrecisionAdapter", expression), caveat


def _no_cast_adapter(cast: CastRule, version: BurnVersion, half: bool, has_modules: bool) -> str:
    """Why no adapter of ``version`` can do ``cast`` (empty when one can)."""
    if not half:
        return "no cast adapter"
    if cast.to == "BF16":
        return ("FloatCastAdapter casts every module, HalfPrecisionAdapter only between F32 and F16"
                if api.has_adapter(version, "FloatCastAdapter::to") else "HalfPrecisionAdapter only casts between F32 and F16")
    if cast.modules and not has_modules:
        return "no module type for these kinds"
    return ""


# Store Studio's module kinds as Burn's module types (a ConvTranspose may be any of the three; the
# last two are no module type Burn could name)
_BURN_MODULES = {"ConvTranspose": ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"), "EnumVariant": (),
                 "Unknown": ()}


def _renumbered(store: Store, recipe: Recipe) -> list[tuple[str, str]]:
    """burn-store's contiguous indices over every name of ``store`` after the remaps, as (old, new) renames.

    Ordered so a rename's target is renamed first (fewer index steps first): KeyRemapper runs every
    pattern on the previous result, and an index only ever moves down.
    """
    rules = compile_rules(recipe.remaps)
    names = [remap_name(e.name, rules) for e in store.entries]
    mapping = ad.contiguous_indices(names)
    changed = [(old, new) for old, new in mapping.items() if old != new]
    return sorted(changed, key=lambda pair: (_index_sum(pair[0]), pair[0]))


def _index_sum(name: str) -> int:
    return sum(parse_index(part) or 0 for part in name.split("."))


def _variant_renames(planned: Plan, path: str) -> list[tuple[str, str]]:
    """The plan's enum-variant renames for the source at ``path``, shortest source name first."""
    found = {}
    for tensor in planned.tensors:
        if Path(tensor.source) != Path(path):
            continue
        for op in tensor.ops:
            if isinstance(op, Rename) and op.why.startswith(("skip enum variants", "enum variant")):
                found[op.old] = op.new
    return sorted(found.items(), key=lambda pair: (pair[0].count("."), pair[0]))


def _fused_inputs(planned: Plan, path: str) -> dict[str, list[str]]:
    """What the plan splits or fuses for the source at ``path`` ("split LSTM gates" -> the fused tensors)."""
    found: dict[str, dict[str, None]] = {}
    for tensor in planned.tensors:
        if Path(tensor.source) != Path(path):
            continue
        for op in tensor.ops:
            if isinstance(op, SplitFused):
                found.setdefault(f"split {op.what}", {})[op.source] = None
            elif isinstance(op, FuseSplit):
                found.setdefault(f"fuse {op.what}", {})[op.output] = None
    return {what: list(names) for what, names in found.items()}


_RUST_META = frozenset("\\.+*?()|[]{}^$#&-~")  # regex-syntax's is_meta_character


def rust_escape(text: str) -> str:
    """``regex::escape``: a pattern matching ``text`` literally (Python's ``re`` reads it the same way)."""
    return "".join("\\" + c if c in _RUST_META else c for c in text)


def _rust_notes(recipe: Recipe) -> list[str]:
    notes = [f"// Store Studio only: keep where {printable(rule.label)}" for rule in recipe.filter.where]
    for spec in recipe.sources:
        if not spec.filter.is_empty:  # burn-store filters see the model's paths, never a file's own names
            notes.append(f"// Store Studio only: {printable(spec.path)} contributes only its own names matching "
                         f"{json.dumps(spec.filter.to_json())}")
    notes += [f"// Store Studio only: LoRA adapter {printable(adapter.path)} merged into {printable(spec.path)} "
              f"(scale {adapter.scale:g}; burn-store merges no adapter)" for spec in recipe.sources for adapter in spec.lora]
    notes += [f"// Store Studio only: llama.cpp's rotary row order undone on {printable(rule.pattern)}"
              for rule in recipe.rotary_rows]
    if ad.FUSE_WEIGHT_NORM in recipe.adapters:
        notes.append("// Store Studio only: weight_g/weight_v fused into weight (Burn has no weight norm)")
    notes += [f"// Store Studio only: module {path!r} treated as {kind}" for path, kind in recipe.module_overrides.items()]
    if any(kind == "PRelu" for kind in recipe.module_overrides.values()):
        notes.append("// Store Studio only: a PRelu's weight renamed alpha (burn-store's adapter keeps weight)")
    return notes


def _rust_str(text: str) -> str:
    """A Rust raw string literal, with enough #s to hold any quotes in ``text``; an escaped literal
    (``"a\\u{1b}"``) when ``text`` holds a character a terminal would obey or hide."""
    if not text.isprintable():
        return '"' + "".join(_rust_char(char) for char in text) + '"'
    hashes = ""
    while f'"{hashes}' in text:
        hashes += "#"
    return f'r{hashes}"{text}"{hashes}'


def _rust_char(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    return char if char.isprintable() else f"\\u{{{ord(char):x}}}"
