"""Decisions a plan took on a tensor's name alone: what was guessed, why, and how to settle it.

A plan changes bytes or names by module kind (transpose a Linear weight, rename a norm's weight
gamma, a PReLU's alpha) and by enum-variant segments. Where the kind rests on shapes and siblings
(or a template, or the user's ``--module``), the decision is evidence. Where only a name spoke
for it, the tensor is listed as a ``Guess`` -- ``--strict`` refuses to write while any is left.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Sequence

from .modules import ENUM_VARIANT, ModuleGuess
from .ops import Op, OpRecord, Rename, Transpose, built


@dataclass(frozen=True)
class Guess:
    """One output tensor whose bytes or name depend on a guess.

    ``module`` is the module path the guess is about, ``kind`` what was guessed, ``decision`` what
    that did to this tensor, ``reason`` why, ``settle`` the flag(s) that make it a decision. ``family`` says
    the same in words that name no tensor or module, so that alike guesses are told as one (``grouped_lines``).
    """

    name: str
    source_name: str
    module: str
    kind: str
    decision: str
    reason: str
    settle: str
    alternatives: tuple[str, ...] = ()
    family: str = field(default="", compare=False)  # words for grouping alike guesses, not part of what was guessed

    def line(self) -> str:
        """One line for a terminal: ``guessed NAME: DECISION (REASON); settle with ...``."""
        return f"guessed {self.name}: {self.decision} ({self.reason}); settle with {self.settle}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "source_name": self.source_name, "module": self.module, "kind": self.kind,
                "decision": self.decision, "reason": self.reason, "settle": self.settle,
                "alternatives": list(self.alternatives)}


GROUPED_FROM = 4  # guesses alike told as one line from this many


def grouped_lines(guesses: Sequence[Guess]) -> list[str]:
    """The guesses for a terminal, one line per decision and reason with its count (an LSTM's 66 gates guessed
    alike are one line, not 66); fewer than GROUPED_FROM alike keep a line each, which names each one's own
    settling flag. ``-v`` prints ``line()`` of each."""
    groups: dict[tuple[str, ...], list[Guess]] = {}
    for guess in guesses:
        groups.setdefault((guess.kind, guess.family) if guess.family else (guess.decision, guess.reason),
                          []).append(guess)
    lines = []
    for members in groups.values():
        first = members[0]
        if len(members) < GROUPED_FROM:
            lines.extend(g.line() for g in members)
            continue
        modules = list(dict.fromkeys(g.module for g in members))
        named = ", ".join(modules[:2]) + (", ..." if len(modules) > 2 else "")
        of = f"{len(modules)} modules ({named})" if len(modules) > 1 else modules[0]
        what = first.family or f"{first.decision} ({first.reason})"
        lines.append(f"guessed {len(members)} tensors of {of}: {what}; e.g. {first.name}: {first.decision} "
                     f"({first.reason}); settle with {first.settle} (-v lists each)")
    return lines


def module_flag(path: str, kind: str) -> str:
    return "--module " + shlex.quote(f"{path}={kind}")


def kind_guess(name: str, source_name: str, guess: ModuleGuess, ops: Sequence[Op | OpRecord],
               could_transpose: bool) -> Guess:
    """The guess behind a tensor whose outcome would differ had its module been another kind (``ops``: ops or records)."""
    settle = " or ".join(module_flag(guess.path, kind) for kind in guess.alternatives or (guess.kind,))
    done = describe(ops)
    if could_transpose and "transposed" not in done:
        done = "not transposed" if done == "left as it is" else f"{done}, not transposed"
    return Guess(name, source_name, guess.path, guess.kind, f"{guess.kind}: {done}", guess.reason, settle,
                 guess.alternatives, f"taken for {guess.kind}: {done}")


def variant_guess(name: str, source_name: str, path: str, kind: str | None) -> Guess:
    """A CamelCase segment ``--skip-enum-variants`` kept because nothing says it is an enum variant.

    ``kind`` is the module kind guessed for ``path`` when it holds tensors itself (what keeping it means).
    """
    segment = path.rpartition(".")[2]
    return Guess(name, source_name, path, kind or "module", f"kept segment {segment!r}",
                 "CamelCase like a Burn enum variant, but no template or --module says it is one",
                 f"{module_flag(path, ENUM_VARIANT)} to drop it, or {module_flag(path, kind or 'TYPE')} to keep it",
                 (kind or "module", ENUM_VARIANT), "kept a CamelCase segment no template or --module calls a variant")


def placed_guess(name: str, source_name: str, module: str, kind: str, why: str) -> Guess:
    """A fused module's tensor whose place follows a convention (a layer of a stack Burn has no module for)."""
    return Guess(name, source_name, module, kind, f"placed at {name}", why,
                 "--template FILE (a file of the target model holding this name), or a remap to where the model keeps it",
                 family=f"placed by convention: Burn has no module for a stack of {kind} layers")


def describe(ops: Sequence[Op | OpRecord]) -> str:
    """What the adapter and casts did, in a few words (``transposed``, ``renamed weight -> alpha``). ``ops`` may
    be records (``ops.OpRecord``): only those described by their own words are built."""
    words = []
    for op in ops:
        record = type(op) is tuple
        kind = op[0] if record else type(op)
        if issubclass(kind, Transpose):
            words.append("transposed")
        elif issubclass(kind, Rename):
            old, new, why = op[1:4] if record else (op.old, op.new, op.why)
            if not why.startswith(("remap", "contiguous", "skip enum", "template")):
                words.append(f"renamed {old.rpartition('.')[2]} -> {new.rpartition('.')[2]}")
        else:
            words.append((built((op,))[0] if record else op).describe())
    return ", ".join(words) or "left as it is"
