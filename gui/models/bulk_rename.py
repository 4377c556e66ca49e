"""One remap rule that explains many missing names at once: bulk insight before row-by-row suggestions.

When the recipe's result and the other file disagree on a whole family of names, the difference is
usually one pattern: a prefix (``model.`` added or stripped, ``backbone.`` -> ``encoder.``) or one
segment renamed (``norm1`` -> ``bn1`` and ``norm2`` -> ``bn2``; ``weight`` -> ``gamma``). Candidates
come from lining names up segment by segment (never every missing name against every unused one), and
the best is checked by really applying it with the engine's remapper: its hit count is exact.
Pure Python, no Qt.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from engine.surgery import RemapRule
from engine.surgery.remap import compile_rules, remap_name

MAX_PREFIX_SEGMENTS = 3  # prefixes of up to this many segments are tried


@dataclass(frozen=True)
class BulkRename:
    """A remap rule, what it means in words, and how many missing names it turns into unused ones."""

    rule: RemapRule
    description: str
    hits: int
    missing: int

    @property
    def label(self) -> str:
        return f"{self.description}: fixes {self.hits:,} of {self.missing:,} missing"


def suggest_bulk_rename(unused: Iterable[str], missing: Iterable[str], minimum: int = 2) -> BulkRename | None:
    """The rule that maps the most ``unused`` names onto ``missing`` ones, when it fixes at least ``minimum``."""
    unused, missing = sorted(set(unused)), set(missing)
    if not unused or not missing:
        return None
    votes: Counter[tuple[str, str, str]] = Counter()
    for rule in _prefix_candidates(unused, missing):
        votes[rule] += 1
    for rule in _segment_candidates(unused, missing):
        votes[rule] += 1
    best: BulkRename | None = None
    for (pattern, replacement, description), _ in votes.most_common(8):  # verify the front-runners exactly
        rule = RemapRule(pattern, replacement)
        compiled = compile_rules([rule])
        hits = len({remap_name(name, compiled) for name in unused} & missing)
        if hits >= minimum and (best is None or hits > best.hits):
            best = BulkRename(rule, description, hits, len(missing))
    return best


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
