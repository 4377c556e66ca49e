"""What a recipe would do to some stores, tensor by tensor, before a byte is read.

``plan(stores, recipe)`` runs burn-store's order of operations, per source, as named stages
(``stages``): its own filter (on the names in the file), remaps, contiguous indices over all the
source's names, enum-variant skipping, weight-norm fusion and fused modules split or fused back,
module inference, the PyTorch/Burn adapter, enum variants a template's names carry, then the recipe's
filter (on the names all that produced, as burn-store's filters match the model's own paths), then
casts. Each stage's result is kept by its inputs (``StageCache``), so a re-plan after an edit re-runs
only the stages after it. Every decision resting on a name alone is listed in ``guesses``.
Sources merge like successive burn-store ``load_from`` calls: a later source overrides an
earlier one (an override, reported); two tensors of one source landing on one name are a conflict.
Every ``PlannedTensor`` is a ``TensorSource``: ``engine.export(plan.tensors, dest)`` streams it.
"""

from __future__ import annotations

import itertools
import math
import operator
import os
import threading
import weakref
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..burn_versions import BurnVersion
from ..collector import collector_paused
from ..dtypes import DType
from ..errors import ExportError
from ..exporting import Cancel, Progress, export, header_metadata
from ..exporting.metadata import RECIPE_KEY, carried_fields, carried_scalars
from ..exporting.written_forms import DEFAULT_DEQUANTIZE_TO
from ..quantize import QuantizeSpec
from ..sources import CHUNK
from ..store import Store, TensorEntry
from . import adapters as ad
from . import stages
from .filters import Filter, RuleHits, facts
from .guesses import Guess
from .modules import ENUM_VARIANT, ModuleGuess, infer_modules, module_path
from .ops import Op, OpRecord, built, changes_bytes, run
from .recipe import Recipe, SourceSpec
from .remap import CompiledRule, compile_rules, remap_name
from .stages import Dropped

RECIPE_METADATA_KEY = RECIPE_KEY
_NO_SPEC = SourceSpec("")


class PlannedTensor:
    """One output tensor: where it comes from, what happens to it, what it becomes. Lazy.

    ``ops`` may be given as records (``ops.OpRecord``): they are built into operations when first read.
    """

    __slots__ = ("name", "dtype", "shape", "inputs", "_ops", "source", "module")

    def __init__(self, name: str, dtype: DType, shape: tuple[int, ...], inputs: Sequence[TensorEntry],
                 ops: Sequence[Op | OpRecord], source: str, module: str):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.inputs = inputs if type(inputs) is tuple else tuple(inputs)
        self._ops = ops if type(ops) is tuple else tuple(ops)
        self.source = source
        self.module = module

    @property
    def nbytes(self) -> int:
        """The output's size: the input's when the bytes are the same (renames, transposes), else by dtype
        and shape (a split has fewer). Computed when asked: a plan makes every tensor on every edit."""
        inputs, dtype, shape = self.inputs, self.dtype, self.shape
        first = inputs[0]
        same = len(inputs) == 1 and dtype is first.dtype and (shape is first.shape or math.prod(shape) == first.numel)
        return first.nbytes if same or dtype.bits is None else dtype.nbytes(shape)

    @property
    def param_id(self) -> int | None:
        return self.inputs[-1].param_id

    @property
    def ops(self) -> tuple[Op, ...]:
        ops = self._ops
        if any(type(op) is tuple for op in ops):
            self._ops = ops = built(ops)
        return ops

    @property
    def source_name(self) -> str:
        """The name(s) in the source file: two for a fused weight norm."""
        inputs = self.inputs
        return inputs[-1].name if len(inputs) == 1 else ", ".join(e.name for e in inputs)

    @property
    def operations(self) -> list[str]:
        return [op.describe() for op in self.ops]

    @property
    def changes_bytes(self) -> bool:
        return changes_bytes(self._ops)

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
        if self.dtype.numpy is None:  # GGUF blocks: the only op that changes their bytes moves whole rows
            yield from moved_rows(self.inputs[0], self.ops)
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
class Conflict:
    """Two tensors of one source would get the same name; export refuses the plan."""

    name: str
    first: str
    second: str

    def __str__(self) -> str:
        return f"two tensors would be named {self.name!r}: {self.first} and {self.second}"


@dataclass(frozen=True)
class Override:
    """A later source's tensor replaced an earlier source's tensor of the same name.

    ``kept`` and ``replaced`` are ``source:name`` as the plan prints them; ``replaced_source`` and
    ``replaced_name`` say the same as data, so the window marks the replaced tensor without splitting the
    text at a colon a file name or a tensor name may itself contain.
    """

    name: str
    kept: str
    replaced: str
    replaced_source: str
    replaced_name: str


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
               cancel: Cancel | None = None, dequantize: bool = False, burn_version: BurnVersion | None = None,
               dequantize_to: str = DEFAULT_DEQUANTIZE_TO, quantize: "QuantizeSpec | None" = None) -> Path:
        """Write the plan for ``burn_version`` (default: the recipe's); refused while it has conflicts. Metadata
        records the recipe's digest."""
        if self.conflicts:
            raise ExportError(f"{Path(dest).name}: " + "; ".join(str(c) for c in self.conflicts))
        return export(self.tensors, dest, format, metadata=with_recipe(self.recipe, metadata), scalars=scalars, overwrite=overwrite,
                      progress=progress, cancel=cancel, burn_version=burn_version or self.recipe.burn_version, dequantize=dequantize,
                      dequantize_to=dequantize_to, quantize=quantize)

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
            "rule_hits": [h.to_json() for h in self.rule_hits],
            "guesses": [g.to_json() for g in self.guesses],
        }


def carried_metadata(stores: Sequence[Store], recipe: Recipe, fmt: str | None) -> tuple[dict[str, str], dict[str, Any] | None]:
    """The metadata (and Burnpack scalars) an export of ``stores`` keeps: the sources', merged in order.

    Metadata travels across formats under names that keep each key's meaning (``engine.exporting.metadata``:
    a PyTorch archive's ``version`` is ``pytorch.archive_version``, never Burn's ``version``).
    ``recipe.clear_metadata`` drops it all (burn-store's ``clear_metadata``); ``recipe.metadata`` is
    added by ``Plan.export``. Scalars only survive to Burnpack from a single Burnpack or Burn record
    (an optimizer's numbers) source.
    """
    return {} if recipe.clear_metadata else carried_fields(stores, fmt), carried_scalars(stores, fmt)


def with_recipe(recipe: Recipe, metadata: dict[str, str] | None) -> dict[str, str]:
    """``metadata`` over what a recipe always records: its own ``metadata`` and, when it changes tensors, its digest."""
    digest = {RECIPE_METADATA_KEY: recipe.digest()} if recipe.changes_tensors else {}
    return {**recipe.metadata, **digest, **(metadata or {})}


def moved_rows(entry: TensorEntry, ops: Sequence[Op]) -> Iterator[bytes]:
    """A block-type tensor's stored rows in the order ``ops`` (row moves only) give them, a row at a time."""
    from ..values.chunked import stored_bytes
    order = np.arange(entry.shape[0])
    for op in ops:
        if op.changes_bytes:
            order = order[op.row_order()]
    read, row = stored_bytes(entry), entry.nbytes // max(1, entry.shape[0])
    for source_row in order.tolist():
        yield bytes(read(source_row * row, row))


def export_metadata(stores: Sequence[Store], recipe: Recipe, fmt: str) -> dict[str, str]:
    """Every metadata field ``convert`` writes when it exports ``stores`` through ``recipe`` to ``fmt``: the
    header's own keys, the recipe's, and the sources' fields under the names ``fmt`` keeps them by.

    The export dialog prefills its table with this, so what it shows is what the command line writes.
    """
    carried, _ = carried_metadata(stores, recipe, fmt)
    return header_metadata(fmt, with_recipe(recipe, {**carried, **recipe.metadata}))


def _filter_rules(f: Filter) -> str:
    return ", ".join([*(f"include {p!r}" for p in f.include), *(f"path {p!r}" for p in f.full_paths),
                      *(f"where {r.label}" for r in f.where), *(f"exclude {p!r}" for p in f.exclude)])


_TOKENS = itertools.count(1)  # every computed stage result gets its own number: what later stages are keyed by


class StageCache:
    """Each stage's last few results, keyed by its inputs: the previous stage's result (its token) and the
    part of the recipe the stage reads. An edit therefore re-runs only the stages after the part it changed.

    A stage keeps at most ``SIZE`` results, and fewer for big sources: their tensors count against
    ``TENSORS`` (one 100,000-tensor source keeps two: the current plan and the one before, what undo
    and a typo's correction come back to); what it lets go is freed at once. ``ran`` counts the stages actually computed (what a test, or
    a profile, asks). A key that cannot be hashed (a predicate holding a list) is simply not cached.
    """

    SIZE = 4
    TENSORS = 200_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, OrderedDict[Any, tuple[int, Any, int]]] = {}
        self._same: dict[str, OrderedDict[int, tuple[int, Any]]] = {}
        self._last: dict[tuple[str, int], Any] = {}
        self.ran: Counter[str] = Counter()

    def last(self, stage: str, source: int) -> Any:
        """``stage``'s latest result for the plan's source number ``source`` (None before the first): what a
        stage that works incrementally starts from, whatever its inputs were."""
        return self._last.get((stage, source))

    def keep_last(self, stage: str, source: int, result: Any) -> None:
        self._last[(stage, source)] = result

    def run(self, stage: str, key: Any, compute: Callable[[], Any], tensors: int = 0) -> tuple[int, Any]:
        """``(token, result)`` of ``stage`` for ``key``: cached, or computed now (over ``tensors`` tensors)."""
        try:
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            with self._lock:
                items = self._items.setdefault(stage, OrderedDict())
                found = items.get(key)
                if found is not None:
                    items.move_to_end(key)
                    return found[0], found[1]
        token, result = next(_TOKENS), compute()
        with self._lock:
            self.ran[stage] += 1
            if key is not None:
                items = self._items.setdefault(stage, OrderedDict())
                items[key] = (token, result, tensors)
                while len(items) > 1 and (len(items) > self.SIZE
                                          or sum(size for _, _, size in items.values()) > self.TENSORS):
                    items.popitem(last=False)
        return token, result

    def same(self, stage: str, token: int, result: Any, content: Callable[[], Any], tensors: int = 0) -> tuple[int, Any]:
        """The earlier ``(token, result)`` whose ``content()`` equals this one's, else ``(token, result)``.

        An edit that changes a stage's inputs but not what the stages after it read (a remap pattern
        typed halfway that matches nothing yet, its undo, a filter that keeps the same tensors) then
        hands them the earlier result's token, so they are taken from the cache. ``content`` is asked
        only for a result not seen before: an undo costs a lookup, not a pass over the names.
        """
        with self._lock:
            seen = self._same.setdefault(stage, OrderedDict())
            found = seen.get(token)
            if found is not None:
                seen.move_to_end(token)
                return found
        found = self.run(stage, content(), lambda: (token, result), tensors)[1]
        with self._lock:
            seen[token] = found
            while len(seen) > self.SIZE:
                seen.popitem(last=False)
        return found


_STAGES = StageCache()
_TEMPLATES: "weakref.WeakKeyDictionary[Store, stages.TemplateIndex]" = weakref.WeakKeyDictionary()


def _template_index(template: Store) -> stages.TemplateIndex:
    """The template's index, made once per opened template (a template file never changes while open)."""
    found = _TEMPLATES.get(template)
    if found is None:
        found = _TEMPLATES[template] = stages.TemplateIndex([(e.name, e.shape) for e in template.entries],
                                                            template.declared_kinds)
    return found


@dataclass(frozen=True)
class _SourceResult:
    """One source after every stage: what the merge needs."""

    label: str
    adapted: stages.Adapted
    casted: stages.Casted
    filtered: stages.Filtered
    guesses: dict[str, ModuleGuess]
    remap_hits: tuple[int, ...]
    found: list[Guess]  # what the kept tensors' outcomes rest on
    tokens: tuple[int, int]  # the filter's and the cast's results: what the merge and the hit counts depend on


def plan(stores: Sequence[Store], recipe: Recipe | None = None, *, template: Store | None = None,
         cache: StageCache | None = None) -> Plan:
    """Plan ``recipe`` over ``stores`` (merged in order); ``template`` lends module kinds and enum variants.

    burn-store's order, per source (``stages``): its own filter (on the file's names), remap,
    renumber, enum variants, fuse/split, module inference, adapters, the recipe's filter on the
    resulting names, cast; then the sources merge. Each stage's result is kept by its inputs
    (``cache``, shared by default), so a re-plan after an edit re-runs only the stages after it.
    """
    cache = cache or _STAGES
    # Tens of thousands of long-lived objects, no garbage: without the pause the benchmark row "re-plan 10,000
    # tensors after a remap edit" takes 25-30% longer (tests/benchmarks/run.py, bench_surgery).
    with collector_paused(long_lived=True):
        return _plan(stores, recipe or Recipe(), template, cache)


def _plan(stores: Sequence[Store], recipe: Recipe, template: Store | None, cache: StageCache) -> Plan:
    rules = compile_rules(recipe.remaps)
    wanted = _template_index(template) if template is not None else None
    selection = _SELECTIONS.get(stores, recipe)
    sources = [_plan_source(cache, selection, index, store, recipe, rules, wanted) for index, store in enumerate(stores)]
    size = sum(len(kept) for kept in selection.kept)
    _, merged = cache.run("merge", tuple(s.tokens[1] for s in sources), lambda: _merge(sources), size)
    _, filter_hits = cache.run("rule hits", (tuple(s.tokens[0] for s in sources), recipe.filter),
                               lambda: _filter_hits(recipe.filter, sources), size)
    tensors, conflicts, overrides = merged
    remap_hits = [sum(counts) for counts in zip(*(s.remap_hits for s in sources))] if sources else [0] * len(rules)
    modules: dict[str, ModuleGuess] = {}
    for source in sources:
        modules.update(source.guesses)
    dropped = itertools.chain.from_iterable(s.filtered.dropped for s in sources)
    return Plan(list(tensors), dropped=[*selection.dropped, *dropped],
                conflicts=list(conflicts), overrides=list(overrides), modules=modules,
                rule_hits=[*filter_hits, *(RuleHits.remap(i, r, n) for i, (r, n) in enumerate(zip(recipe.remaps, remap_hits)))],
                recipe=recipe, guesses=list(itertools.chain.from_iterable(s.found for s in sources)))


def _plan_source(cache: StageCache, selection: "_Selection", index: int, store: Store, recipe: Recipe,
                 rules: Sequence[CompiledRule], wanted: stages.TemplateIndex | None) -> "_SourceResult":
    """One source through every stage, each taken from ``cache`` when its inputs are unchanged."""
    adapters = recipe.adapters
    direction = next((a for a in adapters if a in (ad.PYTORCH_TO_BURN, ad.BURN_TO_PYTORCH)), None)
    overrides = tuple(sorted(recipe.module_overrides.items()))

    def run(stage: str, key: Any, compute: Callable[[], Any]) -> tuple[int, Any]:
        return cache.run(stage, key, compute, len(selection.kept[index]))

    token, batch = run("source", (selection.token, index), lambda: stages.Batch.of(selection.kept[index]))
    if recipe.rotary_rows:
        token, batch = run("rotary rows", (token, recipe.rotary_rows),
                           lambda: stages.rotary_rows(batch, recipe.rotary_rows, store.metadata, str(store.path)))
    source, names = token, batch.names
    hits: list[int] = []
    for k, rule in enumerate(rules):  # each rule's column kept: an edit re-runs the rules from the edited one on
        token, (names, count) = run(f"remap rule {k + 1}", (token, recipe.remaps[k]),
                                    lambda names=names, rule=rule: stages.remap_rule(names, rule))
        hits.append(count)
    token, batch = run("remap", (source, token), lambda: stages.remapped(batch, names))
    # the remapped batch is its input's with these names (and a Rename where one changed): same names, same batch
    token, batch = cache.same("remapped names", token, batch, lambda: (source, tuple(batch.names)), len(batch))
    if ad.CONTIGUOUS_INDICES in adapters:
        every = None if len(batch) == len(store.entries) else [remap_name(e.name, rules) for e in store.entries]
        # with a source filter, the indices count the names it dropped too: they depend on the rules as well
        token, batch = run("renumber", (token, recipe.remaps if every is not None else None),
                           lambda: stages.renumber(batch, every))
    skip = ad.SKIP_ENUM_VARIANTS in adapters
    if skip or ENUM_VARIANT in recipe.module_overrides.values():
        token, batch = run("enum variants", (token, skip, overrides, wanted),
                           lambda: stages.enum_variants(batch, recipe.module_overrides, wanted, skip))
    conventions: dict[str, tuple[str, str, str]] = {}
    fuse = ad.FUSE_WEIGHT_NORM in adapters
    linears: dict[str, ModuleGuess] = {}
    if fuse or direction:
        token, split = run("fuse/split", (token, fuse, direction), lambda: stages.fuse_split(batch, fuse, direction))
        batch, linears, conventions = split.batch, split.linears, split.conventions
    token, modules = run("module inference", (token, wanted, overrides),
                         lambda: stages.infer(batch, wanted, recipe.module_overrides, linears,
                                              cache.last("module inference", index)))
    cache.keep_last("module inference", index, modules)
    token, adapted = run("adapters", (token, direction, wanted),
                         lambda: stages.adapt(batch, modules, direction, wanted, cache.last("layout", index)))
    cache.keep_last("layout", index, adapted.layout)
    label = str(store.path)
    filter_token, filtered = run("filter", (token, recipe.filter),
                                 lambda: stages.filter_names(adapted, recipe.filter, label))
    # the cast and what follows read only which tensors are kept: a filter edit that keeps the same ones re-runs none
    kept_token, _ = cache.same("kept", filter_token, filtered, lambda: (token, tuple(filtered.kept)), len(batch))
    token, casted = run("cast", (kept_token, recipe.casts), lambda: stages.cast(adapted, filtered.kept, recipe.casts))
    _, found = run("guesses", (token, direction),
                   lambda: stages.guesses_of(adapted, casted, direction, recipe.casts, conventions, wanted))
    return _SourceResult(label, adapted, casted, filtered, modules.guesses, tuple(hits), found, (filter_token, token))


_NAME = operator.attrgetter("name")


def _merge(sources: Sequence[_SourceResult]) -> tuple[list[PlannedTensor], list[Conflict], list[Override]]:
    """Sources merge like successive ``load_from`` calls: a later one overrides (reported); two tensors of one
    source on one name are a conflict."""
    planned = [_planned(source) for source in sources]
    if len(planned) == 1 and len(set(map(_NAME, planned[0]))) == len(planned[0]):
        return planned[0], [], []  # one source, every name once: nothing to merge
    merged: dict[str, PlannedTensor] = {}
    duplicates: list[PlannedTensor] = []
    conflicts: list[Conflict] = []
    overrides: list[Override] = []
    for source, tensors in zip(sources, planned):
        label = source.label
        own: dict[str, PlannedTensor] = {}
        for tensor in tensors:
            name = tensor.name
            if name in own:
                first = own[name]
                conflicts.append(Conflict(name, f"{label}:{first.source_name}", f"{label}:{tensor.source_name}"))
                duplicates.append(tensor)
                continue
            own[name] = tensor
            if name in merged:
                old = merged[name]
                overrides.append(Override(name, f"{label}:{tensor.source_name}", f"{old.source}:{old.source_name}",
                                          old.source, old.source_name))
            merged[name] = tensor
    return list(merged.values()) + duplicates, conflicts, overrides


def _planned(source: _SourceResult) -> list[PlannedTensor]:
    """One source's kept tensors as ``PlannedTensor``s, in order (one ``map``: 10,000 on every edit)."""
    batch, casted, kinds = source.adapted.batch, source.casted, source.adapted.kinds
    kept = casted.kept
    names, shapes, inputs = (map(column.__getitem__, kept) for column in (batch.names, batch.shapes, batch.inputs))
    return list(map(PlannedTensor, names, casted.dtypes, shapes, inputs, casted.ops, itertools.repeat(source.label),
                    map(kinds.__getitem__, kept)))


def _filter_hits(keep: Filter, sources: Sequence[_SourceResult]) -> list[RuleHits]:
    """Each filter rule's matches over every source's names as the filter saw them (none when nothing was filtered)."""
    if not any(source.filtered.names for source in sources):
        return []
    counts = [source.filtered.counts for source in sources if source.filtered.names]
    if all(c is not None for c in counts):  # counted by the filter stage, in the same pass as its verdicts
        return keep.hits(keep.merged_counts(counts))
    names = [name for source in sources for name in source.filtered.names]
    seen = [f for source in sources for f in source.filtered.facts or ()] if keep.where else None
    return keep.rule_hits(names, seen)


@dataclass(frozen=True)
class _Selection:
    """What the per-source filters keep of each source, and what they drop; ``token`` names this result."""

    kept: list[list[TensorEntry]]
    dropped: list[Dropped]
    token: int = field(default_factory=lambda: next(_TOKENS))


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
