"""Recipe changes that would make a source load into a target model, each proven before it is offered.

Evidence comes from aligning the recipe's plan with the target (a template, or any file): names the
target wants but does not get (missing), names the plan offers that the target does not want (unused),
shapes that are each other's transpose, dtypes that differ. From it come candidate changes:

- one remap rule for a family of names: a prefix added, stripped or replaced, one segment renamed
  (lined up segment by segment, never every missing name against every unused one);
- a PyTorch/Burn adapter, or a module settled as ``Linear``, where ``[out, in]`` meets ``[in, out]``;
- a fused-gate split (or fuse), where one side has PyTorch's fused ``nn.LSTM``/``nn.GRU``/
  ``nn.MultiheadAttention`` tensors and the other Burn's gate (or q/k/v) Linears (``engine/surgery/fused.py``
  proves both from names and shapes): the adapter of that direction, named for what it splits;
- a cast, where every differing dtype is one the target has as the same float type;
- a PyTorch checkpoint's top-level key, where the names the target wants sit under one branch.

No name match is trusted: every candidate is applied to a copy of the recipe, planned (so the
recipe's adapters, e.g. a transposed Linear, have their say) and aligned again. A candidate is offered
only when every pair it creates agrees in shape and nothing that loaded before stops loading; it is
ranked by how many tensors it makes load. Pure Python, no Qt: the CLI (``diff --suggest``) and the
GUI's diff panel share it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from ..errors import StoreStudioError
from ..humanize import quoted
from ..store import Store
from . import adapters as ad
from . import fused
from .align import AlignmentReport, align
from .modules import module_path
from .ops import FuseSplit, SplitFused
from .plan import Plan, plan
from .recipe import CAST_TARGETS, CastRule, Recipe
from .remap import RemapRule

MAX_PREFIX_SEGMENTS = 3  # prefixes of up to this many segments are tried
NAME_CANDIDATES = 8  # the front-running name patterns that are planned and checked
MINIMUM_RENAME = 2  # a bulk rename fixes at least this many names (one name: the diff's row suggestions)
PYTORCH = "pytorch"

RENAME, ADAPTER, LINEAR, CAST, TOP_LEVEL_KEY = "rename", "adapter", "linear", "cast", "top_level_key"
FUSED = "fused"  # an adapter whose evidence is fused modules on one side and their split form on the other
PREFERRED = (FUSED, ADAPTER, LINEAR, TOP_LEVEL_KEY, RENAME, CAST)  # of two that fix the same, the one a user means
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
class Suggestion:
    """One change to a recipe (exactly one of its change fields is set) and what it was proven to do.

    ``fixes`` counts target tensors that load with matching shapes after the change and did not before
    (of ``missing``: the target's tensors missing or mismatched in shape before); ``pairs`` lists them;
    ``dtypes_fixed`` counts the dtype differences a cast removes.
    """

    kind: str
    description: str
    pairs: tuple[Pair, ...]
    missing: int
    remap: RemapRule | None = None
    adapter: str | None = None
    linear_modules: tuple[str, ...] = ()
    cast: CastRule | None = None
    top_level_key: str | None = None
    dtypes_fixed: int = 0

    @property
    def fixes(self) -> int:
        return len(self.pairs)

    @property
    def label(self) -> str:
        """``rename the prefix model. to encoder.: fixes 4 of 14 missing`` (what the GUI and CLI print)."""
        if self.kind == CAST:
            return f"{self.description}: fixes {self.dtypes_fixed:,} dtype difference(s)"
        return f"{self.description}: fixes {self.fixes:,} of {self.missing:,} missing or mismatched"

    @property
    def change(self) -> str:
        """The recipe change in the recipe's own terms (a remap rule, an adapter, a module kind, a cast, a key)."""
        if self.remap is not None:
            return f"remap {quoted(self.remap.pattern)} -> {quoted(self.remap.replacement)}"
        if self.adapter is not None:
            return f"adapter {self.adapter}"
        if self.linear_modules:
            return "module " + ", ".join(f"{m}=Linear" for m in self.linear_modules)
        if self.cast is not None:
            return f"cast {self.cast.to}"
        return f"top-level key {self.top_level_key!r}"

    def line(self) -> str:
        """One line for a terminal: ``suggest: <label>: <change>``."""
        return f"suggest: {self.label}: {self.change}"

    def apply(self, recipe: Recipe) -> Recipe:
        """``recipe`` with this change made (a rule appended, an adapter added, a kind settled, a cast, a key)."""
        if self.remap is not None:
            return recipe.with_changes(remaps=recipe.remaps + (self.remap,))
        if self.adapter is not None:
            return recipe.with_changes(adapters=recipe.adapters + (self.adapter,))
        if self.linear_modules:
            return recipe.with_changes(module_overrides={**recipe.module_overrides,
                                                         **{m: "Linear" for m in self.linear_modules}})
        if self.cast is not None:
            return recipe.with_changes(casts=recipe.casts + (self.cast,))
        return recipe.with_changes(top_level_key=self.top_level_key)


@dataclass(frozen=True)
class _Candidate:
    """A change not yet proven: a Suggestion without its pairs."""

    kind: str
    description: str
    remap: RemapRule | None = None
    adapter: str | None = None
    linear_modules: tuple[str, ...] = ()
    cast: CastRule | None = None
    top_level_key: str | None = None

    def suggestion(self, pairs: tuple[Pair, ...], missing: int, dtypes_fixed: int = 0) -> Suggestion:
        return Suggestion(self.kind, self.description, pairs, missing, self.remap, self.adapter, self.linear_modules,
                          self.cast, self.top_level_key, dtypes_fixed)


def suggest(stores: Sequence[Store], recipe: Recipe, target: Store, *, template: Store | None = None,
            reopen: Reopen | None = None, limit: int = 5,
            cancelled: Callable[[], bool] = lambda: False) -> list[Suggestion]:
    """The changes to ``recipe`` that make more of ``target``'s tensors load from ``stores``, best first.

    ``template`` lends the plan module kinds and enum variants, as the recipe's own template does;
    ``stores`` are the sources as the plan reads them (a PyTorch file already opened at its key).
    ``reopen(store, key)`` opens a PyTorch source at a top-level key (closed here after the check);
    without it no top-level key is suggested.
    """
    base = plan(stores, recipe, template=template)
    report = align(base, target)
    if report.ok and not report.dtype_differences:
        return []
    candidates = [*_layout_candidates(base, report, recipe, target), *_index_candidates(report, recipe),
                  *_cast_candidates(report), *_rename_candidates(report, stores, recipe, reopen is not None)]
    proven: list[Suggestion] = []
    for candidate in candidates:
        if cancelled():
            raise InterruptedError("suggestions cancelled")
        found = _prove(candidate, stores, recipe, target, template, report, reopen)
        if found is not None:
            proven.append(found)
    proven.sort(key=lambda s: (-(s.fixes or s.dtypes_fixed), PREFERRED.index(s.kind)))
    kept: list[Suggestion] = []
    for found in proven:  # one that fixes only what a better one fixes too adds nothing
        if found.kind == CAST or not any(_targets(found) <= _targets(better) for better in kept):
            kept.append(found)
    return kept[:limit]


def _targets(suggestion: Suggestion) -> set[str]:
    return {pair.target for pair in suggestion.pairs}


def suggest_recipe(stores: Sequence[Store], recipe: Recipe, target: Store, *, template: Store | None = None,
                   reopen: Reopen | None = None, rounds: int = 8) -> tuple[Recipe, list[Suggestion]]:
    """The best suggestion made, then the best for the recipe that makes, until none is left (at most ``rounds``).

    Each step is proven on top of the ones before it, so the result is one recipe that does them all;
    a top-level key step reopens the first source for the steps after it (closed here).
    """
    taken: list[Suggestion] = []
    opened: list[Store] = []
    try:
        for _ in range(rounds):
            found = suggest(stores, recipe, target, template=template, reopen=reopen, limit=1)
            if not found:
                break
            step = found[0]
            taken.append(step)
            recipe = step.apply(recipe)
            if step.top_level_key is not None and reopen is not None:
                opened.append(reopen(stores[0], step.top_level_key))
                stores = [opened[-1], *stores[1:]]
    finally:
        for store in opened:
            store.close()
    return recipe, taken


def _prove(candidate: _Candidate, stores: Sequence[Store], recipe: Recipe, target: Store, template: Store | None,
           before: AlignmentReport, reopen: Reopen | None) -> Suggestion | None:
    """Plan and align with the change made; the suggestion it proves, or None when it fixes nothing or breaks a pair."""
    changed = candidate.suggestion((), 0).apply(recipe)
    opened: Store | None = None
    try:
        if candidate.top_level_key is not None and reopen is not None:
            opened = reopen(stores[0], candidate.top_level_key)
            stores = [opened, *stores[1:]]
        after_plan = plan(stores, changed, template=template)
        after = align(after_plan, target)
    except (StoreStudioError, ValueError):
        return None  # the change cannot be planned (a cast of a quantized tensor, a key the file lacks)
    finally:
        if opened is not None:
            opened.close()
    if after_plan.conflicts:
        return None
    was_applied, now_applied = set(before.applied), set(after.applied)
    if was_applied - now_applied:
        return None  # something that loaded would stop loading
    missing_before = set(before.missing)
    broken = len(before.missing) + len(before.shape_mismatches)
    if any(m.name in missing_before for m in after.shape_mismatches):
        return None  # a pair it creates disagrees in shape: the name match is wrong
    if len(after.shape_mismatches) > len(before.shape_mismatches):
        return None
    if candidate.kind == CAST:
        fixed = len(before.dtype_differences) - len(after.dtype_differences)
        new = {d.name for d in after.dtype_differences} - {d.name for d in before.dtype_differences}
        return candidate.suggestion((), broken, fixed) if fixed > 0 and not new else None
    gained = [name for name in after.applied if name not in was_applied]
    by_name = {t.name: t for t in after_plan.tensors}
    pairs = tuple(Pair(by_name[after.through_variants.get(n, n)].source_name, n,
                       tuple(by_name[after.through_variants.get(n, n)].shape)) for n in gained)
    least = MINIMUM_RENAME if candidate.kind == RENAME else 1
    return candidate.suggestion(pairs, broken) if len(pairs) >= least else None


# --- layout and dtype evidence ---------------------------------------------------------------------------
def _layout_candidates(base: Plan, report: AlignmentReport, recipe: Recipe, target: Store) -> list[_Candidate]:
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
                found.append(_Candidate(FUSED, f"{verb} {_listed(modules)} (the {direction} adapter)",
                                        adapter=direction))
            elif transposed or report.missing:
                found.append(_Candidate(ADAPTER, f"add the {direction} adapter (Linear weights, norm parameters)",
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
    return [_Candidate(LINEAR, f"transpose: treat {_listed(modules)} as Linear", linear_modules=tuple(modules))]


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


def _index_candidates(report: AlignmentReport, recipe: Recipe) -> list[_Candidate]:
    """Numbered names the target lacks (``fc.2`` where ``nn.Sequential``'s ReLUs left gaps): contiguous indices."""
    numbered = any(part.isdigit() for name in report.unused for part in name.split("."))
    if ad.CONTIGUOUS_INDICES in recipe.adapters or not numbered:
        return []
    return [_Candidate(ADAPTER, "renumber indices contiguously (fc.0, fc.2, fc.4 -> fc.0, fc.1, fc.2)",
                       adapter=ad.CONTIGUOUS_INDICES)]


def _cast_candidates(report: AlignmentReport) -> list[_Candidate]:
    """One float dtype the target has wherever the dtypes differ: a cast to it."""
    wanted = {d.template_dtype for d in report.dtype_differences}
    if len(wanted) != 1:
        return []
    (dtype,) = wanted
    if dtype not in CAST_TARGETS.values():
        return []
    return [_Candidate(CAST, f"cast float tensors to {dtype}", cast=CastRule(dtype))]


def _listed(names: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


# --- name evidence ----------------------------------------------------------------------------------------
def _rename_candidates(report: AlignmentReport, stores: Sequence[Store], recipe: Recipe,
                       can_reopen: bool) -> list[_Candidate]:
    """The name patterns most unused/missing pairs vote for; a stripped PyTorch branch also as a top-level key."""
    if not report.missing or not report.unused:
        return []
    votes = name_votes(report.unused, report.missing)
    found = []
    keyable = (can_reopen and stores and stores[0].format == PYTORCH and not recipe.top_level_key
               and not any(s.top_level_key for s in recipe.sources))
    for (pattern, replacement, description), _ in votes.most_common(NAME_CANDIDATES):
        found.append(_Candidate(RENAME, description, remap=RemapRule(pattern, replacement)))
        head = _stripped_branch(pattern, replacement)
        if keyable and head is not None:
            found.append(_Candidate(TOP_LEVEL_KEY, f"read the checkpoint's top-level key {head!r}",
                                    top_level_key=head))
    return found


def _stripped_branch(pattern: str, replacement: str) -> str | None:
    """The one-segment prefix a ``strip the prefix`` rule removes (a candidate top-level key), else None."""
    match = re.fullmatch(r"\^((?:[^\\.]|\\.)+?)\\\.", pattern)
    if replacement or match is None:
        return None
    head = re.sub(r"\\(.)", r"\1", match.group(1))
    return head if "." not in head else None


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
    """One segment renamed: names equal but for segment ``i`` (``norm1.weight`` / ``bn1.weight``)."""
    by_key: dict[tuple[int, int, tuple[str, ...]], list[str]] = {}
    for name in missing:
        parts = tuple(name.split("."))
        for i in range(len(parts)):
            by_key.setdefault((len(parts), i, parts[:i] + parts[i + 1:]), []).append(parts[i])
    for name in unused:
        parts = tuple(name.split("."))
        for i, old in enumerate(parts):
            for new in by_key.get((len(parts), i, parts[:i] + parts[i + 1:]), ()):
                old_core, new_core = _without_common_end(old, new)
                if old_core:
                    ending = old[len(old_core):]
                    follow = r"\d*" if ending.isdigit() or not ending else re.escape(ending)
                    yield (f"(^|\\.){re.escape(old_core)}(?={follow}(?:\\.|$))", f"${{1}}{new_core}",
                           f"rename {old_core} to {new_core}" if new_core else f"drop {old_core} from names")


def _without_common_end(old: str, new: str) -> tuple[str, str]:
    """``norm1``, ``bn1`` -> ``norm``, ``bn``: the differing start of two segments (their shared ending cut)."""
    end = 0
    while end < min(len(old), len(new)) and old[len(old) - 1 - end] == new[len(new) - 1 - end]:
        end += 1
    return old[:len(old) - end], new[:len(new) - end]
