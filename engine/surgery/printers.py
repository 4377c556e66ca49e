"""A recipe printed back as the command that replays it, or as the burn-store builder chain.

The Rust chain is what a Burn programmer pastes into their loader; operations burn-store has no
builder for (casts, weight-norm fusion, dtype/shape predicates, module overrides) are printed as
comments so nothing a recipe does is silently lost.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from ..burn_versions import NEWEST
from . import adapters as ad
from .filters import Filter
from .recipe import CAST_TARGETS, Recipe, SourceSpec
from .remap import rust_replacement

_CAST_FLAGS = {v: k for k, v in CAST_TARGETS.items()}
_ADAPTER_FLAGS = {ad.CONTIGUOUS_INDICES: "--contiguous-indices", ad.SKIP_ENUM_VARIANTS: "--skip-enum-variants",
                  ad.FUSE_WEIGHT_NORM: "--fuse-weight-norm"}


def as_cli(recipe: Recipe, output: str = "OUT") -> str:
    """The ``store-studio convert`` line doing what ``recipe`` does."""
    args = ["store-studio", "convert", *(s.path for s in recipe.sources), output]
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
    line = " ".join(shlex.quote(a) for a in args)
    if _needs_recipe_file(recipe):
        line += "  # predicates, casts by module or per-source filters need --recipe FILE"
    return line


def _filter_args(f: Filter) -> list[str]:
    args: list[str] = []
    for pattern in f.include:
        args += ["--include", pattern]
    for path in f.full_paths:
        args += ["--include", "^" + re.escape(path) + "$"]
    for pattern in f.exclude:
        args += ["--exclude", pattern]
    return args


def _needs_recipe_file(recipe: Recipe) -> bool:
    return bool(recipe.filter.where or any(c.modules for c in recipe.casts) or len(recipe.casts) > 1
                or any(not s.filter.is_empty for s in recipe.sources)
                or len({s.top_level_key or recipe.top_level_key for s in recipe.sources}) > 1)


def as_rust(recipe: Recipe) -> str:
    """The burn-store builder chain(s): one store per source, loaded in order like the recipe merges them."""
    sources = recipe.sources or (SourceSpec("model.pt"),)
    blocks = [_rust_store(recipe, spec) for spec in sources]
    notes = _rust_notes(recipe)
    return "\n\n".join(blocks) + ("\n" + "\n".join(notes) if notes else "")


def _rust_store(recipe: Recipe, spec: SourceSpec) -> str:
    suffix = Path(spec.path).suffix.lower()
    store = {".bpk": "BurnpackStore", ".safetensors": "SafetensorsStore"}.get(suffix, "PytorchStore")
    lines = [f"let mut store = {store}::from_file({_rust_str(spec.path)})"]
    key = spec.top_level_key or recipe.top_level_key
    if key and store == "PytorchStore":
        lines.append(f".with_top_level_key({_rust_str(key)})")
    lines += _rust_filter(recipe.filter)
    for rule in recipe.remaps:
        lines.append(f".with_key_remapping({_rust_str(rule.pattern)}, {_rust_str(rust_replacement(rule.replacement))})")
    if ad.PYTORCH_TO_BURN in recipe.adapters and store != "PytorchStore":
        lines.append(".with_from_adapter(PyTorchToBurnAdapter)")
    if ad.BURN_TO_PYTORCH in recipe.adapters:
        lines.append(".with_from_adapter(BurnToPyTorchAdapter)")
    contiguous = ad.CONTIGUOUS_INDICES in recipe.adapters
    if contiguous != (store == "PytorchStore"):  # PytorchStore renumbers by default, the others do not
        lines.append(f".map_indices_contiguous({str(contiguous).lower()})")
    if ad.SKIP_ENUM_VARIANTS in recipe.adapters and store != "PytorchStore":  # on by default for PytorchStore
        lines.append(".skip_enum_variants(true)")
    if recipe.allow_partial:
        lines.append(".allow_partial(true)")
    warning = ""
    if store == "PytorchStore" and ad.PYTORCH_TO_BURN not in recipe.adapters:
        warning = ("// differs: PytorchStore always applies PyTorchToBurnAdapter (transposes Linear weights, "
                   "renames norms); this recipe does not\n")
    return warning + "\n    ".join(lines) + ";\nlet result = model.load_from(&mut store)?;"


def _rust_filter(f: Filter) -> list[str]:
    """burn-store ORs every filter rule, so exclusions go into one predicate holding the whole filter."""
    if not f.exclude:
        return [f".with_regex({_rust_str(p)})" for p in f.include] + \
               [f".with_full_path({_rust_str(p)})" for p in f.full_paths]
    keep = " || ".join([f"regex::Regex::new({_rust_str(p)}).unwrap().is_match(path)" for p in f.include]
                       + [f"path == {_rust_str(p)}" for p in f.full_paths]) or "true"
    drop = " || ".join(f"regex::Regex::new({_rust_str(p)}).unwrap().is_match(path)" for p in f.exclude)
    return [f".with_predicate(|path, _| ({keep}) && !({drop}))"]


def _rust_notes(recipe: Recipe) -> list[str]:
    notes = [f"// Store Studio only: keep where {rule.label}" for rule in recipe.filter.where]
    for spec in recipe.sources:
        if not spec.filter.is_empty:  # burn-store filters see the model's paths, never a file's own names
            notes.append(f"// Store Studio only: {spec.path} contributes only its own names matching "
                         f"{json.dumps(spec.filter.to_json())}")
    notes += [f"// Store Studio only: cast {'all floats' if not c.modules else ', '.join(c.modules)} to {c.to}"
              for c in recipe.casts]
    if ad.FUSE_WEIGHT_NORM in recipe.adapters:
        notes.append("// Store Studio only: weight_g/weight_v fused into weight (Burn has no weight norm)")
    notes += [f"// Store Studio only: module {path!r} treated as {kind}" for path, kind in recipe.module_overrides.items()]
    if any(kind == "PRelu" for kind in recipe.module_overrides.values()):
        notes.append("// Store Studio only: a PRelu's weight renamed alpha (burn-store's adapter keeps weight)")
    return notes


def _rust_str(text: str) -> str:
    """A Rust raw string literal, with enough #s to hold any quotes in ``text``."""
    hashes = ""
    while f'"{hashes}' in text:
        hashes += "#"
    return f'r{hashes}"{text}"{hashes}'
