"""The conventions between PyTorch and Burn (FORMATS.md section 4) as name and layout rules.

Each function decides; none touches bytes. The plan turns decisions into ``ops``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Sequence

from ..errors import RecipeError
from ..tree import parse_index
from .modules import NORM_KINDS, logical_leaf

PYTORCH_TO_BURN = "pytorch-to-burn"
BURN_TO_PYTORCH = "burn-to-pytorch"
CONTIGUOUS_INDICES = "contiguous-indices"
SKIP_ENUM_VARIANTS = "skip-enum-variants"
FUSE_WEIGHT_NORM = "fuse-weight-norm"
ADAPTERS = (PYTORCH_TO_BURN, BURN_TO_PYTORCH, CONTIGUOUS_INDICES, SKIP_ENUM_VARIANTS, FUSE_WEIGHT_NORM)

# direction -> (norm leaf renames, PReLU leaf renames); Burn's PRelu names its weight alpha, which
# burn-store's own adapter leaves as weight (a Store Studio addition)
_LEAVES = {PYTORCH_TO_BURN: ({"weight": "gamma", "bias": "beta"}, {"weight": "alpha"}),
           BURN_TO_PYTORCH: ({"gamma": "weight", "beta": "bias"}, {"alpha": "weight"})}
LAYOUT_KINDS = NORM_KINDS | {"Linear", "PRelu"}  # the only kinds layout() changes


def check_adapters(adapters: Iterable[str]) -> tuple[str, ...]:
    adapters = tuple(adapters)
    for name in adapters:
        if name not in ADAPTERS:
            raise RecipeError(f"adapters: unknown adapter {name!r} (one of {', '.join(ADAPTERS)})")
    if PYTORCH_TO_BURN in adapters and BURN_TO_PYTORCH in adapters:
        raise RecipeError(f"adapters: {PYTORCH_TO_BURN} and {BURN_TO_PYTORCH} undo each other; choose one")
    return adapters


def contiguous_indices(names: Sequence[str]) -> dict[str, str]:
    """Renumber index segments 0, 1, 2... per parent, keeping their numeric order (burn-store's rule).

    The parent of an index is the path before it *as written in the file*, so nested Sequentials
    (``layers.2.block.4``) are renumbered at every level independently. A segment is an index when
    Rust's ``parse::<usize>()`` says so (``engine.tree``): ``+5`` is 5 and becomes ``0``, ``²`` stays.
    """
    seen: dict[str, set[int]] = {}
    split = [name.split(".") for name in names]
    parsed = [[parse_index(part) for part in parts] for parts in split]
    for parts, values in zip(split, parsed):
        for i, value in enumerate(values):
            if value is not None:
                seen.setdefault(".".join(parts[:i]), set()).add(value)
    renumber = {prefix: {old: new for new, old in enumerate(sorted(indices))} for prefix, indices in seen.items()}
    mapping = {}
    for name, parts, values in zip(names, split, parsed):
        out = [part if value is None else str(renumber[".".join(parts[:i])][value])
               for i, (part, value) in enumerate(zip(parts, values))]
        mapping[name] = ".".join(out)
    return mapping


def is_enum_variant(segment: str) -> bool:
    """Burn writes enum variants as CamelCase path segments; PyTorch modules are lower-case."""
    return segment[:1].isupper()


def strip_enum_variants(name: str) -> str:
    """``feature.BaseConv.weight`` -> ``feature.weight`` (the leaf is never a variant)."""
    parts = name.split(".")
    kept = [p for p in parts[:-1] if not is_enum_variant(p)]
    return ".".join(kept + parts[-1:])


def variant_paths(name: str) -> list[str]:
    """The module paths of ``name`` whose last segment looks like an enum variant (CamelCase)."""
    parts = name.split(".")
    return [".".join(parts[:i + 1]) for i, part in enumerate(parts[:-1]) if is_enum_variant(part)]


def drop_segments(name: str, paths: Iterable[str]) -> str:
    """``name`` without the last segment of each of ``paths`` (module paths that prefix it)."""
    cut = {path.count(".") for path in paths}
    parts = name.split(".")
    return ".".join(p for i, p in enumerate(parts) if i not in cut or i == len(parts) - 1)


def weight_norm_pairs(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Module path -> (g tensor, v tensor) for every complete weight-norm pair."""
    found: dict[str, dict[str, str]] = {}
    for name in names:
        module, leaf = logical_leaf(name)
        if leaf in ("weight_g", "weight_v"):
            found.setdefault(module, {})[leaf] = name
    return {m: (p["weight_g"], p["weight_v"]) for m, p in found.items() if len(p) == 2}


@lru_cache(maxsize=1024)
def layout(direction: str, leaf: str, ndim: int, kind: str) -> tuple[str | None, bool]:
    """What ``direction`` asks of a ``kind`` module's tensor ``leaf``: ``(new leaf or None, transpose?)``.

    Linear weights are transposed both ways (the operation is its own inverse); norm affine
    parameters are renamed weight/bias <-> gamma/beta, a PReLU's weight <-> alpha. Everything
    else, buffers included, is kept. Cached: the plan asks it for every tensor on every edit.
    """
    if kind == "Linear" and leaf == "weight" and ndim == 2:
        return None, True
    if kind in NORM_KINDS or kind == "PRelu":
        norm, prelu = _LEAVES[direction]
        return (prelu if kind == "PRelu" else norm).get(leaf), False
    return None, False
