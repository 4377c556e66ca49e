"""A mutant's run collects less and leaves nothing behind, yet runs exactly the tests mutmut named.

Promises (README, "Testing: mutation runs") -> tests:
- a mutant's run collects one argument per test function and runs exactly the named tests, each parametrized
  case and class method as named -> test_a_mutant_run_runs_exactly_the_named_tests
- a mutant's run removes its temporary folder; pytest's default leaves one per session
  -> test_a_mutant_run_leaves_no_temporary_folder
- with MUTANT_COSTS, each mutant's run appends one line: the mutant, killed or not, its tests, its seconds
  -> test_a_mutant_run_records_its_cost_when_asked
- one argument per test function, and every other test function of a named file is never collected
  -> test_the_named_ids_become_one_argument_per_function_and_name_the_rest_unwanted
- a mutant's run that holds more than its resident limit (4 GiB), or whose test runs past its deadline, ends at
  once as a timeout, a kill -> test_a_mutant_run_over_its_resident_limit_ends_as_a_timeout,
  test_a_mutant_run_whose_test_runs_past_its_deadline_ends_as_a_timeout
- a listed equivalent whose function is unchanged since a run judged it runs no test and ends "skipped" (34);
  a changed function, an unlisted mutant or MUTMUT_RECHECK_EQUIVALENTS=1 runs the tests
  -> test_a_settled_equivalent_runs_no_test, test_a_changed_function_or_a_recheck_runs_the_tests
- the test that kills a mutant is noted for its function, and a sibling's run tries the function's killers first,
  in order of first-pass time per kill; only the order changes -> test_a_killed_mutant_run_notes_its_killer,
  test_a_mutant_run_tries_its_siblings_killers_first, test_the_order_weighs_a_killers_time_against_its_kills
"""

from __future__ import annotations

import getpass
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from tests.mutation.mutant_runs import KILLERS, Requested, first_pass_seconds, likeliest_first

TESTS = Path(__file__).resolve().parent
SAMPLE = '''
import time

import pytest

@pytest.mark.parametrize("n", [1, 2, 3])
def test_cases(n, tmp_path):
    (tmp_path / "written").write_text(str(n))

def test_other():
    pass

def test_never_named():
    raise AssertionError("not named")

def test_waits_forever():
    while True:
        time.sleep(0.05)

def test_holds_300_mib():
    held = bytearray(b"x") * (300 << 20)  # written, so resident
    while held:
        time.sleep(0.05)  # until the run is ended from outside

class TestGroup:
    def test_method(self):
        pass

    def test_unnamed_method(self):
        raise AssertionError("not named")
'''
NAMED = ["tests/test_sample.py::test_cases[1]", "tests/test_sample.py::test_cases[3]",
         "tests/test_sample.py::TestGroup::test_method", "tests/test_sample.py::test_other"]


def sample_project(root: Path) -> Path:
    """A project whose tests/ holds this suite's conftest and a sample test module."""
    tests = root / "tests"
    (tests / "mutation").mkdir(parents=True)
    shutil.copy(TESTS.parent / "conftest.py", tests / "conftest.py")
    for name in ("mutant_runs.py", "mutation_scores.py"):
        shutil.copy(TESTS / name, tests / "mutation" / name)
    (tests / "test_sample.py").write_text(SAMPLE)
    return root


def settle(project: Path, function_hash_now: str) -> dict[str, str]:
    """List ``engine.m.x_f__mutmut_1`` as equivalent, record ``engine.m.x_f`` as judged with hash "aaa" by
    mutmut 9.9, and give mutmut's meta of engine/m.py the hash ``function_hash_now``; returns the environment
    that makes the run's mutmut 9.9 (an installed distribution's metadata, first on the path)."""
    (project / "tests" / "mutation" / "mutation_equivalents.txt").write_text(
        "# why\nengine.m.x_f__mutmut_1: the sample's mutant, listed for this test\n")
    (project / "tests" / "mutation" / "mutation_equivalents_judged.json").write_text(
        json.dumps({"mutmut": "9.9", "functions": {"engine.m.x_f": "aaa"}}))
    (project / "engine").mkdir(exist_ok=True)
    (project / "engine" / "m.py.meta").write_text(json.dumps(
        {"exit_code_by_key": {"engine.m.x_f__mutmut_1": 0}, "hash_by_function_name": {"x_f": function_hash_now}}))
    dist = project / "site" / "mutmut-9.9.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mutmut\nVersion: 9.9\n")
    return {"PYTHONPATH": str(project / "site")}


def run_pytest(project: Path, temp: Path, mutant: str | None, named: list[str] = NAMED,
               **more_env: str) -> subprocess.CompletedProcess:
    temp.mkdir(exist_ok=True)
    unset = ("MUTANT_UNDER_TEST", "PYTEST_ADDOPTS", "MUTANT_COSTS", "MUTMUT_RECHECK_EQUIVALENTS",
             "MUTANT_RESIDENT_LIMIT", "MUTANT_TEST_SECONDS")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env |= {"PYTEST_DEBUG_TEMPROOT": str(temp), **more_env} | ({"MUTANT_UNDER_TEST": mutant} if mutant else {})
    return subprocess.run([sys.executable, "-m", "pytest", "--rootdir=.", "-o", "addopts=", "-p", "no:xdist",
                           "-p", "no:pytest_cov", "-p", "no:cacheprovider", "-v", *named],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)


def passed(out: str) -> list[str]:
    return sorted(ran(out))


def ran(out: str) -> list[str]:
    """The tests a verbose run reports as passed, in the order they ran."""
    return re.findall(r"^(\S+) PASSED", out, re.M)


def test_a_mutant_run_runs_exactly_the_named_tests(tmp_path):
    project = sample_project(tmp_path / "project")
    as_mutant = run_pytest(project, tmp_path / "temp", "engine.x_f__mutmut_1")
    plain = run_pytest(project, tmp_path / "temp", None)
    assert as_mutant.returncode == 0, as_mutant.stdout + as_mutant.stderr
    assert passed(as_mutant.stdout) == passed(plain.stdout) == sorted(NAMED)
    # one argument per function: test_cases' three cases are collected and the unnamed one dropped
    assert "collected 5 items / 1 deselected / 4 selected" in as_mutant.stdout
    assert "collected 4 items" in plain.stdout


def test_a_mutant_run_leaves_no_temporary_folder(tmp_path):
    project = sample_project(tmp_path / "project")
    assert run_pytest(project, tmp_path / "mutant", "engine.x_f__mutmut_1").returncode == 0
    assert run_pytest(project, tmp_path / "plain", None).returncode == 0
    assert list((tmp_path / "mutant").iterdir()) == []
    assert [p.name for p in (tmp_path / "plain").iterdir()] == [f"pytest-of-{getpass.getuser()}"]


def test_a_mutant_run_records_its_cost_when_asked(tmp_path):
    project = sample_project(tmp_path / "project")
    costs = tmp_path / "costs.jsonl"
    run_pytest(project, tmp_path / "temp", "engine.x_f__mutmut_1", MUTANT_COSTS=str(costs))
    run_pytest(project, tmp_path / "temp", "engine.x_f__mutmut_2", ["tests/test_sample.py::test_never_named"],
               MUTANT_COSTS=str(costs))
    run_pytest(project, tmp_path / "temp", None, MUTANT_COSTS=str(costs))  # not a mutant's run: no line
    lines = [json.loads(line) for line in costs.read_text().splitlines()]
    assert [(line["mutant"], line["killed"], line["tests"]) for line in lines] == [
        ("engine.x_f__mutmut_1", False, 4), ("engine.x_f__mutmut_2", True, 1)]
    assert all(line["user"] > 0 and line["wall"] > 0 and line["system"] >= 0 for line in lines)


def test_the_named_ids_become_one_argument_per_function_and_name_the_rest_unwanted():
    requested = Requested.from_args(NAMED)
    assert requested.functions() == ["tests/test_sample.py::TestGroup::test_method",
                                     "tests/test_sample.py::test_cases", "tests/test_sample.py::test_other"]
    assert requested.unwanted("tests/test_sample.py", "test_never_named")
    assert requested.unwanted("tests/test_sample.py", "test_unnamed_method")
    assert not requested.unwanted("tests/test_sample.py", "test_cases")
    assert not requested.unwanted("tests/test_sample.py", "test_method")
    assert not requested.unwanted("tests/other.py", "test_never_named")  # a file nobody named: pytest's business


def test_no_stats_file_means_no_first_pass_times(tmp_path):
    assert first_pass_seconds(tmp_path / "mutmut-stats.json") == {}
    (tmp_path / "mutmut-stats.json").write_text('{"duration_by_test": {"tests/a.py::t": 0.5}}')
    assert first_pass_seconds(tmp_path / "mutmut-stats.json") == {"tests/a.py::t": 0.5}


def test_a_settled_equivalent_runs_no_test(tmp_path):
    project = sample_project(tmp_path / "project")
    env = settle(project, function_hash_now="aaa")
    costs = tmp_path / "costs.jsonl"
    skipped = run_pytest(project, tmp_path / "temp", "engine.m.x_f__mutmut_1", MUTANT_COSTS=str(costs), **env)
    assert skipped.returncode == 34, skipped.stdout + skipped.stderr  # mutmut's "skipped"
    assert passed(skipped.stdout) == []
    assert "a listed equivalent, its function unchanged since a run judged it" in skipped.stderr
    assert [json.loads(line)["mutant"] for line in costs.read_text().splitlines()] == ["engine.m.x_f__mutmut_1"]
    unlisted = run_pytest(project, tmp_path / "temp", "engine.m.x_f__mutmut_2", **env)
    assert unlisted.returncode == 0 and passed(unlisted.stdout) == sorted(NAMED)


def test_a_changed_function_or_a_recheck_runs_the_tests(tmp_path):
    changed = sample_project(tmp_path / "changed")
    env = settle(changed, function_hash_now="bbb")
    run = run_pytest(changed, tmp_path / "temp", "engine.m.x_f__mutmut_1", **env)
    assert run.returncode == 0 and passed(run.stdout) == sorted(NAMED)
    same = sample_project(tmp_path / "same")
    env = settle(same, function_hash_now="aaa")
    run = run_pytest(same, tmp_path / "temp", "engine.m.x_f__mutmut_1", MUTMUT_RECHECK_EQUIVALENTS="1", **env)
    assert run.returncode == 0 and passed(run.stdout) == sorted(NAMED)


def test_a_mutant_run_over_its_resident_limit_ends_as_a_timeout(tmp_path):
    project = sample_project(tmp_path / "project")
    run = run_pytest(project, tmp_path / "temp", "engine.x_f__mutmut_1", ["tests/test_sample.py::test_holds_300_mib"],
                     MUTANT_RESIDENT_LIMIT=str(200 << 20))
    assert run.returncode == 36, run.stdout + run.stderr  # mutmut's "timeout"


def test_a_mutant_run_whose_test_runs_past_its_deadline_ends_as_a_timeout(tmp_path):
    project = sample_project(tmp_path / "project")
    named = ["tests/test_sample.py::test_other", "tests/test_sample.py::test_waits_forever"]
    run = run_pytest(project, tmp_path / "temp", "engine.x_f__mutmut_1", named, MUTANT_TEST_SECONDS="0.5,0")
    assert run.returncode == 36, run.stdout + run.stderr  # mutmut's "timeout"
    quick = run_pytest(project, tmp_path / "temp", "engine.x_f__mutmut_1", named[:1], MUTANT_TEST_SECONDS="0.5,0")
    assert quick.returncode == 0 and passed(quick.stdout) == named[:1]


def test_a_killed_mutant_run_notes_its_killer(tmp_path):
    project = sample_project(tmp_path / "project")
    named = ["tests/test_sample.py::test_other", "tests/test_sample.py::test_never_named",
             "tests/test_sample.py::TestGroup::test_unnamed_method"]
    killed = run_pytest(project, tmp_path / "temp", "engine.m.x_f__mutmut_2", named[:2])
    assert killed.returncode == 1, killed.stdout + killed.stderr
    run_pytest(project, tmp_path / "temp", "engine.m.x_f__mutmut_3")  # survives: nothing to note
    run_pytest(project, tmp_path / "temp", None, named[1:])  # not a mutant's run: nothing to note
    run_pytest(project, tmp_path / "temp", "engine.m.x_g__mutmut_1", named[2:])
    killers = project / KILLERS
    assert sorted(p.name for p in killers.iterdir()) == ["engine.m.x_f", "engine.m.x_g"]
    assert (killers / "engine.m.x_f").read_text() == "tests/test_sample.py::test_never_named\n"  # -x: the first only
    assert (killers / "engine.m.x_g").read_text() == "tests/test_sample.py::TestGroup::test_unnamed_method\n"


def test_a_mutant_run_tries_its_siblings_killers_first(tmp_path):
    project = sample_project(tmp_path / "project")
    (project / KILLERS).mkdir()
    (project / KILLERS / "engine.m.x_f").write_text(
        "tests/test_sample.py::test_other\ntests/test_sample.py::TestGroup::test_method\n"
        "tests/test_sample.py::test_other\n")
    sibling = run_pytest(project, tmp_path / "temp", "engine.m.x_f__mutmut_9")
    other_function = run_pytest(project, tmp_path / "temp", "engine.m.x_g__mutmut_9")
    assert ran(sibling.stdout) == ["tests/test_sample.py::test_other", "tests/test_sample.py::TestGroup::test_method",
                                   "tests/test_sample.py::test_cases[1]", "tests/test_sample.py::test_cases[3]"]
    assert ran(other_function.stdout) == ["tests/test_sample.py::TestGroup::test_method",  # as collected
                                          "tests/test_sample.py::test_cases[1]", "tests/test_sample.py::test_cases[3]",
                                          "tests/test_sample.py::test_other"]


def test_the_order_weighs_a_killers_time_against_its_kills(tmp_path, monkeypatch):
    """First-pass seconds per kill, a test with none counting a twentieth of one: a quick test that has never
    killed goes before a slow killer, a killer before a test as quick that has not."""
    seconds = {"t::slow_killer": 1.0, "t::quick": 0.01, "t::quick_killer": 0.01, "t::twice": 0.03, "t::free": 0.0}
    (tmp_path / "mutmut-stats.json").write_text(json.dumps({"duration_by_test": seconds}))
    (tmp_path / KILLERS).mkdir()
    (tmp_path / KILLERS / "engine.m.x_f").write_text("t::slow_killer\nt::quick_killer\nt::twice\nt::twice\n")
    monkeypatch.setenv("MUTANT_UNDER_TEST", "engine.m.x_f__mutmut_4")
    items = [SimpleNamespace(nodeid=name) for name in ["t::slow_killer", "t::quick", "t::free", "t::twice",
                                                        "t::quick_killer", "t::unknown"]]
    likeliest_first(items, tmp_path)
    assert [item.nodeid for item in items] == ["t::quick_killer", "t::twice", "t::free", "t::unknown", "t::quick",
                                               "t::slow_killer"]
