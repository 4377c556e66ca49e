"""What a recipe would do to some stores, tensor by tensor, before a byte is read.

``plan(stores, recipe)`` runs burn-store's order of operations, per source: its own filter (on the
names in the file), remaps, contiguous indices over all the source's names, enum-variant skipping,
weight-norm fusion, module inference, the PyTorch/Burn adapter, enum variants a template's names
carry, then the recipe's filter (on the names all that produced, as burn-store's filters match the
model's own paths), then casts. Every decision resting on a name alone is listed in ``guesses``.
Sources merge like successive burn-store ``load_from`` calls: a later source overrides an
earlier one (an override, reported); two tensors of one source landing on one name are a conflict.
Every ``PlannedTensor`` is a ``TensorSource``: ``engine.export(plan.tensors, dest)`` streams it.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..burn_versions import BurnVersion
from ..dtypes import DType
from ..errors import ExportError, RecipeError
from ..export import Cancel, Progress, export
from ..humanize import quoted
from ..metadata_keys import RECIPE_KEY, carried_fields
from ..store import CHUNK, Store, TensorEntry
from . import adapters as ad
from .filters import Filter, RuleHits, facts
from .guesses import Guess, kind_guess, variant_guess
from .modules import ENUM_VARIANT, NORM_KINDS, ModuleGuess, infer_modules, module_path
from .ops import Cast, FuseWeightNorm, Op, Rename, Transpose, run
from .recipe import Recipe, SourceSpec
from .remap import compile_rules, remap_name

RECIPE_METADATA_KEY = RECIPE_KEY
_NO_SPEC = SourceSpec("")


class PlannedTensor:
    """One output tensor: where it comes from, what happens to it, what it becomes. Lazy."""

    __slots__ = ("name", "dtype", "shape", "nbytes", "param_id", "inputs", "ops", "source", "source_name", "module")

    def __init__(self, name: str, dtype: DType, shape: tuple[int, ...], inputs: Sequence[TensorEntry],
                 ops: Sequence[Op], source: str, module: str):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.inputs = tuple(inputs)
        self.ops = tuple(ops)
        first = self.inputs[0]
        # same dtype, one input: the element count is unchanged (renames, transposes), so are the bytes
        same = len(self.inputs) == 1 and dtype is first.dtype
        self.nbytes = first.nbytes if same or dtype.bits is None else dtype.nbytes(shape)
        self.param_id = self.inputs[-1].param_id
        self.source = source
        self.source_name = self.inputs[-1].name if len(self.inputs) == 1 else ", ".join(e.name for e in self.inputs)
        self.module = module

    @property
    def operations(self) -> list[str]:
        return [op.describe() for op in self.ops]

    @property
    def changes_bytes(self) -> bool:
        return any(op.changes_bytes for op in self.ops)

    def read(self) -> np.ndarray:
        """The output values (computed now, from this one tensor's inputs)."""
        arrays = [entry.read() for entry in self.inputs]
        return run(self.ops, arrays) if self.changes_bytes else arrays[0]

    def byte_range(self) -> tuple[int, int, int] | None:
        return None if self.changes_bytes else self.inputs[0].byte_range()

    def iter_bytes(self, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        if not self.changes_bytes:
            yield from self.inputs[0].iter_bytes(chunk_size)
            return
        array = np.ascontiguousarray(self.read(), dtype=self.dtype.numpy)
        view = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")
        for start in range(0, len(view), chunk_size):
            yield view[start:start + chunk_size]

    def release(self) -> None:
        for entry in self.inputs:
            entry.release()

    def verify(self) -> None:
        for entry in self.inputs:
            entry.verify()

    def __repr__(self) -> str:
        return f"<PlannedTensor {self.name} {self.dtype} {list(self.shape)} from {self.source}:{self.source_name}>"


@dataclass(frozen=True)
class Dropped:
    """A source tensor left out: ``name`` as the file writes it, ``matched`` the name the filter saw."""

    source: str
    name: str
    reason: str
    matched: str = ""


@dataclass(frozen=True)
class Conflict:
    """Two tensors of one source would get the same name; export refuses the plan."""

    name: str
    first: str
    second: str

    def __str__(self) -> str:
        return f"two tensors would be named {self.name!r}: {self.first} and {self.second}"


@dataclass(frozen=True)
class Override:
    """A later source's tensor replaced an earlier source's tensor of the same name."""

    name: str
    kept: str
    replaced: str


@dataclass
class Plan:
    tensors: list[PlannedTensor]
    dropped: list[Dropped] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    overrides: list[Override] = field(default_factory=list)
    modules: dict[str, ModuleGuess] = field(default_factory=dict)
    rule_hits: list[RuleHits] = field(default_factory=list)
    recipe: Recipe = field(default_factory=Recipe)
    guesses: list[Guess] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tensors]

    def emptied_by(self) -> str | None:
        """Why the filters left no tensor at all (naming them), or None when some are left (or none came in)."""
        if self.tensors or not self.dropped:
            return None
        filters = [*(f"source filter of {s.path}" for s in self.recipe.sources if not s.filter.is_empty),
                   *([f"filter ({_filter_rules(self.recipe.filter)})"] if not self.recipe.filter.is_empty else [])]
        return (f"{' and '.join(filters) or 'the filters'} left none of {len(self.dropped)} tensor(s) "
                f"(the recipe's filter matches names after remaps and adapters, e.g. {self.dropped[0].matched or self.dropped[0].name!r})")

    def export(self, dest: str | os.PathLike, format: str | None = None, *, metadata: dict[str, str] | None = None,
               scalars: dict[str, Any] | None = None, overwrite: bool = False, progress: Progress | None = None,
               cancel: Cancel | None = None, dequantize: bool = False, burn_version: BurnVersion | None = None) -> Path:
        """Write the plan for ``burn_version`` (default: the recipe's); refused while it has conflicts. Metadata
        records the recipe's digest."""
        if self.conflicts:
            raise ExportError(f"{Path(dest).name}: " + "; ".join(str(c) for c in self.conflicts))
        digest = {RECIPE_METADATA_KEY: self.recipe.digest()} if self.recipe.changes_tensors else {}
        meta = {**self.recipe.metadata, **digest, **(metadata or {})}
        return export(self.tensors, dest, format, metadata=meta, scalars=scalars, overwrite=overwrite,
                      progress=progress, cancel=cancel, burn_version=burn_version or self.recipe.burn_version, dequantize=dequantize)

    def to_json(self) -> dict[str, Any]:
        """The dry-run document: every output tensor and everything else the plan decided."""
        return {
            "tensors": [{"name": t.name, "source": t.source, "source_name": t.source_name, "dtype": str(t.dtype),
                         "shape": list(t.shape), "module": t.module, "operations": t.operations} for t in self.tensors],
            "dropped": [vars(d) for d in self.dropped],
            "conflicts": [vars(c) for c in self.conflicts],
            "overrides": [vars(o) for o in self.overrides],
            "modules": {p: {"kind": g.kind, "reason": g.reason, "overridden": g.overridden, "guessed": g.guessed}
                        for p, g in self.modules.items()},
            "rule_hits": [vars(h) for h in self.rule_hits],
            "guesses": [g.to_json() for g in self.guesses],
        }


def carried_metadata(stores: Sequence[Store], recipe: Recipe, fmt: str | None) -> tuple[dict[str, str], dict[str, Any] | None]:
    """The metadata (and Burnpack scalars) an export of ``stores`` keeps: the sources', merged in order.

    Metadata travels across formats under names that keep each key's meaning (``engine.metadata_keys``:
    a PyTorch archive's ``version`` is ``pytorch.archive_version``, never Burn's ``version``).
    ``recipe.clear_metadata`` drops it all (burn-store's ``clear_metadata``); ``recipe.metadata`` is
    added by ``Plan.export``. Scalars only survive to Burnpack from a single Burnpack or Burn record
    (an optimizer's numbers) source.
    """
    metadata = {} if recipe.clear_metadata else carried_fields(stores, fmt)
    only = stores[0] if len(stores) == 1 else None
    scalars = only.scalars if only is not None and only.format in ("burnpack", "burn-record") and fmt == "burnpack" else None
    return metadata, scalars


def _filter_rules(f: Filter) -> str:
    return ", ".join([*(f"include {p!r}" for p in f.include), *(f"path {p!r}" for p in f.full_paths),
                      *(f"where {r.label}" for r in f.where), *(f"exclude {p!r}" for p in f.exclude)])


class _Work:
    """A tensor being planned: mutable while the stages run, frozen into a PlannedTensor after."""

    __slots__ = ("inputs", "name", "dtype", "shape", "ops", "kept_variants")

    def __init__(self, entry: TensorEntry):
        self.inputs = [entry]
        self.name = entry.name
        self.dtype = entry.dtype
        self.shape = entry.shape
        self.ops: list[Op] = []
        self.kept_variants: list[str] = []  # CamelCase module paths kept for want of evidence (guesses)

    @property
    def source_name(self) -> str:
        return self.inputs[0].name if len(self.inputs) == 1 else ", ".join(e.name for e in self.inputs)

    def rename(self, new: str, why: str) -> None:
        if new != self.name:
            self.ops.append(Rename(self.name, new, why))
            self.name = new

    def add(self, op: Op) -> None:
        if op.changes_bytes and self.dtype.kind == "quantized":
            raise RecipeError(f"tensor {self.inputs[0].name!r} is quantized ({self.dtype}); "
                              f"'{op.describe()}' would need to decode it (renames and copies are fine)")
        self.ops.append(op)


def plan(stores: Sequence[Store], recipe: Recipe | None = None, *, template: Store | None = None) -> Plan:
    """Plan ``recipe`` over ``stores`` (merged in order); ``template`` lends module kinds and enum variants.

    burn-store's order, per source: (its own filter, on the file's names), remaps, contiguous
    indices over all the source's names, enum variants, adapters (weight-norm fusion, module
    kinds, PyTorch/Burn layout), the template's enum variants, then the recipe's filter on the
    resulting names, then casts.
    """
    recipe = recipe or Recipe()
    rules = compile_rules(recipe.remaps)
    remap_hits = [0] * len(rules)
    direction = next((a for a in recipe.adapters if a in (ad.PYTORCH_TO_BURN, ad.BURN_TO_PYTORCH)), None)
    wanted = _TemplateIndex(template) if template is not None else None
    keep = recipe.filter
    filtering = not keep.is_empty
    result = Plan([], recipe=recipe)
    merged: dict[str, PlannedTensor] = {}
    duplicates: list[PlannedTensor] = []
    filter_facts: list[dict[str, Any]] = []
    selection = _SELECTIONS.get(stores, recipe)
    result.dropped += selection.dropped
    for index, store in enumerate(stores):
        label = str(store.path)
        work = [_Work(entry) for entry in selection.kept[index]]
        for item in work:
            item.rename(remap_name(item.name, rules, remap_hits), "remap")
        if ad.CONTIGUOUS_INDICES in recipe.adapters:
            _renumber(work, store, rules)
        skip = ad.SKIP_ENUM_VARIANTS in recipe.adapters
        if skip or ENUM_VARIANT in recipe.module_overrides.values():
            _enum_variants(work, recipe.module_overrides, wanted, skip)
        if ad.FUSE_WEIGHT_NORM in recipe.adapters:
            work = _fuse_weight_norms(work)
        guesses = infer_modules(work)
        if wanted is not None:
            guesses.update(wanted.kinds(work, guesses))
        for path, kind in recipe.module_overrides.items():
            if path in guesses:
                guesses[path] = ModuleGuess(path, kind, "set by user", True)
        result.modules.update(guesses)
        own: dict[str, PlannedTensor] = {}
        for item in work:
            guess = guesses.get(item.name.rpartition(".")[0])  # module_path, inlined: hot
            kind = guess.kind if guess else "Unknown"
            before = (item.name, item.shape)
            if direction and kind in ad.LAYOUT_KINDS:
                _apply_layout(item, direction, kind)
            if wanted is not None and item.name not in wanted.shapes and item.name in wanted.variants:
                item.rename(wanted.variants[item.name], "template enum variant")
            if filtering:
                tensor_facts = facts(item.name, item.dtype, item.shape, kind) if keep.where else None
                filter_facts.append(tensor_facts or {"name": item.name})
                reason = keep.verdict(item.name, tensor_facts)
                if reason:
                    result.dropped.append(Dropped(label, item.source_name, f"filter: {reason}", item.name))
                    continue
            for cast in recipe.casts:
                if item.dtype.is_float and item.dtype != cast.dtype and (not cast.modules or kind in cast.modules):
                    item.add(Cast(item.dtype, cast.dtype))
                    item.dtype = cast.dtype
            if item.kept_variants or (guess is not None and guess.guessed):
                result.guesses += _guesses(item, guess, before, direction, recipe)
            planned = PlannedTensor(item.name, item.dtype, item.shape, item.inputs, item.ops, label, kind)
            if item.name in own:
                first = own[item.name]
                result.conflicts.append(Conflict(item.name, f"{label}:{first.source_name}", f"{label}:{planned.source_name}"))
                duplicates.append(planned)
                continue
            own[item.name] = planned
            if item.name in merged:
                old = merged[item.name]
                result.overrides.append(Override(item.name, f"{label}:{planned.source_name}",
                                                 f"{old.source}:{old.source_name}"))
            merged[item.name] = planned
    result.tensors = list(merged.values()) + duplicates
    result.rule_hits += keep.rule_hits(filter_facts) if filter_facts else []
    result.rule_hits += [RuleHits(f"remap {quoted(r.pattern)} -> {quoted(r.replacement)}", n) for r, n in zip(recipe.remaps, remap_hits)]
    return result


def _guesses(item: _Work, guess: ModuleGuess | None, before: tuple[str, tuple[int, ...]], direction: str | None,
             recipe: Recipe) -> list[Guess]:
    """The guesses this tensor's outcome rests on: enum-variant segments kept, a kind taken from its name."""
    found = [variant_guess(item.name, item.source_name, path, guess.kind if guess and guess.path == path else None)
             for path in item.kept_variants]
    if guess is None or not guess.guessed:
        return found
    name, shape = before
    floating = item.dtype.is_float  # casts only ever turn floats into floats

    def outcome(kind: str) -> tuple[Any, ...]:
        layout = ad.layout_ops(direction, name, shape, kind) if direction else (name, [])
        casts = tuple(c.to for c in recipe.casts if floating and (not c.modules or kind in c.modules))
        return layout[0], tuple(type(op) for op in layout[1]), casts

    ours = outcome(guess.kind)
    others = [outcome(kind) for kind in guess.alternatives if kind != guess.kind]
    if any(other != ours for other in others):
        could_transpose = any(Transpose in other[1] for other in others)
        found.append(kind_guess(item.name, item.source_name, guess, item.ops, could_transpose))
    return found


@dataclass(frozen=True)
class _Selection:
    """What the per-source filters keep of each source, and what they drop."""

    kept: list[list[TensorEntry]]
    dropped: list[Dropped]


class _SelectionCache:
    """The last few per-source filter results, so editing the rest of a recipe does not re-run them.

    Keyed by the sources (by identity: a store's entries never change) and their filters; a filter
    holding an unhashable predicate value is simply not cached. Stores are held weakly. The
    recipe's own filter runs after renames, in ``plan``, on every plan: a regex search per name.
    """

    SIZE = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[Any, tuple[tuple[weakref.ref, ...], _Selection]] = OrderedDict()

    def get(self, stores: Sequence[Store], recipe: Recipe) -> _Selection:
        owns = tuple((recipe.source_spec(i) or _NO_SPEC).filter for i in range(len(stores)))
        modules = any(f.needs_modules() for f in owns)
        try:
            key: Any = (tuple(id(s) for s in stores), owns,
                        tuple(sorted(recipe.module_overrides.items())) if modules else None)
            hash(key)
        except TypeError:
            return _select_all(stores, owns, recipe)
        with self._lock:
            found = self._items.get(key)
            if found is not None and all(ref() is s for ref, s in zip(found[0], stores)):
                self._items.move_to_end(key)
                return found[1]
        selection = _select_all(stores, owns, recipe)
        with self._lock:
            self._items[key] = (tuple(weakref.ref(s) for s in stores), selection)
            while len(self._items) > self.SIZE:
                self._items.popitem(last=False)
        return selection


_SELECTIONS = _SelectionCache()


def _select_all(stores: Sequence[Store], owns: Sequence[Filter], recipe: Recipe) -> _Selection:
    dropped: list[Dropped] = []
    kept = [_select(store, own, recipe, str(store.path), dropped) for store, own in zip(stores, owns)]
    return _Selection(kept, dropped)


def _select(store: Store, own: Filter, recipe: Recipe, label: str, dropped: list[Dropped]) -> list[TensorEntry]:
    """Apply the source's own filter to the names as the file writes them (the Sources dock's promise).

    Hot for large files: an empty filter costs nothing, and tensor facts are built only when a
    predicate asks for more than the name.
    """
    if own.is_empty:
        return list(store.entries)
    kinds: dict[str, ModuleGuess] = {}
    if own.needs_modules():
        kinds = infer_modules(store.entries, recipe.module_overrides)
    kept = []
    for entry in store.entries:
        name = entry.name
        tensor_facts = None
        if own.where:
            guess = kinds.get(module_path(name))
            tensor_facts = facts(name, entry.dtype, entry.shape, guess.kind if guess else "Unknown")
        reason = own.verdict(name, tensor_facts)
        if reason:
            dropped.append(Dropped(label, name, f"source filter: {reason}", name))
            continue
        kept.append(entry)
    return kept


def _renumber(work: list[_Work], store: Store, rules: Sequence[Any]) -> None:
    """burn-store's contiguous indices, over every name of the source (after remaps), before any filter.

    A per-source filter decides what the source contributes, not how it counts: the renumbering
    sees the names it dropped too, so a filter never shifts another tensor's index.
    """
    names = [w.name for w in work]
    if len(work) != len(store.entries):
        names = [remap_name(e.name, rules) for e in store.entries]
    mapping = ad.contiguous_indices(names)
    for item in work:
        item.rename(mapping[item.name], "contiguous indices")


def _enum_variants(work: list[_Work], overrides: dict[str, str], wanted: "_TemplateIndex | None", skip: bool) -> None:
    """Drop enum-variant segments only on evidence: ``--module PATH=EnumVariant``, or the template's names.

    With ``skip`` (``--skip-enum-variants``) CamelCase segments are candidates; one may as well be a
    real name (BERT's ``embeddings.LayerNorm``), so without evidence it is kept and the tensor is
    reported as a guess unless ``--module`` names the path. Paths the user calls variants go either way.
    """
    told = [path for path, kind in overrides.items() if kind == ENUM_VARIANT]
    for item in work:
        name = item.name
        variants = [path for path in told if name.startswith(path + ".")]
        candidates = ad.variant_paths(name) if skip else []
        if candidates and wanted is not None:  # module paths, not names: the adapters may still rename the leaf
            if module_path(name) in wanted.modules:
                continue  # the model has these segments as written
            stripped = ad.strip_enum_variants(name)
            if module_path(stripped) in wanted.modules:
                item.rename(stripped, "skip enum variants (the template has this module)")
                continue
        item.kept_variants = [path for path in candidates if path not in overrides]
        if variants:
            item.rename(ad.drop_segments(name, variants), "enum variant (--module)")


def _fuse_weight_norms(work: list[_Work]) -> list[_Work]:
    pairs = ad.weight_norm_pairs(w.name for w in work)
    if not pairs:
        return work
    by_name = {w.name: w for w in work}
    fused: dict[str, _Work] = {}
    for module, (g_name, v_name) in pairs.items():
        g, v = by_name[g_name], by_name[v_name]
        item = _Work(v.inputs[0])
        item.inputs = g.inputs + v.inputs
        item.ops = [*g.ops, *v.ops]
        item.add(FuseWeightNorm(g_name, v_name, v.shape))
        item.name = f"{module}.weight" if module else "weight"
        fused[g_name] = item
    return [fused.get(w.name, w) for w in work if w.name not in {v for _, v in pairs.values()}]


def _apply_layout(item: _Work, direction: str, kind: str) -> None:
    module, _, leaf = item.name.rpartition(".")
    new_leaf, transpose = ad.layout(direction, leaf, len(item.shape), kind)
    if transpose:
        item.add(Transpose((item.shape[0], item.shape[1])))
        item.shape = item.shape[::-1]
    elif new_leaf:
        item.rename(f"{module}.{new_leaf}" if module else new_leaf, f"{direction}, {kind}")


class _TemplateIndex:
    """A template's names and shapes, also under names without enum variants (how a source spells them)."""

    def __init__(self, template: Store):
        self.shapes = {e.name: e.shape for e in template.entries}
        self.modules = {module_path(name) for name in self.shapes}
        self.variants: dict[str, str] = {}
        for name in self.shapes:
            stripped = ad.strip_enum_variants(name)
            if stripped != name:
                self.variants.setdefault(stripped, name)

    def shape(self, name: str) -> tuple[int, ...] | None:
        found = self.shapes.get(name)
        if found is None and name in self.variants:
            found = self.shapes[self.variants[name]]
        return found

    def has(self, name: str) -> bool:
        return name in self.shapes or name in self.variants

    def kinds(self, work: list[_Work], guesses: dict[str, ModuleGuess]) -> dict[str, ModuleGuess]:
        """Module kinds the template's names and shapes prove, where they differ from the guess or settle it.

        A template norm (``gamma``) is a norm, a PReLU (``alpha``) a PRelu; a 2-D weight the template
        wants transposed is a Linear; one it wants as it is (and not square) is not a Linear. A guess
        the template agrees with is settled too: it no longer rests on the name alone.
        """
        found = {}
        for item in work:
            path, _, leaf = item.name.rpartition(".")
            guess = guesses.get(path)
            if leaf != "weight" or guess is None:
                continue
            if len(item.shape) == 2 and item.shape[0] != item.shape[1]:
                wanted = self.shape(item.name)
                if wanted == item.shape[::-1] and (guess.kind != "Linear" or guess.guessed):
                    found[path] = ModuleGuess(path, "Linear", "the template wants this weight transposed")
                elif wanted == item.shape and guess.kind == "Linear":
                    found[path] = ModuleGuess(path, "Unknown", "the template wants this 2-D weight as it is")
                elif wanted == item.shape and guess.guessed:
                    found[path] = ModuleGuess(path, guess.kind, "the template wants this 2-D weight as it is")
            elif self.has(f"{path}.gamma") and (guess.kind not in NORM_KINDS or guess.guessed):
                kind = guess.kind if guess.kind in NORM_KINDS else (
                    "BatchNorm" if self.has(f"{path}.running_mean") else "LayerNorm")
                found[path] = ModuleGuess(path, kind, "the template has gamma here")
            elif self.has(f"{path}.alpha") and (guess.kind != "PRelu" or guess.guessed):
                found[path] = ModuleGuess(path, "PRelu", "the template has alpha here")
        return found
