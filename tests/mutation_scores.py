"""The mutation run's scores, per module and per package, as README's table (README, "Testing: mutation runs").

    python tests/mutation_scores.py [MUTANTS_DIR] [--survivors]

Reads mutmut's verdicts from ``mutants/**/*.meta`` and subtracts the mutants
``tests/mutation_equivalents.txt`` lists. A score is killed / (checked - no test selected - equivalent);
a timeout, a crash or a type-check catch counts as killed (some test did not pass), a mutant not checked
yet counts in no score; a mutant some test killed counts as killed even where the file lists it. ``--survivors``
lists the survivors not listed as equivalent, one name a line; ``--stale`` lists the file's names that no
surviving mutant has (a killed one, or none of that number): a change to a function renumbers its mutants, and
an entry left pointing at another mutant would hide the one it was written for.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS = Path(__file__).with_name("mutation_equivalents.txt")
PACKAGES = ("engine/surgery/", "engine/formats/", "engine/export.py", "engine/cli/")
COLUMNS = ("mutants", "checked", "killed", "no test selected", "equivalent", "survived")
# mutmut 3.8's exit codes (mutmut/stats.py): what each says of the mutant.
KILLED = {1, 3, 36, -24, 24, 152, 255, -11, -9, 37}
NO_TESTS = {5, 33}
SURVIVED = 0


def entries(path: Path = EQUIVALENTS) -> list[str]:
    """The file's mutant lines (``NAME: reason``): every line but blank ones and ``#`` comments."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


def equivalents(path: Path = EQUIVALENTS) -> set[str]:
    return {line.split(": ", 1)[0] for line in entries(path)}


def verdicts(mutants: Path) -> dict[str, dict[str, int | None]]:
    """Each mutated module's path (``engine/formats/cbor.py``) with its mutants' exit codes."""
    found = {}
    for meta in sorted(mutants.glob("engine/**/*.py.meta")):
        module = meta.relative_to(mutants).as_posix().removesuffix(".meta")
        codes = json.loads(meta.read_bytes())["exit_code_by_key"]
        if codes:  # a module with no function to mutate (a package's empty __init__) has no row
            found[module] = codes
    return found


def counts(codes: dict[str, int | None], equivalent: set[str]) -> Counter:
    row: Counter = Counter(mutants=len(codes))
    for name, code in codes.items():
        if code is None:
            continue
        row["checked"] += 1
        if code in KILLED:
            row["killed"] += 1
        elif name in equivalent:
            row["equivalent"] += 1
        elif code in NO_TESTS:
            row["no test selected"] += 1
        elif code == SURVIVED:
            row["survived"] += 1
    return row


def score(row: Counter) -> str:
    judged = row["checked"] - row["no test selected"] - row["equivalent"]
    return f"{100 * row['killed'] / judged:.1f}%" if judged else "-"


def table(found: dict[str, dict[str, int | None]], equivalent: set[str]) -> str:
    lines = ["| module | " + " | ".join(COLUMNS) + " | score |", "|---|" + "---:|" * (len(COLUMNS) + 1)]
    for package in PACKAGES:
        modules = [module for module in found if module.startswith(package)]
        total: Counter = Counter()
        for module in modules:
            row = counts(found[module], equivalent)
            total.update(row)
            lines.append(_line(f"`{module}`", row))
        if len(modules) > 1:
            lines.append(_line(f"**`{package}`**", total, bold=True))
    return "\n".join(lines)


def _line(label: str, row: Counter, bold: bool = False) -> str:
    cells = [f"{row[column]:,}" for column in COLUMNS]
    shown = f"**{score(row)}**" if bold else score(row)
    return f"| {label} | " + " | ".join(cells) + f" | {shown} |"


def survivors(found: dict[str, dict[str, int | None]], equivalent: set[str]) -> list[str]:
    return [name for codes in found.values() for name, code in codes.items()
            if code == SURVIVED and name not in equivalent]


def stale(found: dict[str, dict[str, int | None]], equivalent: set[str]) -> list[str]:
    """The listed names whose mutant was killed or does not exist in the modules mutmut judged."""
    codes = {name: code for module in found.values() for name, code in module.items()}
    modules = {name.split(".x", 1)[0] for name in codes}
    return sorted(name for name in equivalent if codes.get(name) in KILLED
                  or (name not in codes and name.split(".x", 1)[0] in modules))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mutants", nargs="?", type=Path, default=ROOT / "mutants", help="mutmut's folder")
    parser.add_argument("--survivors", action="store_true", help="list the survivors not listed as equivalent")
    parser.add_argument("--stale", action="store_true", help="list the equivalents no surviving mutant has")
    args = parser.parse_args(argv)
    found, equivalent = verdicts(args.mutants), equivalents()
    if not found:
        print(f"{args.mutants}: no mutmut verdicts here (run `mutmut run` first)", file=sys.stderr)
        return 1
    if args.survivors or args.stale:
        print("\n".join((survivors if args.survivors else stale)(found, equivalent)))
    else:
        print(table(found, equivalent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
