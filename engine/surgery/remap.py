"""Key remapping as burn-store's ``KeyRemapper`` does it: ordered regex rules, each on the previous result.

A rule whose pattern matches anywhere replaces every match (``replace_all``, with Rust's matches:
``engine.rust_regex``). Replacements may be written Rust-style (``$1``, ``$name``, ``${name}``, ``$$``) as
in a burn-store builder chain, or Python-style (``\\1``, ``\\g<name>``); both mean the same here.
Everything else is literal text, backslashes included.

One spelling differs from Rust's ``regex``: there ``$1_x`` is the group *named* ``1_x`` (which
does not exist, so it expands to nothing). Here a ``$`` followed by digits is that numbered group,
so ``$1_x`` is group 1 then ``_x`` -- and the printed Rust chain writes every reference braced
(``${1}_x``), so the chain does exactly what the CLI did. A reference to a group the pattern lacks is
an error here, where Rust expands it to nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import RecipeError
from ..rust_regex import RustRegex, quoted_pattern
from .filters import compile_pattern

# $$, ${name} (anything up to the brace, as Rust reads it), $name (Rust's ASCII name characters), \g<name>, \1
_REFERENCE = re.compile(r"\$\$|\$\{([^}]+)\}|\$([0-9]+|[A-Za-z_][0-9A-Za-z_]*)|\\g<(\w+)>|\\([0-9]+)")


@dataclass(frozen=True)
class RemapRule:
    pattern: str
    replacement: str

    def to_json(self) -> list[str]:
        return [self.pattern, self.replacement]


def parse_replacement(replacement: str) -> list[tuple[bool, str]]:
    """The replacement as ``(is_group, text)`` pieces: group references and literal text."""
    pieces: list[tuple[bool, str]] = []
    at = 0
    for match in _REFERENCE.finditer(replacement):
        literal = replacement[at:match.start()] + ("$" if match.group(0) == "$$" else "")
        if literal:
            pieces.append((False, literal))
        ref = next((g for g in match.groups() if g is not None), None)
        if ref is not None:
            pieces.append((True, ref))
        at = match.end()
    if at < len(replacement):
        pieces.append((False, replacement[at:]))
    return pieces


def group_key(ref: str) -> int | str:
    """A reference's group: a number when it is ASCII digits (``${٣}`` names a group, as in Rust), else a name
    (digits too many for any group stay text, never a 5,000-digit int)."""
    return int(ref) if ref.isascii() and ref.isdigit() and len(ref) <= 9 else ref


def expansion(replacement: str, regex: RustRegex) -> Callable[[Any], str]:
    """What replaces one of ``regex``'s matches: the replacement's text with each group reference filled in
    by number (a group that took part in no match is empty text, as in Rust)."""
    pieces = [(group, _group_number(regex, text) if group else text) for group, text in parse_replacement(replacement)]

    def expand(match: Any) -> str:
        return "".join((match.group(piece) or "") if group else piece for group, piece in pieces)
    return expand


def rust_replacement(replacement: str) -> str:
    """The same replacement spelled for Rust's ``regex``: every reference braced, every literal ``$`` doubled."""
    return "".join("${" + text + "}" if group else text.replace("$", "$$") for group, text in parse_replacement(replacement))


@dataclass(frozen=True)
class CompiledRule:
    """A checked rule: ``template`` makes what replaces one match. ``literal`` is the text the pattern matches
    when it is plain text (``at_start`` when anchored by ``^``) and ``plain`` the replacement when it refers to
    no group: such a rule (the usual ``^blocks\\.`` -> ``layers.``) is applied with string methods, which do
    what the regex does."""

    index: int
    regex: RustRegex
    template: Callable[[Any], str]
    literal: str | None = None
    at_start: bool = False
    plain: str | None = None


def compile_rules(rules: Sequence[RemapRule]) -> list[CompiledRule]:
    """Check every rule up front; a bad one is a RecipeError naming its number and pattern."""
    compiled = []
    for i, rule in enumerate(rules):
        where = f"remap rule {i + 1} ({quoted_pattern(rule.pattern)} -> {quoted_pattern(rule.replacement)})"
        regex = compile_pattern(rule.pattern, where)
        pieces = parse_replacement(rule.replacement)
        missing = next((ref for group, ref in pieces if group and not _has_group(regex, group_key(ref))), None)
        if missing is not None:
            raise RecipeError(f"{where}: the replacement refers to group {missing!r}, which the pattern does not have")
        plain = "".join(text for _, text in pieces) if not any(group for group, _ in pieces) else None
        compiled.append(CompiledRule(i, regex, expansion(rule.replacement, regex), regex.literal, regex.at_start,
                                     plain))
    return compiled


def _has_group(regex: RustRegex, key: int | str) -> bool:
    return key <= regex.groups if isinstance(key, int) else key in regex.groupindex


def _group_number(regex: RustRegex, ref: str) -> int:
    key = group_key(ref)
    return key if isinstance(key, int) else regex.groupindex[key]


def remap_name(name: str, rules: Sequence[CompiledRule], hits: list[int] | None = None) -> str:
    """Apply every rule in order; ``hits[i]`` counts the names rule ``i`` changed or matched."""
    for rule in rules:
        new, count = rule.regex.subn(rule.template, name)
        if count:
            if hits is not None:
                hits[rule.index] += 1
            name = new
    return name


def rules_from_json(doc: Any, where: str = "remaps") -> tuple[RemapRule, ...]:
    if doc is None:
        return ()
    if not isinstance(doc, list):
        raise RecipeError(f"{where}: must be a list of [pattern, replacement] pairs")
    rules = []
    for i, item in enumerate(doc):
        if isinstance(item, dict) and set(item) == {"pattern", "replacement"}:
            item = [item["pattern"], item["replacement"]]
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(s, str) for s in item)):
            raise RecipeError(f"{where}[{i}]: must be [pattern, replacement] (two strings)")
        rules.append(RemapRule(item[0], item[1]))
    compile_rules(rules)
    return tuple(rules)
