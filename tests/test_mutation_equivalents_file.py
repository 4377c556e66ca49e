"""tests/mutation_equivalents.txt is what the mutation scores subtract (README, "Testing: mutation runs"): each line
must name one mutant of a mutated module once, with a reason, or a score silently counts a mutant twice or never."""

from __future__ import annotations

import re

from mutation_scores import entries

MUTATED = ("engine.surgery.", "engine.formats.", "engine.export.", "engine.cli.")
LINE = re.compile(r"(?P<name>engine\.[\w.]+\.x[^\s:]*__mutmut_\d+): (?P<reason>\S.{9,})")


def test_each_line_names_a_mutant_of_a_mutated_module_and_says_why() -> None:
    malformed = [line for line in entries()
                 if not (found := LINE.fullmatch(line)) or not found["name"].startswith(MUTATED)]
    assert malformed == []


def test_no_mutant_is_listed_twice() -> None:
    names = [line.split(": ", 1)[0] for line in entries()]
    assert sorted(name for name in set(names) if names.count(name) > 1) == []
