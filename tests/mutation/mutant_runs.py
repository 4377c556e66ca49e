"""What a mutant's run (README, "Testing: mutation runs") needs from mutmut's fork server and from pytest.

mutmut forks every mutant's run from a server that has collected the tests once, then calls ``pytest.main``
with the node ids of the tests that call the mutated function (300 to 1,500 of them for the readers' entry
points). This module is not a conftest because pytest imports each conftest afresh in every session: what is
kept here (the first pass's times) survives from the server into every forked run, where a conftest's globals
were empty again and each run re-read mutmut's 15 MB stats file (40-60 ms of CPU).

The conftests' hooks call these functions; outside mutmut they return at once and change nothing.
"""

from __future__ import annotations

import functools
import json
import math
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import settings

from tests.mutation import mutation_scores

FIRST_PASS_SECONDS: dict[str, float] = {}  # each test's time in mutmut's first pass, read in the fork server


def in_mutant_run() -> bool:
    """True in the run of one mutant (mutmut names it in ``MUTANT_UNDER_TEST``); not in its first pass
    (``stats``) nor in its unmutated runs."""
    return "__mutmut_" in os.environ.get("MUTANT_UNDER_TEST", "")


def in_fork_server(config: pytest.Config) -> bool:
    """True in mutmut's fork server: the only collect-only session run with mutmut loaded."""
    return bool(config.option.collectonly) and "mutmut" in sys.modules


def prepare_fork_server(config: pytest.Config) -> None:
    """Once, in the server: read the first pass's times and the settled equivalents, and let every forked run
    skip pytest's scan of the installed packages for plugins (17 ms each; the run blocks every one of them but
    hypothesis', whose ``@given`` runs without it). (``gc.freeze()`` here, Python's advice before forking,
    changed no forked run's system time: 0.303 s each either way over 20 functions' whole test lists.)"""
    FIRST_PASS_SECONDS.update(first_pass_seconds(config.rootpath / "mutmut-stats.json"))
    settled_equivalents(config.rootpath)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"


def first_pass_seconds(stats: Path) -> dict[str, float]:
    """Each test's seconds in mutmut's first pass, from its stats file; empty when there is none."""
    try:
        return json.loads(stats.read_bytes())["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return {}


@functools.cache  # read once, in the fork server: every forked run inherits the answer
def settled_equivalents(root: Path) -> frozenset[str]:
    """The mutants tests/mutation/mutation_equivalents.txt lists whose function's source (mutmut's hash of it, in
    ``root``'s metas) is the one tests/mutation/mutation_equivalents_judged.json recorded from a run they survived."""
    tests = root / "tests" / "mutation"
    recorded = mutation_scores.recorded_functions(tests / mutation_scores.JUDGED.name)
    if not recorded:
        return frozenset()
    listed = mutation_scores.equivalents(tests / mutation_scores.EQUIVALENTS.name)
    return frozenset(mutation_scores.settled(listed, recorded, mutation_scores.function_hashes(root)))


def skip_settled(config: pytest.Config) -> None:
    """A mutant's run of a settled equivalent runs no test and ends "skipped" (mutmut's 34): it is the very mutant
    a run judged and a person listed as unable to change any result, and each such run was every test of its
    function, in every run. ``MUTMUT_RECHECK_EQUIVALENTS=1`` runs them all."""
    if not in_mutant_run() or os.environ.get("MUTMUT_RECHECK_EQUIVALENTS"):
        return
    if os.environ["MUTANT_UNDER_TEST"] in settled_equivalents(config.rootpath):
        append_cost({"mutant": os.environ["MUTANT_UNDER_TEST"], "skipped": True})
        pytest.exit("a listed equivalent, its function unchanged since a run judged it", mutation_scores.SKIPPED)


@dataclass
class Requested:
    """The tests mutmut named for one mutant's run: their node ids, and each file's test function names."""
    ids: frozenset[str]
    names_by_file: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def from_args(cls, args: list[str]) -> Requested:
        requested = cls(frozenset(args))
        for node_id in args:
            path, _, inner = node_id.split("[", 1)[0].partition("::")
            requested.names_by_file.setdefault(path, set()).add(inner.rsplit("::", 1)[-1])
        return requested

    def functions(self) -> list[str]:
        """One argument per test function (``file::test``) instead of one per parametrized case: pytest resolves
        each argument from the root down, and half of a reader's 1,500 node ids are cases of another's function."""
        return sorted({node_id.split("[", 1)[0] for node_id in self.ids})

    def unwanted(self, path: str, name: str) -> bool:
        """True for a test function of a named file that none of the named tests is."""
        names = self.names_by_file.get(path)
        return names is not None and name not in names


REQUESTED = pytest.StashKey[Requested]()


def narrow_arguments(config: pytest.Config) -> None:
    """In a mutant's run, collect only the named tests' functions, each once (``keep_requested`` then drops the
    cases not named): collecting every test of 80 files took 0.15-0.3 s of CPU per mutant, more than running
    the test that kills it. The tests that run are exactly the ones named, as before."""
    if not in_mutant_run() or not config.args:
        return
    requested = Requested.from_args(list(config.args))
    config.stash[REQUESTED] = requested
    config.args[:] = requested.functions()


def skip_unrequested(collector: pytest.Collector, name: str, obj: object) -> list | None:
    """An empty collection for a test function no named test is (no item, no fixture lookup), else None."""
    requested = collector.config.stash.get(REQUESTED, None)
    if requested is None or not requested.unwanted(collector.nodeid.split("::", 1)[0], name):
        return None
    return [] if collector.istestfunction(obj, name) else None


def keep_requested(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop the collected cases that were not named."""
    requested = config.stash.get(REQUESTED, None)
    if requested is None:
        return
    dropped = [item for item in items if item.nodeid not in requested.ids]
    if dropped:
        items[:] = [item for item in items if item.nodeid in requested.ids]
        config.hook.pytest_deselected(items=dropped)


def own_basetemp(config: pytest.Config) -> None:
    """Give a mutant's run a temporary folder of its own. pytest's default numbers a new folder per session
    and removes old ones at exit, which a forked run never reaches (mutmut ends it with ``os._exit``): one whole
    run left 21,000 folders and 65 GB, and each run listed them all to find its number."""
    if in_mutant_run() and config.option.basetemp is None:
        root = os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()
        config.option.basetemp = str(Path(root, f"store-studio-mutant-{os.getpid()}"))


def remove_own_basetemp(config: pytest.Config) -> None:
    if in_mutant_run() and config.option.basetemp is not None:
        shutil.rmtree(config.option.basetemp, ignore_errors=True)


MUTANT_RESIDENT_LIMIT = 4 << 30  # bytes of memory a mutant's run may hold resident (mutmut's server: 0.4 GB)
TEST_SECONDS = (5.0, 20.0)  # a test of a mutant's run may take 5 s + 20 times its first-pass time (wall)


@dataclass
class Limits:
    """What a mutant's run may take: resident bytes, each test's seconds (a floor plus a factor of its first-pass
    time), and the moment its current test must have ended by."""
    resident: int
    test_seconds: tuple[float, float] = TEST_SECONDS
    deadline: float = math.inf


LIMITS = Limits(MUTANT_RESIDENT_LIMIT)


def watch_limits() -> None:
    """A mutant's run that holds more than 4 GiB resident (``MUTANT_RESIDENT_LIMIT`` bytes, when set), or whose
    test runs past its deadline (``start_test_clock``), ends at once as a timeout.

    A mutant that lifts one of the readers' limits makes a hostile-input test allocate without end: in the
    eleventh session's first whole run one held 13 GB of the machine's 23 after 90 s, two more grew beside it,
    and each would have run on to its CPU limit, or taken the machine down, had they not been stopped by hand.
    Resident memory, not an address-space limit: a test opens an LZMA entry whose 4 GiB dictionary is reserved,
    never touched. A mutant that makes a test loop ran until mutmut's limit for the whole run, 8 times the first
    pass of all its tests (80 s for the unpickler's loop, whose 478 tests take 9 s): in the second whole run such
    timeouts took most of the last 20 minutes."""
    if in_mutant_run():
        LIMITS.resident = int(os.environ.get("MUTANT_RESIDENT_LIMIT", MUTANT_RESIDENT_LIMIT))
        if "MUTANT_TEST_SECONDS" in os.environ:
            LIMITS.test_seconds = tuple(map(float, os.environ["MUTANT_TEST_SECONDS"].split(",")))
        threading.Thread(target=_end_over, name="mutant-limits", daemon=True).start()


def start_test_clock(item: pytest.Item) -> None:
    """In a mutant's run, the test about to run must end within 5 s plus 20 times its first-pass time: more
    than any unmutated test takes on a loaded machine (``MUTANT_TEST_SECONDS=FLOOR,FACTOR`` changes both)."""
    if in_mutant_run():
        floor, factor = LIMITS.test_seconds
        LIMITS.deadline = time.monotonic() + floor + factor * FIRST_PASS_SECONDS.get(item.nodeid, 1.0)


def _end_over() -> None:
    page = os.sysconf("SC_PAGE_SIZE")
    with open("/proc/self/statm", "rb") as statm:
        while int(statm.read().split()[1]) * page <= LIMITS.resident and time.monotonic() <= LIMITS.deadline:
            time.sleep(0.1)
            statm.seek(0)
    os._exit(mutation_scores.TIMEOUT)  # stopped for the resources it took: a kill


STARTED = pytest.StashKey[float]()


def start_cost(config: pytest.Config) -> None:
    if in_mutant_run():
        config.stash[STARTED] = time.monotonic()


def record_cost(session: pytest.Session) -> None:
    """With ``MUTANT_COSTS=FILE``, each mutant's run appends one JSON line to FILE: the mutant, whether a test
    failed (killed), how many tests it named, its CPU seconds since it was forked and wall seconds since pytest
    started: where a whole run's time goes (survivors, waiting tests, start-up), which mutmut does not record."""
    if in_mutant_run():
        append_cost({"mutant": os.environ["MUTANT_UNDER_TEST"], "killed": session.testsfailed > 0,
                     "tests": len(session.items),
                     "wall": round(time.monotonic() - session.config.stash[STARTED], 3)})


def append_cost(line: dict) -> None:
    """With ``MUTANT_COSTS=FILE``, append ``line`` and this process's CPU seconds to FILE as one JSON line."""
    path = os.environ.get("MUTANT_COSTS")
    if not path:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line |= {"user": round(usage.ru_utime, 3), "system": round(usage.ru_stime, 3)}
    with open(path, "a") as costs:
        costs.write(json.dumps(line) + "\n")


KILLERS = "mutmut-killers"  # beside mutmut's stats: one file per function, a line per mutant a test killed
UNPROVEN_KILLS = 0.05  # a test that has killed none of a function's mutants counts as this share of a kill
QUICKEST_SECONDS = 0.001  # a test's first-pass time, at the least, when ranking it


def killers_file(root: Path, mutant: str) -> Path:
    """The file of the tests that killed ``mutant``'s siblings (the mutants of the same function)."""
    return root / KILLERS / mutant.rsplit("__mutmut_", 1)[0]


@dataclass
class KillerNote:
    """The file in which this mutant's run notes the test that kills it: None outside a mutant's run, and once
    noted (a test that fails its call and then its teardown is one kill)."""
    file: Path | None = None


KILLER_NOTE = KillerNote()


def start_noting_kills(config: pytest.Config) -> None:
    KILLER_NOTE.file = killers_file(config.rootpath, os.environ["MUTANT_UNDER_TEST"]) if in_mutant_run() else None


def note_killer(report: pytest.TestReport) -> None:
    """In a mutant's run, the first test that fails (mutmut's ``-x`` stops there) is added to its function's
    killers file: one short line, appended whole (``O_APPEND``), so runs forked side by side do not mix lines."""
    if report.failed and KILLER_NOTE.file is not None:
        path, KILLER_NOTE.file = KILLER_NOTE.file, None
        path.parent.mkdir(exist_ok=True)
        with open(path, "a") as killers:
            killers.write(report.nodeid + "\n")


def kills_by_test(root: Path, mutant: str) -> Counter[str]:
    """How many of ``mutant``'s siblings each test has killed so far (in this run or an earlier one)."""
    try:
        return Counter(killers_file(root, mutant).read_text().splitlines())
    except OSError:
        return Counter()


def likeliest_first(items: list[pytest.Item], root: Path) -> None:
    """In a mutant's run (mutmut runs its tests with ``-x``), the tests in order of their first-pass time
    divided by their kills among the mutant's siblings (``UNPROVEN_KILLS`` for a test with none): the least
    time expected before one fails. mutmut hands the tests over in no order and runs a function's mutants
    one after another, and most mutants of a function fail the same few tests: by first-pass time alone, a
    killed mutant of ``allowlist._table`` ran 0.5 s of quick tests before its killer. Survivors still run
    every test; only the order changes, never a verdict (a stale killers file only orders worse)."""
    seconds = FIRST_PASS_SECONDS or first_pass_seconds(root / "mutmut-stats.json")
    kills = kills_by_test(root, os.environ["MUTANT_UNDER_TEST"])
    items.sort(key=lambda item: max(seconds.get(item.nodeid, 0.0), QUICKEST_SECONDS)
               / (kills[item.nodeid] or UNPROVEN_KILLS))


MUTANT_EXAMPLES_SHARE = 4  # a mutant's run draws a quarter of each property test's examples (at least 10)


def fewer_examples(items: list[pytest.Item]) -> None:
    """In a mutant's run, each property test draws a quarter of its examples: they were about nine tenths of a
    surviving mutant's time in engine/surgery (every test of the functions it calls runs). mutmut's first pass
    (which maps tests to functions) draws them all, and so does ``MUTMUT_FULL_EXAMPLES=1``, to re-check a survivor."""
    tests = {id(test): test for test in (getattr(item, "obj", None) for item in items)}  # parametrized: one function
    for test in tests.values():
        drawn = getattr(test, "_hypothesis_internal_use_settings", None)  # read by hypothesis at each call
        if drawn is not None and drawn.max_examples > 10:
            test._hypothesis_internal_use_settings = settings(
                drawn, max_examples=max(10, drawn.max_examples // MUTANT_EXAMPLES_SHARE))
