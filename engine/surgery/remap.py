"""Key remapping as burn-store's ``KeyRemapper`` does it: ordered regex rules, each on the previous result.

A rule whose pattern matches anywhere replaces every match (``replace_all``). Replacements may be
written Rust-style (``$1``, ``${name}``, ``$$``) as in a burn-store builder chain, or Python-style
(``\\1``, ``\\g<name>``); both mean the same here. Everything else is literal text.

One spelling differs from Rust's ``regex``: there ``$1_x`` is the group *named* ``1_x`` (which
does not exist, so it expands to nothing). Here a ``$`` followed by digits is that numbered group,
so ``$1_x`` is group 1 then ``_x`` -- and the printed Rust chain writes every reference braced
(``${1}_x``), so the chain does exactly what the CLI did.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import RecipeError
from ..humanize import quoted
from .filters import compile_pattern

_REFERENCE = re.compile(r"\$\$|\$\{(\w+)\}|\$(\d+|[A-Za-z_]\w*)|\\g<(\w+)>|\\(\d+)")


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


def python_template(replacement: str) -> str:
    """A Python ``re.sub`` template doing what ``replacement`` says (literal backslashes escaped)."""
    return "".join(f"\\g<{text}>" if group else text.replace("\\", "\\\\")
                   for group, text in parse_replacement(replacement))


def rust_replacement(replacement: str) -> str:
    """The same replacement spelled for Rust's ``regex``: every reference braced, every literal ``$`` doubled."""
    return "".join("${" + text + "}" if group else text.replace("$", "$$") for group, text in parse_replacement(replacement))


@dataclass(frozen=True)
class CompiledRule:
    """A checked rule. ``literal`` is the text the pattern matches when it is plain text (``at_start`` when
    anchored by ``^``) and ``plain`` the replacement when it refers to no group: such a rule (the usual
    ``^blocks\\.`` -> ``layers.``) is applied with string methods, which do what the regex does."""

    index: int
    regex: re.Pattern[str]
    template: str
    literal: str | None = None
    at_start: bool = False
    plain: str | None = None


_META = frozenset(".^$*+?{}[]|()")  # outside these (and backslash escapes), a pattern is its own text
_ESCAPED = frozenset(string.punctuation + " ")  # ``\.``, ``\-``, ``\ ``: the character itself


def literal_text(pattern: str) -> tuple[str, bool] | None:
    """The text ``pattern`` matches and whether it is anchored at the start (``^text``), when it is plain
    text; None for anything else (classes, repeats, groups, ``$``, escapes of letters or digits, empty)."""
    at_start = pattern.startswith("^")
    chars, i = [], int(at_start)
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if i + 1 == len(pattern) or pattern[i + 1] not in _ESCAPED:
                return None
            char, i = pattern[i + 1], i + 1
        elif char in _META:
            return None
        chars.append(char)
        i += 1
    return ("".join(chars), at_start) if chars else None


def compile_rules(rules: Sequence[RemapRule]) -> list[CompiledRule]:
    """Check every rule up front; a bad one is a RecipeError naming its number and pattern."""
    compiled = []
    for i, rule in enumerate(rules):
        where = f"remap rule {i + 1} ({quoted(rule.pattern)} -> {quoted(rule.replacement)})"
        regex = compile_pattern(rule.pattern, where)
        for group, ref in parse_replacement(rule.replacement):
            known = not group or (int(ref) <= regex.groups if ref.isdigit() else ref in regex.groupindex)
            if not known:
                raise RecipeError(f"{where}: the replacement refers to group {ref!r}, which the pattern does not have")
        pieces = parse_replacement(rule.replacement)
        literal = literal_text(rule.pattern)
        plain = "".join(text for _, text in pieces) if not any(group for group, _ in pieces) else None
        compiled.append(CompiledRule(i, regex, python_template(rule.replacement), *(literal or (None, False)), plain))
    return compiled


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
