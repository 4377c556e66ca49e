"""What a recipe would do to some stores, tensor by tensor, before a byte is read.

``plan(stores, recipe)`` runs, per source: its own filter and the recipe's (on the names in the
file), remaps, contiguous indices, enum-variant skipping, weight-norm fusion, module inference,
the PyTorch/Burn adapter, casts and, with a template, enum variants the template's names carry.
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

from ..dtypes import DType
from ..errors import ExportError, RecipeError
from ..export import Cancel, Progress, export
from ..store import CHUNK, Store, TensorEntry
from . import adapters as ad
from .filters import Filter, RuleHits, facts
from .modules import NORM_KINDS, ModuleGuess, infer_modules, module_path
from .ops import Cast, FuseWeightNorm, Op, Rename, run
from .recipe import Recipe, SourceSpec
from .remap import compile_rules, remap_name

RECIPE_METADATA_KEY = "store_studio.recipe"
_NO_SPEC = SourceSpec("")
_LAYOUT_KINDS = NORM_KINDS | {"Linear"}  # the only kinds adapters.layout_ops changes; skipping the rest is a hot-path saving


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
    source: str
    name: str
    reason: str


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

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tensors]

    def export(self, dest: str | os.PathLike, format: str | None = None, *, metadata: dict[str, str] | None = None,
               scalars: dict[str, Any] | None = None, overwrite: bool = False, progress: Progress | None = None,
               cancel: Cancel | None = None) -> Path:
        """Write the plan; refused while it has conflicts. Metadata records the recipe's digest."""
        if self.conflicts:
            raise ExportError(f"{Path(dest).name}: " + "; ".join(str(c) for c in self.conflicts))
        digest = {RECIPE_METADATA_KEY: self.recipe.digest()} if self.recipe.changes_tensors else {}
        meta = {**self.recipe.metadata, **digest, **(metadata or {})}
        return export(self.tensors, dest, format, metadata=meta, scalars=scalars, overwrite=overwrite,
                      progress=progress, cancel=cancel)

    def to_json(self) -> dict[str, Any]:
        """The dry-run document: every output tensor and everything else the plan decided."""
        return {
            "tensors": [{"name": t.name, "source": t.source, "source_name": t.source_name, "dtype": str(t.dtype),
                         "shape": list(t.shape), "module": t.module, "operations": t.operations} for t in self.tensors],
            "dropped": [vars(d) for d in self.dropped],
            "conflicts": [vars(c) for c in self.conflicts],
            "overrides": [vars(o) for o in self.overrides],
            "modules": {p: {"kind": g.kind, "reason": g.reason, "overridden": g.overridden} for p, g in self.modules.items()},
            "rule_hits": [vars(h) for h in self.rule_hits],
        }


class _Work:
    """A tensor being planned: mutable while the stages run, frozen into a PlannedTensor after."""

    __slots__ = ("inputs", "name", "dtype", "shape", "ops")

    def __init__(self, entry: TensorEntry):
        self.inputs = [entry]
        self.name = entry.name
        self.dtype = entry.dtype
        self.shape = entry.shape
        self.ops: list[Op] = []

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
    """Plan ``recipe`` over ``stores`` (merged in order); ``template`` lends module kinds and enum variants."""
    recipe = recipe or Recipe()
    rules = compile_rules(recipe.remaps)
    remap_hits = [0] * len(rules)
    direction = next((a for a in recipe.adapters if a in (ad.PYTORCH_TO_BURN, ad.BURN_TO_PYTORCH)), None)
    wanted = _TemplateIndex(template) if template is not None else None
    result = Plan([], recipe=recipe)
    merged: dict[str, PlannedTensor] = {}
    duplicates: list[PlannedTensor] = []
    selection = _SELECTIONS.get(stores, recipe)
    result.dropped += selection.dropped
    for index, store in enumerate(stores):
        label = str(store.path)
        work = [_Work(entry) for entry in selection.kept[index]]
        for item in work:
            item.rename(remap_name(item.name, rules, remap_hits), "remap")
        _name_adapters(work, recipe.adapters)
        if ad.FUSE_WEIGHT_NORM in recipe.adapters:
            work = _fuse_weight_norms(work)
        guesses = infer_modules(_Shaped(w.name, w.shape) for w in work)
        if wanted is not None:
            guesses.update(wanted.kinds(work, guesses))
        for path, kind in recipe.module_overrides.items():
            if path in guesses:
                guesses[path] = ModuleGuess(path, kind, "set by user", True)
        result.modules.update(guesses)
        own: dict[str, PlannedTensor] = {}
        for item in work:
            guess = guesses.get(module_path(item.name))
            kind = guess.kind if guess else "Unknown"
            if direction and kind in _LAYOUT_KINDS:
                _apply_layout(item, direction, kind)
            for cast in recipe.casts:
                if item.dtype.is_float and item.dtype != cast.dtype and (not cast.modules or kind in cast.modules):
                    item.add(Cast(item.dtype, cast.dtype))
                    item.dtype = cast.dtype
            if wanted is not None and item.name not in wanted.shapes and item.name in wanted.variants:
                item.rename(wanted.variants[item.name], "template enum variant")
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
    result.rule_hits += selection.hits
    result.rule_hits += [RuleHits(f"remap {r.pattern!r} -> {r.replacement!r}", n) for r, n in zip(recipe.remaps, remap_hits)]
    return result


class _Shaped:
    __slots__ = ("name", "shape")

    def __init__(self, name: str, shape: tuple[int, ...]):
        self.name, self.shape = name, shape


@dataclass(frozen=True)
class _Selection:
    """What the filters keep of each source, what they drop, and each filter rule's hit count."""

    kept: list[list[TensorEntry]]
    dropped: list[Dropped]
    hits: list[RuleHits]


class _SelectionCache:
    """The last few filter results, so editing remaps, adapters or casts does not re-run the filters.

    Keyed by the sources (by identity: a store's entries never change) and every filter; a filter
    holding an unhashable predicate value is simply not cached. Stores are held weakly.
    """

    SIZE = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[Any, tuple[tuple[weakref.ref, ...], _Selection]] = OrderedDict()

    def get(self, stores: Sequence[Store], recipe: Recipe) -> _Selection:
        owns = tuple((recipe.source_spec(i) or _NO_SPEC).filter for i in range(len(stores)))
        modules = any(f.needs_modules() for f in (*owns, recipe.filter))
        try:
            key: Any = (tuple(id(s) for s in stores), owns, recipe.filter,
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
    filter_facts: list[dict[str, Any]] = []
    kept = [_select(store, own, recipe, str(store.path), dropped, filter_facts) for store, own in zip(stores, owns)]
    hits = recipe.filter.rule_hits(filter_facts) if filter_facts else []
    return _Selection(kept, dropped, hits)


def _select(store: Store, own: Filter, recipe: Recipe, label: str, dropped: list[Dropped],
            filter_facts: list[dict[str, Any]]) -> list[TensorEntry]:
    """Apply the source's filter, then the recipe's, to the names as the file writes them.

    Hot for large files (it runs on every edit in the workbench): empty filters cost nothing, and
    tensor facts are built only when a predicate asks for more than the name.
    """
    keep = recipe.filter
    if own.is_empty and keep.is_empty:
        return list(store.entries)
    wants_facts = bool(own.where or keep.where)
    kinds: dict[str, ModuleGuess] = {}
    if own.needs_modules() or keep.needs_modules():
        kinds = infer_modules(store.entries, recipe.module_overrides)
    kept = []
    for entry in store.entries:
        name = entry.name
        tensor_facts = None
        if wants_facts:
            guess = kinds.get(module_path(name))
            tensor_facts = facts(name, entry.dtype, entry.shape, guess.kind if guess else "Unknown")
        if not own.is_empty:
            reason = own.verdict(name, tensor_facts)
            if reason:
                dropped.append(Dropped(label, name, f"source filter: {reason}"))
                continue
        if not keep.is_empty:
            filter_facts.append(tensor_facts if tensor_facts is not None else {"name": name})
            reason = keep.verdict(name, tensor_facts)
            if reason:
                dropped.append(Dropped(label, name, f"filter: {reason}"))
                continue
        kept.append(entry)
    return kept


def _name_adapters(work: list[_Work], adapters: Sequence[str]) -> None:
    if ad.CONTIGUOUS_INDICES in adapters:
        mapping = ad.contiguous_indices([w.name for w in work])
        for item in work:
            item.rename(mapping[item.name], "contiguous indices")
    if ad.SKIP_ENUM_VARIANTS in adapters:
        for item in work:
            item.rename(ad.strip_enum_variants(item.name), "skip enum variants")


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
    new, ops = ad.layout_ops(direction, item.name, item.shape, kind)
    for op in ops:
        if isinstance(op, Rename):
            item.ops.append(Rename(item.name, new, op.why))
            item.name = new
        else:
            item.add(op)
            item.shape = item.shape[::-1]


class _TemplateIndex:
    """A template's names and shapes, also under names without enum variants (how a source spells them)."""

    def __init__(self, template: Store):
        self.shapes = {e.name: e.shape for e in template.entries}
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
        """Module kinds the template's names and shapes prove, where they differ from the guess.

        A template norm (``gamma``) is a norm; a 2-D weight the template wants transposed is a
        Linear; one it wants as it is (and not square) is not a Linear.
        """
        found = {}
        for item in work:
            path, _, leaf = item.name.rpartition(".")
            guess = guesses.get(path)
            if leaf != "weight" or guess is None:
                continue
            if len(item.shape) == 2 and item.shape[0] != item.shape[1]:
                wanted = self.shape(item.name)
                if wanted == item.shape[::-1] and guess.kind != "Linear":
                    found[path] = ModuleGuess(path, "Linear", "the template wants this weight transposed")
                elif wanted == item.shape and guess.kind == "Linear":
                    found[path] = ModuleGuess(path, "Unknown", "the template wants this 2-D weight as it is")
            elif self.has(f"{path}.gamma") and guess.kind not in NORM_KINDS:
                kind = "BatchNorm" if self.has(f"{path}.running_mean") else "LayerNorm"
                found[path] = ModuleGuess(path, kind, "the template has gamma here")
        return found
