"""Recipe changes that make a source load into a target model: searched together, every chain proven.

Evidence comes from aligning the recipe's plan with the target (a template, or any file): names the
target wants but does not get (missing), names the plan offers that the target does not want (unused),
shapes that are each other's transpose, dtypes that differ. From it come candidate changes:

- one remap rule for a family of names: a prefix added, stripped or replaced (``model.``, DataParallel's
  ``module.``, torch.compile's ``_orig_mod.``, ``backbone.`` -> ``encoder.``), one segment renamed (lined up
  segment by segment, never every missing name against every unused one);
- a PyTorch/Burn adapter, or a module settled as ``Linear``, where ``[out, in]`` meets ``[in, out]``;
- a fused-gate split (or fuse), where one side has PyTorch's fused ``nn.LSTM``/``nn.GRU``/
  ``nn.MultiheadAttention`` tensors and the other Burn's gate (or q/k/v) Linears (``engine/surgery/fused.py``
  proves both from names and shapes): the adapter of that direction, named for what it splits;
- contiguous indices, where numbered names leave gaps (``nn.Sequential``'s ReLUs);
- a cast, where every differing dtype is one the target has as the same float type;
- a PyTorch checkpoint's top-level key, where the names the target wants sit under one branch;
- one of the recipe's own remap rules, adapters, Linear settlements or casts taken out.

One change alone often fixes nothing: a Lightning checkpoint needs its key read, its ``model.`` prefix
stripped and the adapter, together. So chains of changes are searched, breadth first with a beam, and each
chain's next candidates come from the evidence of its own plan. A change that loads nothing new is still
followed one change further when it changes the names (a key reveals a prefix), and a pair whose shapes are
each other's transpose is followed too (an adapter may settle it). No name match is trusted: every chain is
planned (so the recipe's adapters have their say) and aligned, and is offered only when every pair it
creates agrees in shape and nothing that loaded before stops loading. Chains are ranked by tensors made to
load, then by spare tensors left (a key leaves an optimizer's state out of the output), then by fewest
changes.

Changes edit the recipe, never fight it: a rule that would undo one of the recipe's rules removes that
rule instead, and one that renames what a rule writes is merged into it, each only when the file's names
come out exactly the same. Pure Python, no Qt: the CLI (``diff --suggest``, ``convert --fit``) and the
GUI's diff view and Make It Load share it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Iterator, Sequence

from ..errors import StoreStudioError
from ..formats import open_store
from ..humanize import quoted
from ..store import Store
from . import adapters as ad
from . import fused
from .align import AlignmentReport, align
from .filters import REMAP
from .modules import module_path
from .ops import FuseSplit, Rename, SplitFused
from .plan import Plan, PlannedTensor, StageCache, plan
from .recipe import CAST_TARGETS, CastRule, Recipe
from .remap import CompiledRule, RemapRule, compile_rules, parse_replacement, remap_name

MAX_PREFIX_SEGMENTS = 3  # prefixes of up to this many segments are tried
NAME_CANDIDATES = 8  # the front-running name patterns that are planned and checked, per chain
MINIMUM_RENAME = 2  # a bulk rename fixes at least this many names (one name: the diff's row suggestions)
FANOUT = 16  # a rest of a name shared by more missing names than this (``running_mean``) pairs no name in particular
PYTORCH = "pytorch"
# The search's bounds are counts, never a clock, so the same files get the same suggestions on any machine.
# A plan and its alignment take about 0.15 s at 10,000 tensors, so a search stays within a few seconds there
# (tests/engine/surgery/test_suggest_combinations.py bounds its CPU time in a child process).
MAX_CHANGES = 5  # changes in one chain
BEAM_WIDTH = 3  # chains carried to the next change: those that load the most
EXPLORERS = 2  # and those that load nothing new yet but change the names, fewest spare tensors first
MAX_PLANS = 40  # plans (each then aligned) in one search
REMOVALS = 4  # of the recipe's own rules, adapters, Linear settlements and casts, at most this many tried out

RENAME, ADAPTER, LINEAR, CAST, TOP_LEVEL_KEY, REMOVE = "rename", "adapter", "linear", "cast", "top_level_key", "remove"
FUSED = "fused"  # an adapter whose evidence is fused modules on one side and their split form on the other
PREFERRED = (FUSED, ADAPTER, LINEAR, TOP_LEVEL_KEY, RENAME, CAST, REMOVE)  # of two that do the same, the one meant
Reopen = Callable[[Store, str], Store]  # a PyTorch source opened again at a top-level key


@dataclass(frozen=True)
class Pair:
    """One tensor a suggestion makes load: its name in the source file, the target's name, and the shape."""

    source: str
    target: str
    shape: tuple[int, ...]

    def line(self) -> str:
        return f"{self.source} → {self.target} {list(self.shape)}"


@dataclass(frozen=True)
class Change:
    """One edit of a recipe. Exactly one of ``remap``, ``adapter``, ``linear_modules``, ``cast`` and
    ``top_level_key`` says what is added, or with ``kind`` REMOVE what is taken out; a remap rule is
    appended, or put where ``in_place_of`` (a rule of the recipe it is merged into) was."""

    kind: str
    description: str
    remap: RemapRule | None = None
    adapter: str | None = None
    linear_modules: tuple[str, ...] = ()
    cast: CastRule | None = None
    top_level_key: str | None = None
    in_place_of: RemapRule | None = None

    @property
    def terms(self) -> str:
        """The change in the recipe's own terms: ``remap '^' -> 'model.'``, ``remove adapter pytorch-to-burn``."""
        if self.kind == REMOVE:
            return f"remove {self._item()}"
        if self.in_place_of is not None:
            return f"{self._item()} in place of {_rule_words(self.in_place_of)}"
        return self._item()

    def _item(self) -> str:
        if self.remap is not None:
            return f"remap {_rule_words(self.remap)}"
        if self.adapter is not None:
            return f"adapter {self.adapter}"
        if self.linear_modules:
            return "module " + ", ".join(f"{m}=Linear" for m in self.linear_modules)
        if self.cast is not None:
            return f"cast {self.cast.to}"
        return f"top-level key {self.top_level_key!r}"

    def apply(self, recipe: Recipe) -> Recipe:
        """``recipe`` with this change made; a cast takes the place of the recipe's casts of every tensor."""
        if self.kind == REMOVE:
            return _taken_out(recipe, self)
        if self.remap is not None:
            return recipe.with_changes(remaps=_with_rule(recipe.remaps, self.remap, self.in_place_of))
        if self.adapter is not None:
            return recipe.with_changes(adapters=recipe.adapters + (self.adapter,))
        if self.linear_modules:
            return recipe.with_changes(module_overrides={**recipe.module_overrides,
                                                         **{m: "Linear" for m in self.linear_modules}})
        if self.cast is not None:
            return recipe.with_changes(casts=tuple(c for c in recipe.casts if c.modules) + (self.cast,))
        return recipe.with_changes(top_level_key=self.top_level_key)


def _rule_words(rule: RemapRule) -> str:
    return f"{quoted(rule.pattern)} -> {quoted(rule.replacement)}"


def _with_rule(rules: tuple[RemapRule, ...], rule: RemapRule, in_place_of: RemapRule | None) -> tuple[RemapRule, ...]:
    if in_place_of in rules:
        at = rules.index(in_place_of)
        return rules[:at] + (rule,) + rules[at + 1:]
    return rules + (rule,)


def _taken_out(recipe: Recipe, change: Change) -> Recipe:
    return recipe.with_changes(remaps=tuple(r for r in recipe.remaps if r != change.remap),
                               adapters=tuple(a for a in recipe.adapters if a != change.adapter),
                               module_overrides={path: kind for path, kind in recipe.module_overrides.items()
                                                 if path not in change.linear_modules},
                               casts=tuple(c for c in recipe.casts if c != change.cast))


@dataclass(frozen=True)
class Step:
    """One change of a chain, proven in its place: what it made load on top of the changes before it.

    ``missing`` counts the target's tensors missing or mismatched in shape before it; ``dtypes_fixed`` the
    dtype differences it removed (a cast).
    """

    change: Change
    pairs: tuple[Pair, ...]
    missing: int
    dtypes_fixed: int = 0

    @property
    def fixes(self) -> int:
        return len(self.pairs)

    @property
    def label(self) -> str:
        """``strip the prefix model.: fixes 10 of 16 missing or mismatched``."""
        if self.change.kind == CAST:
            return f"{self.change.description}: fixes {self.dtypes_fixed:,} dtype difference(s)"
        if not self.pairs:
            return f"{self.change.description}: loads nothing alone; the changes after it need it"
        return f"{self.change.description}: fixes {self.fixes:,} of {self.missing:,} missing or mismatched"

    def line(self, prefix: str = "suggest") -> str:
        """One line for a terminal: ``suggest: <label>: <terms>``."""
        return f"{prefix}: {self.label}: {self.change.terms}"


@dataclass(frozen=True)
class Suggestion:
    """A chain of one or more changes, proven together: after all of them every tensor ``pairs`` names
    loads (of ``missing``, the target's tensors missing or mismatched before), and ``dtypes_fixed`` dtype
    differences are gone. Applying it is one edit of the recipe."""

    steps: tuple[Step, ...]
    pairs: tuple[Pair, ...]
    missing: int
    dtypes_fixed: int = 0

    @property
    def changes(self) -> tuple[Change, ...]:
        return tuple(step.change for step in self.steps)

    @property
    def fixes(self) -> int:
        return len(self.pairs)

    @property
    def description(self) -> str:
        return " + ".join(change.description for change in self.changes)

    @property
    def label(self) -> str:
        """``strip the prefix model. + add the pytorch-to-burn adapter (...): fixes 16 of 16 missing or
        mismatched`` (what the GUI and CLI print)."""
        fixed = [f"{self.fixes:,} of {self.missing:,} missing or mismatched"] if self.pairs else []
        fixed += [f"{self.dtypes_fixed:,} dtype difference(s)"] if self.dtypes_fixed else []
        return f"{self.description}: fixes {' and '.join(fixed)}"

    @property
    def terms(self) -> str:
        """The changes in the recipe's own terms, in order."""
        return "; ".join(change.terms for change in self.changes)

    def line(self, prefix: str = "suggest") -> str:
        return f"{prefix}: {self.label}: {self.terms}"

    def apply(self, recipe: Recipe) -> Recipe:
        """``recipe`` with every change made, in order."""
        for change in self.changes:
            recipe = change.apply(recipe)
        return recipe


@dataclass(frozen=True)
class Fit:
    """What ``fit`` made: the recipe, the steps it took in order, and the recipe's alignment with the target
    (the closest names of what is still missing included)."""

    recipe: Recipe
    steps: tuple[Step, ...]
    report: AlignmentReport


def suggest(stores: Sequence[Store], recipe: Recipe, target: Store, *, template: Store | None = None,
            reopen: Reopen | None = None, limit: int = 5,
            cancelled: Callable[[], bool] = lambda: False) -> list[Suggestion]:
    """The chains of changes to ``recipe`` that make more of ``target``'s tensors load from ``stores``, best
    first; a variation of a better one (sharing a change with it, or making no pair it does not) is left out.

    ``template`` lends the plan module kinds and enum variants, as the recipe's own template does;
    ``stores`` are the sources as the plan reads them (a PyTorch file already opened at its key).
    ``reopen(store, key)`` opens a PyTorch source at a top-level key (closed here after the search);
    without it no top-level key is suggested.
    """
    keyed = _KeyedSources(reopen)
    try:
        return _Search(stores, recipe, target, template, keyed, cancelled).suggestions(MAX_CHANGES, limit)
    finally:
        keyed.close()


def fit(stores: Sequence[Store], recipe: Recipe, target: Store, *, template: Store | None = None,
        reopen: Reopen | None = None, rounds: int = 8, cancelled: Callable[[], bool] = lambda: False) -> Fit:
    """The best chain made, then the best for the recipe that makes, until none is left or ``rounds`` changes
    are taken: one recipe that does them all, what ``convert --fit``, ``diff --suggest`` and Make It Load
    apply. A top-level key step reads the first source at that key for the searches after it (closed here).
    """
    keyed = _KeyedSources(reopen)
    try:
        search = _Search(stores, recipe, target, template, keyed, cancelled)
        taken: list[Step] = []
        while len(taken) < rounds:
            best = search.best(min(MAX_CHANGES, rounds - len(taken)))
            if best is None:
                break
            taken += best.steps
            search = _Search(best.stores, best.recipe, target, template, keyed, cancelled)
        return Fit(search.root.recipe, tuple(taken), align(search.root.plan, target))
    finally:
        keyed.close()


def reopen_at_key(store: Store, key: str) -> Store:
    """A PyTorch source opened again at a top-level key: the ``reopen`` the CLI and the window give."""
    return open_store(store.path, top_level_key=key)


class _KeyedSources:
    """The first source opened again at top-level keys, once per key, and closed together."""

    def __init__(self, reopen: Reopen | None) -> None:
        self.reopen = reopen
        self._opened: dict[str, Store] = {}

    def at(self, store: Store, key: str) -> Store:
        assert self.reopen is not None
        if key not in self._opened:
            self._opened[key] = self.reopen(store, key)
        return self._opened[key]

    def close(self) -> None:
        for store in self._opened.values():
            store.close()
        self._opened.clear()


class _SearchCache(StageCache):
    """The stage results of one search, apart from the window's own plans (which it would push out): room for
    every chain the beam carries, so a chain's children re-run only the stages after their change."""

    SIZE = 2 * (BEAM_WIDTH + EXPLORERS) + 2


@dataclass(frozen=True)
class _State:
    """A chain of changes made and proven: its recipe, the sources as its plan reads them, plan and alignment.

    ``pending`` are target names the chain paired with a shape that is the transpose of theirs (followed, not
    offered: an adapter or a Linear settlement may make them load); ``idle`` counts the chain's last changes
    in a row that made nothing new load.
    """

    steps: tuple[Step, ...]
    recipe: Recipe
    stores: tuple[Store, ...]
    plan: Plan
    report: AlignmentReport
    pending: frozenset[str] = frozenset()
    idle: int = 0


class _Search:
    """One bounded beam search from ``recipe`` over ``stores``: the chains it proves, best first."""

    def __init__(self, stores: Sequence[Store], recipe: Recipe, target: Store, template: Store | None,
                 keyed: _KeyedSources, cancelled: Callable[[], bool]) -> None:
        self.target, self.template, self.keyed, self.cancelled = target, template, keyed, cancelled
        self.cache = _SearchCache()
        self.plans = 0
        self.tried: set[tuple] = {_recipe_key(recipe)}
        base = plan(stores, recipe, template=template, cache=self.cache)
        self.root = _State((), recipe, tuple(stores), base, align(base, target, closest=False))
        self.outcomes = {_outcome(base)}
        self.loaded = frozenset(self.root.report.applied)
        self.mismatched = {m.name for m in self.root.report.shape_mismatches}
        self._names: dict[tuple[int, ...], list[str]] = {}

    # --- the search --------------------------------------------------------------------------------------
    def suggestions(self, depth: int, limit: int) -> list[Suggestion]:
        kept: list[Suggestion] = []
        for state in self._offered(depth):
            found = self._suggestion(state)
            if not any(_variation(found, better) for better in kept):
                kept.append(found)
        return kept[:limit]

    def best(self, depth: int) -> _State | None:
        offered = self._offered(depth)
        return offered[0] if offered else None

    def _offered(self, depth: int) -> list[_State]:
        """Every chain of up to ``depth`` changes the beam reached and proved, best first."""
        report = self.root.report
        if report.ok and not report.dtype_differences:
            return []
        offered: list[_State] = []
        frontier = [self.root]
        for _ in range(depth):
            children = [child for state in frontier for child in self._children(state)]
            offered += [child for child in children if self._offers(child)]
            frontier = _beam(children)
            complete = [len(state.report.unused) for state in offered if _complete(state)]
            if complete:  # everything loads: only a chain that may leave fewer spare tensors (a key) can do better
                frontier = [state for state in frontier
                            if len(state.report.unused) - len(state.report.missing) < min(complete)]
            if self.plans >= MAX_PLANS or not frontier:
                break
        return sorted(offered, key=self._rank)

    def _children(self, state: _State) -> Iterator[_State]:
        if self.plans >= MAX_PLANS:
            return
        for change in self._candidates(state):
            if self.plans >= MAX_PLANS:
                return
            if self.cancelled():
                raise InterruptedError("suggestions cancelled")
            child = self._child(state, change)
            if child is not None:
                yield child

    def _candidates(self, state: _State) -> list[Change]:
        base, report, recipe = state.plan, state.report, state.recipe
        renames = _rename_candidates(report, state.stores, recipe, self.keyed.reopen is not None)
        found = [*_layout_candidates(base, report, recipe, self.target), *_index_candidates(base, report, recipe),
                 *_cast_candidates(report), *_sparing(renames, base, report),
                 *_removal_candidates(base, recipe, self.root.recipe)]
        # of two changes with one outcome only the first is planned: the one a user means comes first
        return sorted(found, key=lambda change: PREFERRED.index(change.kind))

    def _child(self, parent: _State, change: Change) -> _State | None:
        """Plan and align with ``change`` made; the chain it extends, or None when it was tried already,
        cannot be planned, or breaks what loads."""
        recipe = change.apply(parent.recipe)
        key = _recipe_key(recipe)
        if key in self.tried:
            return None
        self.tried.add(key)
        self.plans += 1
        try:
            stores = self._stores(parent, change)
            after = plan(stores, recipe, template=self.template, cache=self.cache)
            report = align(after, self.target, closest=False)
        except (StoreStudioError, ValueError):
            return None  # the change cannot be planned (a cast of a quantized tensor, a key the file lacks)
        outcome = _outcome(after)
        if after.conflicts or outcome in self.outcomes:
            return None  # two tensors on one name, or what another chain (as short or shorter) makes already
        self.outcomes.add(outcome)
        return self._proven(parent, change, stores, after, report)

    def _proven(self, parent: _State, change: Change, stores: tuple[Store, ...], after: Plan,
                report: AlignmentReport) -> _State | None:
        if not self.loaded <= set(report.applied):
            return None  # something that loaded would stop loading
        made = [m for m in report.shape_mismatches if m.name not in self.mismatched]
        if not all(m.matches_if_transposed for m in made):
            return None  # a pair it creates disagrees in shape: the name match is wrong
        pending = frozenset(m.name for m in made)
        was = set(parent.report.applied)
        gained = [name for name in report.applied if name not in was]
        fixed, new = _dtype_change(parent.report, report)
        if change.kind == CAST and (not fixed or new):
            return None
        if change.kind == RENAME and 0 < len(gained) + len(pending - parent.pending) < MINIMUM_RENAME:
            return None
        change = self._settled(change, parent, stores)
        recipe = change.apply(parent.recipe)
        self.tried.add(_recipe_key(recipe))
        step = Step(change, _pairs(after, report, gained), _broken(parent.report), fixed if change.kind == CAST else 0)
        moved = bool(gained or pending - parent.pending or step.dtypes_fixed)
        return _State(parent.steps + (step,), recipe, stores, after, report, pending, 0 if moved else parent.idle + 1)

    def _stores(self, parent: _State, change: Change) -> tuple[Store, ...]:
        if change.top_level_key is None or self.keyed.reopen is None:
            return parent.stores
        return (self.keyed.at(parent.stores[0], change.top_level_key), *parent.stores[1:])

    def _settled(self, change: Change, parent: _State, stores: tuple[Store, ...]) -> Change:
        """A rule appended, as the edit of the recipe's rules that renames the sources' names alike."""
        if change.kind != RENAME or change.remap is None or not parent.recipe.remaps:
            return change
        names = self._names.get(tuple(map(id, stores)))
        if names is None:
            names = self._names[tuple(map(id, stores))] = [e.name for store in stores for e in store.entries]
        return settled_rule(parent.recipe.remaps, change, names)

    # --- what is offered, and in which order ---------------------------------------------------------------
    def _offers(self, state: _State) -> bool:
        return not state.pending and (len(state.report.applied) > len(self.loaded)
                                      or bool(_dtype_change(self.root.report, state.report)[0]))

    def _rank(self, state: _State) -> tuple:
        fixed, _ = _dtype_change(self.root.report, state.report)
        return (-len(state.report.applied), -fixed, len(state.report.unused), len(state.steps), _kinds(state))

    def _suggestion(self, state: _State) -> Suggestion:
        gained = [name for name in state.report.applied if name not in self.loaded]
        fixed, _ = _dtype_change(self.root.report, state.report)
        return Suggestion(state.steps, _pairs(state.plan, state.report, gained), _broken(self.root.report), fixed)


def _recipe_key(recipe: Recipe) -> tuple:
    """What a recipe changes, order aside: two chains making the same changes in another order are one."""
    return (frozenset(recipe.remaps), frozenset(recipe.adapters), frozenset(recipe.module_overrides.items()),
            frozenset(recipe.casts), recipe.top_level_key)


def _outcome(result: Plan) -> frozenset[tuple]:
    return frozenset((t.name, t.shape, t.dtype) for t in result.tensors)


def _complete(state: _State) -> bool:
    return state.report.ok and not state.report.dtype_differences


def _kinds(state: _State) -> tuple[int, ...]:
    return tuple(PREFERRED.index(step.change.kind) for step in state.steps)


def _beam(children: list[_State]) -> list[_State]:
    """The chains carried to the next change: those that load (or pair, transposed) the most, then a few
    that load nothing new yet, fewest spare tensors first (a key that leaves an optimizer's state behind)."""
    moving = sorted((c for c in children if c.idle == 0),
                    key=lambda c: (-len(c.report.applied) - len(c.pending), len(c.report.unused), _kinds(c)))
    idle = sorted((c for c in children if c.idle == 1),
                  key=lambda c: (c.steps[-1].change.kind != TOP_LEVEL_KEY, len(c.report.unused), _kinds(c)))
    keys = [c for c in idle[:EXPLORERS] if c.steps[-1].change.kind == TOP_LEVEL_KEY]
    # a key first: it changes every name at once, and its own children are what it is for (the plans may run
    # out before the beam's last chains are extended)
    return keys + moving[:BEAM_WIDTH] + [c for c in idle[:EXPLORERS] if c not in keys]


def _broken(report: AlignmentReport) -> int:
    return len(report.missing) + len(report.shape_mismatches)


def _dtype_change(before: AlignmentReport, after: AlignmentReport) -> tuple[int, int]:
    """(dtype differences gone, dtype differences new) from ``before`` to ``after``."""
    was, now = {d.name for d in before.dtype_differences}, {d.name for d in after.dtype_differences}
    return len(was - now), len(now - was)


def _pairs(result: Plan, report: AlignmentReport, names: Iterable[str]) -> tuple[Pair, ...]:
    by_name = {t.name: t for t in result.tensors}
    variants = report.through_variants
    return tuple(Pair(by_name[variants.get(n, n)].source_name, n, tuple(by_name[variants.get(n, n)].shape))
                 for n in names)


def _variation(found: Suggestion, better: Suggestion) -> bool:
    """Whether ``found`` adds nothing beside ``better``: it shares a change with it, or ``better`` makes its
    pairs and fixes its dtypes too."""
    if set(found.changes) & set(better.changes):
        return True
    return found.dtypes_fixed <= better.dtypes_fixed and {p.target for p in found.pairs} <= {p.target for p in better.pairs}


def remap_input_name(tensor: PlannedTensor) -> str:
    """The name a newly appended remap rule sees: the file's name after the recipe's rules.

    A trap: remaps run before the adapters, so the planned name (``norm1.gamma``) is not what a rule
    must match (``norm1.weight``).
    """
    renamed = [op.new for op in tensor.ops if isinstance(op, Rename) and op.why == "remap"]
    return renamed[-1] if renamed else tensor.source_name


def _sparing(renames: list[Change], result: Plan, report: AlignmentReport) -> list[Change]:
    """The rules that rename no tensor that loads or pairs transposed (one that did would move it off the name
    the target wants: never worth a plan). ``rename weight to gamma`` for a BatchNorm also renames every conv
    weight that loads."""
    paired = [*report.applied, *(m.name for m in report.shape_mismatches if m.matches_if_transposed)]
    wanted = {report.through_variants.get(name, name) for name in paired}
    loading = [remap_input_name(t) for t in result.tensors if t.name in wanted and len(t.inputs) == 1]
    kept = []
    for change in renames:
        (rule,) = compile_rules([change.remap]) if change.remap is not None else (None,)
        if rule is None or not any(rule.regex.search(name) for name in loading):
            kept.append(change)
    return kept


# --- rules that edit the recipe's rules -------------------------------------------------------------------
def settled_rule(rules: tuple[RemapRule, ...], change: Change, names: Sequence[str]) -> Change:
    """``change`` (its rule appended to ``rules``) as the edit with the fewest rules that renames ``names``
    alike: taking out a rule it only undoes, or merging it into the rule whose output it renames.

    Proven on the names, not on the patterns. Only names some rule matches can come out otherwise, so only
    those are compared, and a comparison stops at the first name that differs.
    """
    assert change.remap is not None
    every = compile_rules(rules + (change.remap,))
    touched = [name for name in names if _matched(name, every)]
    for i, rule in enumerate(rules):
        if _same_renames(every, rules[:i] + rules[i + 1:], touched):
            return Change(REMOVE, f"remove the remap rule {_rule_words(rule)}", remap=rule)
        merged = _merged(rule, change.remap)
        if merged is not None and _same_renames(every, rules[:i] + (merged,) + rules[i + 1:], touched):
            return replace(change, description=f"{change.description} (in place of the rule {_rule_words(rule)})",
                           remap=merged, in_place_of=rule)
    return change


def _matched(name: str, rules: Sequence[CompiledRule]) -> bool:
    """Whether any of ``rules``, applied in order, matches ``name`` (or what the ones before made of it)."""
    matched = False
    for rule in rules:
        if rule.regex.search(name):
            name, matched = rule.regex.subn(rule.template, name)[0], True
    return matched


def _same_renames(these: Sequence[CompiledRule], rules: tuple[RemapRule, ...], names: Iterable[str]) -> bool:
    those = compile_rules(rules)
    return all(remap_name(name, these) == remap_name(name, those) for name in names)


def _merged(rule: RemapRule, then: RemapRule) -> RemapRule | None:
    """``rule`` writing what ``then`` makes of its text, when its replacement is plain text; else None."""
    pieces = parse_replacement(rule.replacement)
    if any(group for group, _ in pieces):
        return None
    text = "".join(piece for _, piece in pieces)
    (compiled,) = compile_rules([then])
    merged, _ = compiled.regex.subn(compiled.template, text)
    if merged == text or "$" in merged or "\\" in merged:
        return None
    return RemapRule(rule.pattern, merged)


def _removal_candidates(base: Plan, recipe: Recipe, own: Recipe) -> list[Change]:
    """The recipe's own items (``own``: the recipe the search started from) still in ``recipe``, each taken out:
    a remap rule that renames something (the latest first), an adapter, a Linear settlement, a cast."""
    hits = {h.index: h.count for h in base.rule_hits if h.kind == REMAP}
    rules = [Change(REMOVE, f"remove the remap rule {_rule_words(rule)}", remap=rule)
             for i, rule in reversed(list(enumerate(recipe.remaps))) if rule in own.remaps and hits.get(i)]
    adapters = [Change(REMOVE, f"remove the {adapter} adapter", adapter=adapter)
                for adapter in recipe.adapters if adapter in own.adapters]
    modules = [Change(REMOVE, f"stop treating {path} as Linear", linear_modules=(path,))
               for path, kind in recipe.module_overrides.items()
               if kind == "Linear" and own.module_overrides.get(path) == "Linear"]
    casts = [Change(REMOVE, f"remove the cast to {cast.to}", cast=cast) for cast in recipe.casts if cast in own.casts]
    return [*rules, *adapters, *modules, *casts][:REMOVALS]


# --- layout and dtype evidence ---------------------------------------------------------------------------
def _layout_candidates(base: Plan, report: AlignmentReport, recipe: Recipe, target: Store) -> list[Change]:
    """A PyTorch/Burn adapter when the recipe has none (it transposes Linear weights and renames norm
    parameters, and splits or fuses gates where fused modules meet their split form); with one, ``[out, in]``
    against ``[in, out]`` settles those modules as Linear."""
    transposed = [m for m in report.shape_mismatches if m.matches_if_transposed]
    has_direction = any(a in (ad.PYTORCH_TO_BURN, ad.BURN_TO_PYTORCH) for a in recipe.adapters)
    if not has_direction:
        found = []
        for direction in (ad.PYTORCH_TO_BURN, ad.BURN_TO_PYTORCH):
            modules = fused_modules(base, report, target, direction == ad.PYTORCH_TO_BURN)
            if modules:
                verb = "split the fused" if direction == ad.PYTORCH_TO_BURN else "fuse Burn's"
                found.append(Change(FUSED, f"{verb} {_listed(modules)} (the {direction} adapter)", adapter=direction))
            elif transposed or report.missing:
                found.append(Change(ADAPTER, f"add the {direction} adapter (Linear weights, norm parameters)",
                                    adapter=direction))
        return found
    if not transposed:
        return []
    by_name = {t.name: t for t in base.tensors}
    variants = report.through_variants
    modules = sorted({module_path(by_name[variants.get(m.name, m.name)].name) for m in transposed
                      if variants.get(m.name, m.name) in by_name})
    modules = [m for m in modules if m and base.modules.get(m) is not None and base.modules[m].kind != "Linear"]
    if not modules:
        return []
    return [Change(LINEAR, f"transpose: treat {_listed(modules)} as Linear", linear_modules=tuple(modules))]


def fused_modules(base: Plan, report: AlignmentReport, target: Store, to_burn: bool) -> list[str]:
    """``LSTM gates of lstm``-style labels for the fused modules a split (``to_burn``) or fuse would make load:
    the source's unused tensors hold them in one layout and the target's missing tensors in the other.

    Both sides are read by ``fused.find`` from names and shapes alone, as the plan's split reads them.
    """
    if not report.unused or not report.missing:
        return []
    shape_of = {t.name: tuple(t.shape) for t in base.tensors}
    unused = [n for n in report.unused if n in shape_of]
    ours = fused.find(unused, [shape_of[n] for n in unused], to_burn).parts
    if not ours:
        return []
    wanted = {e.name: tuple(e.shape) for e in target.entries}
    missing = [n for n in report.missing if n in wanted]
    if not fused.find(missing, [wanted[n] for n in missing], not to_burn).parts:
        return []  # the target does not hold the other layout: the names are no evidence of a split
    labels = {}
    for part in ours:
        op = part.op
        if isinstance(op, SplitFused):
            labels[f"{op.what} of {module_path(op.source) or '(top level)'}"] = None
        elif isinstance(op, FuseSplit):
            labels[f"{op.what} of {module_path(op.output) or '(top level)'}"] = None
    return list(labels)


def _index_candidates(base: Plan, report: AlignmentReport, recipe: Recipe) -> list[Change]:
    """Numbered names the target lacks (``fc.2`` where ``nn.Sequential``'s ReLUs left gaps): contiguous indices,
    when they renumber something."""
    numbered = any(part.isdigit() for name in report.unused for part in name.split("."))
    if ad.CONTIGUOUS_INDICES in recipe.adapters or not numbered:
        return []
    names = base.names
    if ad.contiguous_indices(names) == dict(zip(names, names)):
        return []
    return [Change(ADAPTER, "renumber indices contiguously (fc.0, fc.2, fc.4 -> fc.0, fc.1, fc.2)",
                   adapter=ad.CONTIGUOUS_INDICES)]


def _cast_candidates(report: AlignmentReport) -> list[Change]:
    """One float dtype the target has wherever the dtypes differ: a cast to it."""
    wanted = {d.template_dtype for d in report.dtype_differences}
    if len(wanted) != 1:
        return []
    (dtype,) = wanted
    if dtype not in CAST_TARGETS.values():
        return []
    return [Change(CAST, f"cast float tensors to {dtype}", cast=CastRule(dtype))]


def _listed(names: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


# --- name evidence ----------------------------------------------------------------------------------------
def _rename_candidates(report: AlignmentReport, stores: Sequence[Store], recipe: Recipe,
                       can_reopen: bool) -> list[Change]:
    """The name patterns most unused/missing pairs vote for; the first segment of a stripped PyTorch prefix
    also as the checkpoint's top-level key (Lightning's ``state_dict`` of ``state_dict.model.``)."""
    if not report.missing or not report.unused:
        return []
    votes = name_votes(report.unused, report.missing)
    found: list[Change] = []
    keys: dict[str, None] = {}
    keyable = (can_reopen and stores and stores[0].format == PYTORCH and not recipe.top_level_key
               and not any(s.top_level_key for s in recipe.sources))
    for (pattern, replacement, description), _ in votes.most_common(NAME_CANDIDATES):
        found.append(Change(RENAME, description, remap=RemapRule(pattern, replacement)))
        head = _stripped_branch(pattern, replacement)
        if keyable and head is not None and head not in keys:
            keys[head] = None
            found.append(Change(TOP_LEVEL_KEY, f"read the checkpoint's top-level key {head!r}", top_level_key=head))
    if keyable:
        found += [Change(TOP_LEVEL_KEY, f"read the checkpoint's top-level key {head!r}", top_level_key=head)
                  for head in _foreign_branches(report) if head not in keys]
    return found


def _foreign_branches(report: AlignmentReport) -> list[str]:
    """The first segment under which most unused names sit and no wanted name does: a checkpoint's branch
    (``state_dict`` of ``state_dict.backbone.0.weight`` against ``encoder.0.weight``) whose prefix is renamed,
    not stripped, so no strip rule names it."""
    wanted = {name.split(".", 1)[0] for name in report.missing}
    heads = Counter(name.split(".", 1)[0] for name in report.unused if "." in name)
    return [head for head, count in heads.most_common(1) if head not in wanted and 2 * count > len(report.unused)]


def _stripped_branch(pattern: str, replacement: str) -> str | None:
    """The first segment of the prefix a ``strip the prefix`` rule removes (a candidate top-level key), else None."""
    match = re.fullmatch(r"\^((?:[^\\.]|\\.)+?)\\\.", pattern)
    if replacement or match is None:
        return None
    return re.sub(r"\\(.)", r"\1", re.split(r"\\\.", match.group(1))[0])


def name_votes(unused: Iterable[str], missing: Iterable[str]) -> Counter[tuple[str, str, str]]:
    """(pattern, replacement, description) of remap rules, counted by the unused/missing pairs that suggest them."""
    unused, missing = sorted(set(unused)), set(missing)
    votes: Counter[tuple[str, str, str]] = Counter()
    votes.update(_prefix_candidates(unused, missing))
    votes.update(_segment_candidates(unused, missing))
    return votes


def _prefix_candidates(unused: list[str], missing: set[str]) -> Iterable[tuple[str, str, str]]:
    """Prefixes added (``x`` -> ``model.x``), stripped (``model.x`` -> ``x``) or replaced (``a.x`` -> ``b.x``)."""
    by_rest: dict[tuple[int, str], list[str]] = {}
    for name in missing:
        for k, head, rest in _splits(name):
            by_rest.setdefault((k, rest), []).append(head)
    missing_rests = {rest for (_, rest) in by_rest}
    by_rest = {key: heads for key, heads in by_rest.items() if len(heads) <= FANOUT}
    for name in unused:
        if name not in missing:
            for k, head, rest in _splits(name):
                if rest in missing:
                    yield f"^{re.escape(head)}\\.", "", f"strip the prefix {head}."
        for k, head, rest in _splits(name):
            for other in by_rest.get((k, rest), ()):
                if other != head:
                    yield f"^{re.escape(head)}\\.", f"{other}.", f"rename the prefix {head}. to {other}."
        if name in missing_rests:
            for k in range(1, MAX_PREFIX_SEGMENTS + 1):
                for other in by_rest.get((k, name), ()):
                    yield "^", f"{other}.", f"add the prefix {other}."


def _splits(name: str) -> Iterable[tuple[int, str, str]]:
    """(k, first k segments, the rest) for k up to MAX_PREFIX_SEGMENTS, while a rest remains."""
    parts = name.split(".")
    for k in range(1, min(MAX_PREFIX_SEGMENTS, len(parts) - 1) + 1):
        yield k, ".".join(parts[:k]), ".".join(parts[k:])


def _segment_candidates(unused: list[str], missing: set[str]) -> Iterable[tuple[str, str, str]]:
    """One segment renamed: names equal but for segment ``i`` (``norm1.weight`` / ``bn1.weight``).

    burn-store's regex has no look-ahead, so the rule takes the dot after the segment and writes it back
    (of two such segments side by side, ``norm.norm``, only the first is renamed: the plan then proves it)."""
    by_key: dict[tuple[int, int, tuple[str, ...]], list[str]] = {}
    for name in missing:
        parts = tuple(name.split("."))
        for i in range(len(parts)):
            by_key.setdefault((len(parts), i, parts[:i] + parts[i + 1:]), []).append(parts[i])
    by_key = {key: segments for key, segments in by_key.items() if len(segments) <= FANOUT}
    for name in unused:
        parts = tuple(name.split("."))
        for i, old in enumerate(parts):
            for new in by_key.get((len(parts), i, parts[:i] + parts[i + 1:]), ()):
                old_core, new_core = _without_common_end(old, new)
                if old_core:
                    ending = old[len(old_core):]
                    follow = r"\d*" if ending.isdigit() or not ending else re.escape(ending)
                    yield (f"(^|\\.){re.escape(old_core)}({follow})(\\.|$)", f"${{1}}{new_core}${{2}}${{3}}",
                           f"rename {old_core} to {new_core}" if new_core else f"drop {old_core} from names")


def _without_common_end(old: str, new: str) -> tuple[str, str]:
    """``norm1``, ``bn1`` -> ``norm``, ``bn``: the differing start of two segments (their shared ending cut)."""
    end = 0
    while end < min(len(old), len(new)) and old[len(old) - 1 - end] == new[len(new) - 1 - end]:
        end += 1
    return old[:len(old) - end], new[:len(new) - end]
