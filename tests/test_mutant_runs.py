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

from mutant_runs import Requested, first_pass_seconds

TESTS = Path(__file__).resolve().parent
SAMPLE = '''
import pytest

@pytest.mark.parametrize("n", [1, 2, 3])
def test_cases(n, tmp_path):
    (tmp_path / "written").write_text(str(n))

def test_other():
    pass

def test_never_named():
    raise AssertionError("not named")

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
    tests.mkdir(parents=True)
    for name in ("conftest.py", "mutant_runs.py"):
        shutil.copy(TESTS / name, tests / name)
    (tests / "test_sample.py").write_text(SAMPLE)
    return root


def run_pytest(project: Path, temp: Path, mutant: str | None, named: list[str] = NAMED,
               **more_env: str) -> subprocess.CompletedProcess:
    temp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("MUTANT_UNDER_TEST", "PYTEST_ADDOPTS", "MUTANT_COSTS")}
    env |= {"PYTEST_DEBUG_TEMPROOT": str(temp), **more_env} | ({"MUTANT_UNDER_TEST": mutant} if mutant else {})
    return subprocess.run([sys.executable, "-m", "pytest", "--rootdir=.", "-o", "addopts=", "-p", "no:xdist",
                           "-p", "no:pytest_cov", "-p", "no:cacheprovider", "-v", *named],
                          cwd=project, env=env, capture_output=True, text=True)


def passed(out: str) -> list[str]:
    return sorted(re.findall(r"^(\S+) PASSED", out, re.M))


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
