"""tests/mutation/mutation_equivalents.txt is what the mutation scores subtract (README, "Testing: mutation runs"): each line
must name one mutant of a mutated module once, with a reason, or a score silently counts a mutant twice or never."""

from __future__ import annotations

import json
import re
import tomllib

from tests.mutation.mutation_scores import JUDGED, ROOT, entries, equivalents, function_of

# the modules pyproject's [tool.mutmut] only_mutate names, as dotted prefixes (engine/cli/* -> engine.cli.)
MUTATED = tuple(pattern.removesuffix("*").removesuffix(".py").replace("/", ".").rstrip(".") + "."
                for pattern in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"])
LINE = re.compile(r"(?P<name>engine\.[\w.]+\.x[^\s:]*__mutmut_\d+): (?P<reason>\S.{9,})")


def test_each_line_names_a_mutant_of_a_mutated_module_and_says_why() -> None:
    malformed = [line for line in entries()
                 if not (found := LINE.fullmatch(line)) or not found["name"].startswith(MUTATED)]
    assert malformed == []


def test_no_mutant_is_listed_twice() -> None:
    names = [line.split(": ", 1)[0] for line in entries()]
    assert sorted(name for name in set(names) if names.count(name) > 1) == []


def test_the_record_of_judged_functions_is_made_by_the_pinned_mutmut_and_names_listed_functions() -> None:
    """tests/mutation/mutation_equivalents_judged.json lets a run skip a listed mutant whose function is unchanged: made
    by another mutmut it would settle nothing, and a function no line lists has no mutant to settle."""
    record = json.loads(JUDGED.read_text())
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["mutation"] == [f"mutmut=={record['mutmut']}"]
    listed_functions = {function_of(name) for name in equivalents()}
    assert sorted(set(record["functions"]) - listed_functions) == []
