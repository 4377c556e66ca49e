"""The plan's stages, one small function each, over one source's tensors held as columns.

burn-store's order, per source: remap -> renumber -> enum variants -> fuse/split -> module inference
-> adapters -> filter -> cast; ``plan`` then merges the sources. Each stage takes the ``Batch`` the
previous one made (never changing it) plus its own part of the recipe, and returns a new result, so
``plan`` can keep each stage's result by its inputs and re-run only the stages after an edit.

A ``Batch`` holds columns (``names[i]``, ``shapes[i]``, ``ops[i]`` are tensor ``i``): a stage that
changes only names shares every other column with its input, and 10,000 tensors cost 10,000 list
slots, not 10,000 objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import repeat
from operator import attrgetter, contains
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..dtypes import DType
from ..errors import RecipeError
from ..formats.rust_model.shapes import fits
from ..store import TensorEntry
from . import adapters as ad
from . import fused
from .filters import Filter, facts
from .guesses import Guess, kind_guess, placed_guess, variant_guess
from .modules import (
    ENUM_VARIANT,
    NORM_KINDS,
    ModuleGuess,
    Siblings,
    group_columns,
    guess_groups,
    module_path,
    repathed,
    split_names,
)
from .ops import Cast, FuseWeightNorm, Op, Rename, Transpose, UnpermuteRotary
from .recipe import CastRule, RotaryRule
from .remap import CompiledRule


@dataclass(frozen=True)
class Dropped:
    """A source tensor left out: ``name`` as the file writes it, ``matched`` the name the filter saw.

    ``by_recipe_filter`` says which filter dropped it (the recipe's, not a source's own), as data: the
    window lists the names the recipe's filter saw without reading ``reason``'s words back.
    """

    source: str
    name: str
    reason: str
    matched: str = ""
    by_recipe_filter: bool = False

    @classmethod
    def many(cls, source: str, rows: Iterable[tuple[str, str, str]]) -> list["Dropped"]:
        """One per ``(name, reason, matched)`` the recipe's filter dropped, built as fast as dicts: a filter
        may drop 100,000 on every edit."""
        new = object.__new__
        out = []
        for name, reason, matched in rows:
            dropped = new(cls)
            dropped.__dict__.update(source=source, name=name, reason=reason, matched=matched, by_recipe_filter=True)
            out.append(dropped)
        return out


@dataclass(frozen=True)
class Batch:
    """One source's tensors between two stages, as columns; never changed once made.

    ``variants[i]`` are the CamelCase module paths ``--skip-enum-variants`` kept for want of evidence.
    """

    inputs: list[tuple[TensorEntry, ...]]
    names: list[str]
    dtypes: list[DType]
    shapes: list[tuple[int, ...]]
    ops: list[tuple[Op, ...]]
    variants: list[tuple[str, ...]]

    @classmethod
    def of(cls, entries: Sequence[TensorEntry]) -> "Batch":
        """The tensors as the file gives them; one a merged LoRA adapter changed says so (``MergedLora``)."""
        merges = getattr(entries[0].store, "merges", None) if entries else None
        ops = [tuple(merges.get(e.name, ())) for e in entries] if merges else [()] * len(entries)
        return cls([(e,) for e in entries], [e.name for e in entries], [e.dtype for e in entries],
                   [e.shape for e in entries], ops, [()] * len(entries))

    def __len__(self) -> int:
        return len(self.names)

    def source_name(self, i: int) -> str:
        """The name(s) tensor ``i`` has in its file (two for a fused weight norm)."""
        inputs = self.inputs[i]
        return inputs[0].name if len(inputs) == 1 else ", ".join(e.name for e in inputs)

    def renamed(self, names: list[str], ops: list[tuple[Op, ...]]) -> "Batch":
        return replace(self, names=names, ops=ops)


def _rename_all(batch: Batch, new_names: list[str], why: str) -> Batch:
    """``batch`` with every tensor whose name changes given a Rename saying ``why``."""
    if new_names == batch.names:
        return batch
    ops = [(*done, (Rename, old, new, why)) if old != new else done
           for done, old, new in zip(batch.ops, batch.names, new_names)]
    return batch.renamed(new_names, ops)


def _check_bytes(entry: TensorEntry, dtype: DType, op: Op) -> None:
    """A byte-changing op on a quantized tensor would need to decode it: refused, naming the tensor. Only moving
    a GGUF block type's whole rows keeps its blocks as they are."""
    blocks_kept = dtype.kind == "gguf" and isinstance(op, UnpermuteRotary)
    if op.changes_bytes and dtype.kind in ("quantized", "gguf") and not blocks_kept:
        raise RecipeError(f"tensor {entry.name!r} is quantized ({dtype}); "
                          f"'{op.describe()}' would need to decode it (renames and copies are fine)")


# --- 0. rotary rows (on the file's own names, before anything renames them) --------------------------------
def rotary_rows(batch: Batch, rules: Sequence[RotaryRule], metadata: Mapping[str, str], label: str) -> Batch:
    """``UnpermuteRotary`` on each tensor the first matching rule names, its head count from the rule or the
    file's metadata; a RecipeError when the file gives no head count or the rows do not split into heads."""
    from ..rust_regex import quoted_pattern
    from .filters import compile_pattern
    compiled = [(rule, compile_pattern(rule.pattern, "rotary_rows")) for rule in rules]
    ops = list(batch.ops)
    for i, name in enumerate(batch.names):
        rule = next((r for r, pattern in compiled if pattern.search(name)), None)
        if rule is None:
            continue
        heads = rule.head_count(dict(metadata))
        if heads is None:
            raise RecipeError(f"{label}: rotary_rows {quoted_pattern(rule.pattern)} counts heads by "
                              f"{', '.join(map(str, rule.heads))}, and the file has none of them")
        rows = batch.shapes[i][0] if batch.shapes[i] else 0
        if not rows or rows % (2 * heads):
            raise RecipeError(f"{label}: tensor {name!r} has {rows} rows, which do not split into {heads} heads of "
                              "row pairs (rotary_rows)")
        op = UnpermuteRotary(heads, rows)
        _check_bytes(batch.inputs[i][0], batch.dtypes[i], op)
        ops[i] = (*ops[i], op)
    return batch.renamed(batch.names, ops)


# --- 1. remap -------------------------------------------------------------------------------------------
def remap(batch: Batch, rules: Sequence[CompiledRule]) -> tuple[Batch, tuple[int, ...]]:
    """burn-store's ``KeyRemapper``: every rule in order on each name; also each rule's hit count.

    Rule by rule over the whole column (the same as name by name: each rule sees the previous one's
    result), so ``plan`` can keep each rule's column and an edit re-runs only the rules after it.
    """
    if not rules:
        return batch, ()
    names, hits = batch.names, []
    for rule in rules:
        names, count = remap_rule(names, rule)
        hits.append(count)
    return remapped(batch, names), tuple(hits)


def remap_rule(names: list[str], rule: CompiledRule) -> tuple[list[str], int]:
    """One rule on every name, and how many names it matched: at C speed, as it runs on every keystroke in a
    remap field (string methods for plain text, else one ``map`` of the regex)."""
    if not names:
        return names, 0
    if rule.literal is not None and rule.plain is not None:
        return _replace_text(names, rule.literal, rule.at_start, rule.plain)
    changed, counts = zip(*map(rule.regex.subn, repeat(rule.template), names))
    return list(changed), len(counts) - counts.count(0)


def _replace_text(names: list[str], text: str, at_start: bool, new: str) -> tuple[list[str], int]:
    """``remap_rule`` for a pattern that is plain ``text`` (``^text`` when ``at_start``) and a replacement
    without groups: what the regex does (every match replaced, left to right; ``^`` only at the start)."""
    if not at_start:
        hits = list(map(contains, names, repeat(text)))
        return list(map(str.replace, names, repeat(text), repeat(new))), hits.count(True)
    hits = list(map(str.startswith, names, repeat(text)))
    found = hits.count(True)
    if not found:
        return names, 0
    cut = len(text)
    return [new + name[cut:] if hit else name for name, hit in zip(names, hits)], found


def remapped(batch: Batch, names: list[str]) -> Batch:
    """``batch`` under the names the rules made, with a Rename for each that changed."""
    return _rename_all(batch, names, "remap")


# --- 2. renumber ------------------------------------------------------------------------------------------
def renumber(batch: Batch, every_name: Sequence[str] | None) -> Batch:
    """burn-store's contiguous indices over every name of the source after remaps (``every_name``).

    A per-source filter decides what the source contributes, not how it counts: the renumbering
    sees the names it dropped too (``every_name``; None when it dropped none), so a filter never
    shifts another tensor's index.
    """
    mapping = ad.contiguous_indices(batch.names if every_name is None else every_name)
    return _rename_all(batch, [mapping[name] for name in batch.names], "contiguous indices")


# --- 3. enum variants --------------------------------------------------------------------------------------
def enum_variants(batch: Batch, overrides: Mapping[str, str], template: "TemplateIndex | None", skip: bool) -> Batch:
    """Drop enum-variant segments only on evidence: ``--module PATH=EnumVariant``, or the template's names.

    With ``skip`` (``--skip-enum-variants``) CamelCase segments are candidates; one may as well be a
    real name (BERT's ``embeddings.LayerNorm``), so without evidence it is kept and the tensor is
    reported as a guess unless ``--module`` names the path. Paths the user calls variants go either way.
    """
    told = [path for path, kind in overrides.items() if kind == ENUM_VARIANT]
    if not (skip or told):
        return batch
    names, ops, variants = list(batch.names), list(batch.ops), list(batch.variants)
    for i, name in enumerate(batch.names):
        dropped = [path for path in told if name.startswith(path + ".")]
        candidates = ad.variant_paths(name) if skip else []
        if candidates and template is not None:  # module paths, not names: the adapters may still rename the leaf
            if module_path(name) in template.modules:
                continue  # the model has these segments as written
            stripped = ad.strip_enum_variants(name)
            if module_path(stripped) in template.modules:
                names[i], ops[i] = _renamed(name, stripped, ops[i], "skip enum variants (the template has this module)")
                continue
        variants[i] = tuple(path for path in candidates if path not in overrides)
        if dropped:
            names[i], ops[i] = _renamed(name, ad.drop_segments(name, dropped), ops[i], "enum variant (--module)")
    return replace(batch, names=names, ops=ops, variants=variants)


def _renamed(old: str, new: str, ops: tuple[Any, ...], why: str) -> tuple[str, tuple[Any, ...]]:
    return (new, (*ops, (Rename, old, new, why))) if new != old else (old, ops)


# --- 4. fuse / split ------------------------------------------------------------------------------------------
def fuse_weight_norms(batch: Batch) -> Batch:
    """Each complete ``weight_g``/``weight_v`` pair becomes the weight it stands for (Burn has no weight norm)."""
    pairs = ad.weight_norm_pairs(batch.names)
    if not pairs:
        return batch
    at = {name: i for i, name in enumerate(batch.names)}
    fused_at = {at[g_name]: (at[v_name], module) for module, (g_name, v_name) in pairs.items()}
    gone = {v for v, _ in fused_at.values()}
    out = Batch([], [], [], [], [], [])
    for i in range(len(batch)):
        if i in gone:
            continue
        pair = fused_at.get(i)
        if pair is None:
            _append(out, batch, i)
            continue
        v, module = pair
        entry = batch.inputs[v][0]
        op = FuseWeightNorm(batch.names[i], batch.names[v], batch.shapes[v])
        _check_bytes(entry, entry.dtype, op)
        out.inputs.append(batch.inputs[i] + batch.inputs[v])
        out.names.append(f"{module}.weight" if module else "weight")
        out.dtypes.append(entry.dtype)
        out.shapes.append(entry.shape)
        out.ops.append((*batch.ops[i], *batch.ops[v], op))
        out.variants.append(())
    return out


@dataclass(frozen=True)
class Split:
    """The fuse/split stage's result: the batch, the Linears the fused modules prove (module path -> guess),
    and the tensors whose place is a convention (name -> (module path, kind, why))."""

    batch: Batch
    linears: dict[str, ModuleGuess]
    conventions: dict[str, tuple[str, str, str]]


def fuse_split(batch: Batch, weight_norms: bool, direction: str | None) -> Split:
    """Weight norms fused (``--fuse-weight-norm``), then the fused PyTorch modules split or fused back."""
    if weight_norms:
        batch = fuse_weight_norms(batch)
    if not direction:
        return Split(batch, {}, {})
    found = fused.find(batch.names, batch.shapes, direction == ad.PYTORCH_TO_BURN)
    if not found.parts:
        return Split(batch, {}, {})
    linears = {path: ModuleGuess(path, "Linear", why) for path, why in found.linears.items()}
    return Split(_replaced(batch, found.parts), linears, found.conventions)


def _replaced(batch: Batch, parts: Sequence[fused.Part]) -> Batch:
    """``batch`` with the inputs of ``parts`` replaced by the parts, each where its first input was."""
    at = {name: i for i, name in enumerate(batch.names)}
    placed: dict[int, list[fused.Part]] = {}
    used: set[int] = set()
    for part in parts:
        where = [at[name] for name in part.inputs]
        placed.setdefault(min(where), []).append(part)
        used.update(where)
    out = Batch([], [], [], [], [], [])
    for i in range(len(batch)):
        if i not in used:
            _append(out, batch, i)
        for part in placed.get(i, ()):
            where = [at[name] for name in part.inputs]
            entry, dtype = batch.inputs[where[0]][0], batch.dtypes[where[0]]
            _check_bytes(entry, dtype, part.op)
            if any(batch.dtypes[j] != dtype for j in where):
                raise RecipeError(f"'{part.op.describe()}' would mix dtypes "
                                  f"({', '.join(sorted({str(batch.dtypes[j]) for j in where}))}): cast them alike first")
            out.inputs.append(tuple(e for j in where for e in batch.inputs[j]))
            out.names.append(part.name)
            out.dtypes.append(dtype)
            out.shapes.append(part.shape)
            out.ops.append((*(op for j in where for op in batch.ops[j]), part.op))
            out.variants.append(())
    return out


def _append(out: Batch, batch: Batch, i: int) -> None:
    out.inputs.append(batch.inputs[i])
    out.names.append(batch.names[i])
    out.dtypes.append(batch.dtypes[i])
    out.shapes.append(batch.shapes[i])
    out.ops.append(batch.ops[i])
    out.variants.append(batch.variants[i])


# --- 5. module inference ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Modules:
    """Every module path's kind (``guesses``, in order of first appearance) and each tensor's (``per_tensor``,
    and its kind in ``kinds``: "Unknown" without a guess), with each tensor's name split into its module
    path and last segment (``paths``, ``leaves``).

    What the next inference starts from when an edit only moves modules: ``inferred``, the kinds the
    tensors alone give, with each module's tensors (``groups``: leaves and shapes of ``shapes``) and
    its path's last segment (``lasts``, None until needed) in the same order, and ``module_kinds``, the
    final kind of each module of ``guesses``.
    """

    guesses: dict[str, ModuleGuess]
    per_tensor: list[ModuleGuess | None]
    paths: list[str]
    leaves: list[str]
    kinds: list[str] = field(default_factory=list, repr=False)
    inferred: dict[str, ModuleGuess] = field(default_factory=dict, repr=False)
    groups: list[Siblings] = field(default_factory=list, repr=False)
    lasts: list[str] | None = field(default=None, repr=False)
    shapes: list[tuple[int, ...]] = field(default_factory=list, repr=False)
    module_kinds: list[str] = field(default_factory=list, repr=False)


def infer(batch: Batch, template: "TemplateIndex | None", overrides: Mapping[str, str],
          known: Mapping[str, ModuleGuess] | None = None, base: Modules | None = None) -> Modules:
    """Every module path's kind: shapes and siblings, then what earlier stages know, the template, the user.

    ``base``, an earlier result for tensors with the same leaves and shapes (the same source before a
    remap edit), is moved to the new paths when its modules map one to one onto them (``repathed``):
    a pass over the modules instead of one grouping every tensor again.
    """
    paths, leaves = split_names(batch.names)
    found = None
    if base is not None and leaves == base.leaves and (batch.shapes is base.shapes or batch.shapes == base.shapes):
        found = repathed(base.inferred, base.groups, base.lasts, base.paths, paths, leaves)
    if found is not None:
        (inferred, lasts), groups = found, base.groups
    else:
        grouped = group_columns(paths, leaves, batch.shapes)
        inferred, groups, lasts = guess_groups(grouped), list(grouped.values()), None
    guesses = dict(inferred)
    if known:
        guesses.update((path, guess) for path, guess in known.items() if path in guesses)
    if template is not None:
        guesses.update(template.kinds(batch.names, batch.shapes, guesses))
    for path, kind in overrides.items():
        if path in guesses:
            guesses[path] = ModuleGuess(path, kind, "set by user", True)
    module_kinds = list(map(attrgetter("kind"), guesses.values()))
    if found is not None and module_kinds == base.module_kinds:
        kinds = base.kinds  # the same modules, in the same order, of the same kinds: each tensor's kind is as it was
    else:
        kinds = list(map(dict(zip(guesses, module_kinds)).get, paths, repeat("Unknown")))
    return Modules(guesses, list(map(guesses.get, paths)), paths, leaves, kinds, inferred, groups, lasts,
                   batch.shapes, module_kinds)


# --- 6. adapters ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """What a direction asks of each tensor, as columns: the tensors ``transposed`` (each with its op, as a
    1-tuple in ``transposes``) and those ``renamed`` (each with its new leaf and why), decided from each
    tensor's leaf, shape, dtype and module kind, kept to be reused when an edit changes none of those (a
    remap that moves whole modules). ``shapes`` are the shapes after it."""

    direction: str
    leaves: list[str]
    shapes_before: list[tuple[int, ...]]
    dtypes: list[DType]
    kinds: list[str]
    transposed: list[int]
    transposes: list[tuple[Op]]
    renamed: list[int]
    new_leaves: list[str]
    whys: list[str]
    shapes: list[tuple[int, ...]]

    def fits(self, batch: Batch, modules: Modules, direction: str) -> bool:
        """Whether this layout's decisions hold for ``batch`` (column by column, at C speed)."""
        return (direction == self.direction and _same(batch.shapes, self.shapes_before) and _same(batch.dtypes, self.dtypes)
                and modules.leaves == self.leaves and _same(modules.kinds, self.kinds))


def _same(column: list[Any], other: list[Any]) -> bool:
    return column is other or column == other


@dataclass(frozen=True)
class Adapted:
    """The adapters' result: the batch, each tensor's module guess and kind ("Unknown" without a guess), the
    batch before the layout, and the layout's decisions (None without a direction)."""

    batch: Batch
    guesses: list[ModuleGuess | None]
    kinds: list[str]
    before: Batch
    layout: Layout | None = None

    def kind(self, i: int) -> str:
        return self.kinds[i]


def adapt(batch: Batch, modules: Modules, direction: str | None, template: "TemplateIndex | None",
          reusable: Layout | None = None) -> Adapted:
    """The PyTorch/Burn layout by module kind (transpose a Linear, rename a norm's or PReLU's leaves), then
    the enum variants a template's names carry. ``reusable`` (an earlier result's layout) is reused when
    its decisions still hold: only the names and ops are made anew."""
    per_tensor = modules.per_tensor
    if not direction and template is None:
        return Adapted(batch, per_tensor, modules.kinds, batch)
    names, shapes, ops = batch.names, batch.shapes, batch.ops
    decided = None
    if direction:
        fits = reusable is not None and reusable.fits(batch, modules, direction)
        decided = reusable if fits else _layout(batch, modules, direction)
        names, shapes, ops = _laid_out(batch, modules.paths, decided)
    if template is not None:
        names, ops = list(names), list(ops)
        for i, name in enumerate(names):
            if name not in template.shapes and name in template.variants:
                names[i], ops[i] = _renamed(name, template.variants[name], ops[i], "template enum variant")
    return Adapted(replace(batch, names=names, shapes=shapes, ops=ops), per_tensor, modules.kinds, batch, decided)


def _layout(batch: Batch, modules: Modules, direction: str) -> Layout:
    """``direction``'s layout decisions by module kind (one pass: hot on a first plan)."""
    layout_kinds, layout = ad.LAYOUT_KINDS, ad.layout
    whys = {kind: f"{direction}, {kind}" for kind in layout_kinds}
    shapes = list(batch.shapes)
    transposed: list[int] = []
    transposes: list[tuple[Op]] = []
    renamed: list[int] = []
    new_leaves: list[str] = []
    renamed_why: list[str] = []
    for i, (kind, leaf, shape) in enumerate(zip(modules.kinds, modules.leaves, batch.shapes)):
        if kind not in layout_kinds:
            continue
        new_leaf, transpose = layout(direction, leaf, len(shape), kind)
        if transpose:
            if batch.dtypes[i].kind in ("quantized", "gguf"):
                _check_bytes(batch.inputs[i][0], batch.dtypes[i], Transpose((shape[0], shape[1])))
            transposed.append(i)
            transposes.append(((Transpose, (shape[0], shape[1])),))
            shapes[i] = shape[::-1]
        elif new_leaf:
            renamed.append(i)
            new_leaves.append(new_leaf)
            renamed_why.append(whys[kind])
    return Layout(direction, modules.leaves, batch.shapes, batch.dtypes, modules.kinds, transposed, transposes,
                  renamed, new_leaves, renamed_why, shapes)


def _laid_out(batch: Batch, paths: list[str],
              decided: Layout) -> tuple[list[str], list[tuple[int, ...]], list[tuple[Op, ...]]]:
    """``batch``'s names, shapes and ops after ``decided``'s transposes and renames."""
    names, ops = list(batch.names), list(batch.ops)
    for i, op in zip(decided.transposed, decided.transposes):
        ops[i] += op
    for i, leaf, why in zip(decided.renamed, decided.new_leaves, decided.whys):
        module = paths[i]
        new = f"{module}.{leaf}" if module else leaf
        ops[i] += ((Rename, names[i], new, why),)
        names[i] = new
    return names, decided.shapes, ops


# --- 7. filter -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Filtered:
    """Which tensors the recipe's filter keeps (indices), why it drops the others, and what it saw: every
    name, and the facts the predicates asked for (None when none did); ``counts`` are the rules' hit
    counts over these names (``Filter.rule_hits``' order), None when predicates leave them to the plan."""

    kept: list[int]
    dropped: list[Dropped]
    names: list[str]
    facts: list[dict[str, Any]] | None
    counts: tuple[int, ...] | None = None


def filter_names(adapted: Adapted, keep: Filter, label: str) -> Filtered:
    """burn-store's ``PathFilter`` on the names the stages before produced (the model's own paths)."""
    batch = adapted.batch
    names = batch.names
    if keep.is_empty:
        return Filtered(list(range(len(batch))), [], [], None)
    counts = None
    if keep.where:
        verdict = keep.verdict
        seen = [facts(name, batch.dtypes[i], batch.shapes[i], adapted.kind(i)) for i, name in enumerate(names)]
        verdicts = [verdict(name, tensor_facts) for name, tensor_facts in zip(names, seen)]
    else:
        seen, (verdicts, counts) = None, keep.judge(names)
    kept = [i for i, reason in enumerate(verdicts) if reason is None]
    inputs, source_name = batch.inputs, batch.source_name
    why = {reason: f"filter: {reason}" for reason in set(verdicts) if reason is not None}
    dropped = Dropped.many(label, ((inputs[i][0].name if len(inputs[i]) == 1 else source_name(i), why[reason], names[i])
                                   for i, reason in enumerate(verdicts) if reason is not None))
    return Filtered(kept, dropped, names, seen, counts)


# --- 8. cast --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Casted:
    """The kept tensors after the casts: ``dtypes[j]``/``ops[j]`` for kept tensor ``kept[j]``."""

    kept: list[int]
    dtypes: list[DType]
    ops: list[tuple[Op, ...]]


def cast(adapted: Adapted, kept: list[int], casts: Sequence[CastRule]) -> Casted:
    """Each cast rule in order on the float tensors of the module kinds it names (all when none)."""
    batch = adapted.batch
    dtypes = [batch.dtypes[i] for i in kept]
    ops = [batch.ops[i] for i in kept]
    for rule in casts:
        target, modules = rule.dtype, rule.modules
        for j, i in enumerate(kept):
            dtype = dtypes[j]
            if dtype.is_float and dtype != target and (not modules or adapted.kind(i) in modules):
                ops[j] = (*ops[j], (Cast, dtype, target))
                dtypes[j] = target
    return Casted(kept, dtypes, ops)


# --- guesses ---------------------------------------------------------------------------------------------------
def guesses_of(adapted: Adapted, casted: Casted, direction: str | None, casts: Sequence[CastRule],
               conventions: Mapping[str, tuple[str, str, str]] | None = None,
               template: "TemplateIndex | None" = None) -> list[Guess]:
    """The guesses each kept tensor's outcome rests on: enum-variant segments kept, a kind taken from its name,
    a fused module's layer placed by convention (unless the template has the name)."""
    batch = adapted.batch
    found: list[Guess] = []
    for j, i in enumerate(casted.kept):
        if conventions:
            placed = conventions.get(adapted.before.names[i])
            if placed is not None and not (template is not None and template.has(batch.names[i])):
                found.append(placed_guess(batch.names[i], batch.source_name(i), *placed))
        guess = adapted.guesses[i]
        if batch.variants[i] or (guess is not None and guess.guessed):
            before = (adapted.before.names[i], adapted.before.shapes[i])
            found += _guesses(batch.names[i], batch.source_name(i), batch.variants[i], guess, before,
                              casted.dtypes[j], casted.ops[j], direction, casts)
    return found


def _guesses(name: str, source_name: str, variants: tuple[str, ...], guess: ModuleGuess | None,
             before: tuple[str, tuple[int, ...]], dtype: DType, ops: tuple[Op, ...], direction: str | None,
             casts: Sequence[CastRule]) -> list[Guess]:
    found = [variant_guess(name, source_name, path, guess.kind if guess and guess.path == path else None)
             for path in variants]
    if guess is None or not guess.guessed:
        return found
    shape = before[1]
    differs, could_transpose = _kind_matters(direction, before[0].rpartition(".")[2], len(shape), dtype.is_float,
                                             tuple(casts), guess.kind, guess.alternatives)
    if differs:
        found.append(kind_guess(name, source_name, guess, ops, could_transpose))
    return found


@lru_cache(maxsize=4096)
def _kind_matters(direction: str | None, leaf: str, ndim: int, floating: bool, casts: tuple[CastRule, ...], kind: str,
                  alternatives: tuple[str, ...]) -> tuple[bool, bool]:
    """Whether another of ``alternatives`` would change a ``kind`` tensor's outcome (its name, the kinds of
    its layout ops, its casts), and whether one would transpose it. Cached: it rests only on the leaf, the
    number of dimensions and whether it is a float, and a model repeats those thousands of times."""
    def outcome(kind: str) -> tuple[Any, ...]:  # what ``ad.layout`` and the casts would do, by kind
        new_leaf, transpose = ad.layout(direction, leaf, ndim, kind) if direction else (None, False)
        targets = tuple(c.to for c in casts if floating and (not c.modules or kind in c.modules))
        return (None, (Transpose,)) if transpose else (new_leaf, (Rename,)) if new_leaf else (None, ()), targets

    ours = outcome(kind)
    others = [outcome(other) for other in alternatives if other != kind]
    return any(other != ours for other in others), any(Transpose in other[0][1] for other in others)


# --- the template --------------------------------------------------------------------------------------------
class TemplateIndex:
    """A template's names and shapes, also under names without enum variants (how a source spells them), and the
    module kinds it declares (a model's source code does: ``declared``, module path -> kind or None)."""

    def __init__(self, names_shapes: Sequence[tuple[str, tuple[int, ...]]],
                 declared: Callable[[str], str | None] = lambda path: None):
        self.declared = declared
        self.shapes = dict(names_shapes)
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

    def kinds(self, names: Sequence[str], shapes: Sequence[tuple[int, ...]],
              guesses: Mapping[str, ModuleGuess]) -> dict[str, ModuleGuess]:
        """Module kinds the template's names and shapes prove, where they differ from the guess or settle it.

        A module whose type the template's source declares is that kind. A template norm (``gamma``) is a
        norm, a PReLU (``alpha``) a PRelu; a 2-D weight the template wants transposed is a Linear; one it
        wants as it is (and not square) is not a Linear (a dimension set at run time decides neither way).
        A guess the template agrees with is settled too: it no longer rests on the name alone.
        """
        found = {}
        for name, shape in zip(names, shapes):
            path, _, leaf = name.rpartition(".")
            guess = guesses.get(path)
            if guess is None:
                continue
            declared = self.declared(path)
            if declared is not None:
                if guess.kind != declared or guess.guessed:
                    found[path] = ModuleGuess(path, declared, f"the template's source declares a {declared} here")
                continue
            if leaf != "weight":
                continue
            if len(shape) == 2 and shape[0] != shape[1]:
                wanted = self.shape(name)
                as_is = wanted is not None and fits(wanted, shape) and not fits(wanted, shape[::-1])
                transposed = wanted is not None and fits(wanted, shape[::-1]) and not fits(wanted, shape)
                if transposed and (guess.kind != "Linear" or guess.guessed):
                    found[path] = ModuleGuess(path, "Linear", "the template wants this weight transposed")
                elif as_is and guess.kind == "Linear":
                    found[path] = ModuleGuess(path, "Unknown", "the template wants this 2-D weight as it is")
                elif as_is and guess.guessed:
                    found[path] = ModuleGuess(path, guess.kind, "the template wants this 2-D weight as it is")
            elif self.has(f"{path}.gamma") and (guess.kind not in NORM_KINDS or guess.guessed):
                kind = guess.kind if guess.kind in NORM_KINDS else (
                    "BatchNorm" if self.has(f"{path}.running_mean") else "LayerNorm")
                found[path] = ModuleGuess(path, kind, "the template has gamma here")
            elif self.has(f"{path}.alpha") and (guess.kind != "PRelu" or guess.guessed):
                found[path] = ModuleGuess(path, "PRelu", "the template has alpha here")
        return found
