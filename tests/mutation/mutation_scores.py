"""The mutation run's scores, per module and per package, as README's table (README, "Testing: mutation runs").

    python tests/mutation/mutation_scores.py [MUTANTS_DIR] [--survivors]

Reads mutmut's verdicts from ``mutants/**/*.meta`` and subtracts the mutants
``tests/mutation/mutation_equivalents.txt`` lists. A score is killed / (checked - no test selected - equivalent);
a timeout, a crash or a type-check catch counts as killed (some test did not pass), a mutant not checked
yet counts in no score; a mutant some test killed counts as killed even where the file lists it. ``--survivors``
lists the survivors not listed as equivalent, one name a line; ``--stale`` lists the file's names that no
surviving mutant has (a killed one, or none of that number): a change to a function renumbers its mutants, and
an entry left pointing at another mutant would hide the one it was written for.

``--record`` writes ``tests/mutation/mutation_equivalents_judged.json`` from a run: mutmut's hash of each function whose
listed mutants all survived it. A later run skips a listed mutant while its function's hash is the recorded one
(``mutant_runs.skip_settled``): the mutant is the very one judged, and it survives by definition.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENTS = Path(__file__).with_name("mutation_equivalents.txt")
JUDGED = Path(__file__).with_name("mutation_equivalents_judged.json")
PACKAGES = ("engine/surgery/", "engine/formats/", "engine/export.py", "engine/cli/")
COLUMNS = ("mutants", "checked", "killed", "no test selected", "equivalent", "survived")
# mutmut 3.8's exit codes (mutmut/stats.py): what each says of the mutant.
TIMEOUT = 36  # mutmut's "timeout"; tests/mutation/mutant_runs.py ends a run over its limits with it too
KILLED = {1, 3, TIMEOUT, -24, 24, 152, 255, -11, -9, 37}
NO_TESTS = {5, 33}
SURVIVED = 0
SKIPPED = 34  # "skipped": here, a listed equivalent whose function is unchanged since a run judged it


def entries(path: Path = EQUIVALENTS) -> list[str]:
    """The file's mutant lines (``NAME: reason``): every line but blank ones and ``#`` comments."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]


def equivalents(path: Path = EQUIVALENTS) -> set[str]:
    return {line.split(": ", 1)[0] for line in entries(path)}


def metas(mutants: Path) -> dict[str, dict]:
    """mutmut's record of each mutated module, by the module's path (``engine/formats/cbor.py``)."""
    return {meta.relative_to(mutants).as_posix().removesuffix(".meta"): json.loads(meta.read_bytes())
            for meta in sorted(mutants.glob("engine/**/*.py.meta"))}


def verdicts(mutants: Path) -> dict[str, dict[str, int | None]]:
    """Each mutated module's path with its mutants' exit codes."""
    # a module with no function to mutate (a package's empty __init__) has no row
    return {module: meta["exit_code_by_key"] for module, meta in metas(mutants).items() if meta["exit_code_by_key"]}


def function_of(mutant: str) -> str:
    """The function a mutant was made from, named as mutmut names its mutants: ``engine.cli.x_main``."""
    return mutant.partition("__mutmut_")[0]


def function_hashes(mutants: Path) -> dict[str, str]:
    """mutmut's hash of each mutated function's source (of its syntax tree, so not of comments), by name."""
    hashes = {}
    for module, meta in metas(mutants).items():
        prefix = module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        hashes |= {f"{prefix}.{function}": digest for function, digest in meta["hash_by_function_name"].items()}
    return hashes


def judged_functions(found: dict[str, dict[str, int | None]], hashes: dict[str, str],
                     equivalent: set[str]) -> dict[str, str]:
    """The functions whose listed mutants all survived the run (or were skipped as settled), with their hash."""
    codes = {name: code for module in found.values() for name, code in module.items()}
    listed_codes: dict[str, list] = defaultdict(list)
    for name in equivalent:
        listed_codes[function_of(name)].append(codes.get(name))
    return {function: hashes[function] for function, verdict in sorted(listed_codes.items())
            if function in hashes and all(code in (SURVIVED, SKIPPED) for code in verdict)}


def mutmut_version() -> str | None:
    try:
        return metadata.version("mutmut")
    except metadata.PackageNotFoundError:
        return None


def recorded_functions(path: Path = JUDGED, version: str | None = None) -> dict[str, str]:
    """The record's functions and hashes; none when it was made by another mutmut (which numbers differently)."""
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    wanted = version or mutmut_version()
    return record["functions"] if wanted and record.get("mutmut") == wanted else {}


def settled(equivalent: set[str], recorded: dict[str, str], hashes: dict[str, str]) -> set[str]:
    """The listed mutants whose function has the hash it had when a run judged them: the same mutants."""
    return {name for name in equivalent
            if (function := function_of(name)) in recorded and recorded[function] == hashes.get(function)}


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
    parser.add_argument("--record", action="store_true", help=f"write {JUDGED.name} from this run")
    args = parser.parse_args(argv)
    found, equivalent = verdicts(args.mutants), equivalents()
    if not found:
        print(f"{args.mutants}: no mutmut verdicts here (run `mutmut run` first)", file=sys.stderr)
        return 1
    if args.record:
        functions = judged_functions(found, function_hashes(args.mutants), equivalent)
        JUDGED.write_text(json.dumps({"mutmut": mutmut_version(), "functions": functions}, indent=1) + "\n")
        print(f"{JUDGED.name}: {len(functions)} functions, {len(settled(equivalent, functions, functions))} "
              "listed mutants")
    elif args.survivors or args.stale:
        print("\n".join((survivors if args.survivors else stale)(found, equivalent)))
    else:
        print(table(found, equivalent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
