"""Key remapping as burn-store's ``KeyRemapper`` does it: ordered regex rules, each on the previous result.

A rule whose pattern matches anywhere replaces every match (``replace_all``). Replacements may be
written Rust-style (``$1``, ``${name}``, ``$$``) as in a burn-store builder chain, or Python-style
(``\\1``, ``\\g<name>``); both mean the same here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import RecipeError
from ..humanize import quoted
from .filters import compile_pattern

_RUST_REF = re.compile(r"\$\$|\$\{(\w+)\}|\$(\d+|[A-Za-z_]\w*)")
_PY_REF = re.compile(r"\\g<(\w+)>|\\(\d+)")


@dataclass(frozen=True)
class RemapRule:
    pattern: str
    replacement: str

    def to_json(self) -> list[str]:
        return [self.pattern, self.replacement]


def python_template(replacement: str) -> str:
    """A Python ``re.sub`` template for a Rust- or Python-style replacement."""
    def convert(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return f"\\g<{match.group(1) or match.group(2)}>"
    return _RUST_REF.sub(convert, replacement)


def rust_replacement(replacement: str) -> str:
    """The same replacement spelled for Rust's ``regex`` (for the printed builder chain)."""
    return _PY_REF.sub(lambda m: "${" + (m.group(1) or m.group(2)) + "}", replacement)


@dataclass(frozen=True)
class CompiledRule:
    index: int
    regex: re.Pattern[str]
    template: str


def compile_rules(rules: Sequence[RemapRule]) -> list[CompiledRule]:
    """Check every rule up front; a bad one is a RecipeError naming its number and pattern."""
    compiled = []
    for i, rule in enumerate(rules):
        where = f"remap rule {i + 1} ({quoted(rule.pattern)} -> {quoted(rule.replacement)})"
        regex = compile_pattern(rule.pattern, where)
        template = python_template(rule.replacement)
        for match in _PY_REF.finditer(template):
            ref = match.group(1) or match.group(2)
            known = int(ref) <= regex.groups if ref.isdigit() else ref in regex.groupindex
            if not known:
                raise RecipeError(f"{where}: the replacement refers to group {ref!r}, which the pattern does not have")
        compiled.append(CompiledRule(i, regex, template))
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
