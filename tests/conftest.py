"""Test set-up shared by every test: no screen is needed, ever; property tests are reproducible in CI; and
a whole-suite run fails when engine/ or gui/ loses its coverage floor.

Hypothesis draws new examples on every local run (more bugs found over time) but a fixed sequence
when ``CI=true`` (a red CI run is the same run when repeated): the ``ci`` profile sets derandomize.

Coverage is on by default (pyproject's addopts) and includes the Qt worker threads (gui/workers.py
installs coverage's thread hook in each task). After a run of the whole suite (``pytest`` with no paths,
nothing deselected) each package's share of lines covered is printed and checked against
``COVERAGE_FLOOR``; runs of a few files are not held to it. ``pytest --no-cov`` skips measuring.
Coverage pauses during ``COST_TESTS``, whose lines smaller tests cover too.

In mutmut's runs the hooks hand over to ``mutant_runs`` (which tests a mutant's run collects, in which order,
with how many examples, in which temporary folder); elsewhere it changes nothing.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from tests.mutation import mutant_runs

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", derandomize=False, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI", "").lower() == "true" else "dev")

ROOT = Path(__file__).resolve().parents[1]
COVERAGE_FLOOR = 90.0  # percent of lines, for each package on its own
PACKAGES = ("engine", "gui")
SHARES = pytest.StashKey[dict]()
# Tests of cost at scale (100,000 names, 10,000 tensors, a 1 GiB file): smaller tests cover the same lines, and
# tracing them only doubles their time, so coverage pauses while they run (pytest-cov's no_cover mark). The
# mutation run leaves them out: the gibibyte conversion alone would add 15 s to every mutant's run (its verdict
# is a child's peak memory; test_export.py's smaller copies check the bytes it streams).
COST_TESTS = frozenset({"test_builds_a_100000_name_tree", "test_100000_tensors_cost_nothing_until_a_group_is_opened",
                        "test_a_10000_tensor_plan_follows_each_edit",
                        "test_more_tensors_than_burn_allows_is_refused_before_reading_them",
                        "test_converting_a_gibibyte_model_stays_small_in_memory"})


def coverage_controller(config: pytest.Config):
    """pytest-cov's controller while this run measures coverage, else None (``--no-cov``)."""
    return getattr(config.pluginmanager.get_plugin("_cov"), "cov_controller", None)


@pytest.hookimpl(tryfirst=True)  # before tmpdir's own pytest_configure reads the basetemp option
def pytest_configure(config: pytest.Config) -> None:
    mutant_runs.skip_settled(config)
    mutant_runs.watch_limits()
    mutant_runs.start_cost(config)
    mutant_runs.start_noting_kills(config)
    mutant_runs.narrow_arguments(config)
    mutant_runs.own_basetemp(config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    mutant_runs.record_cost(session)


def pytest_unconfigure(config: pytest.Config) -> None:
    mutant_runs.remove_own_basetemp(config)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list | None:
    return mutant_runs.skip_unrequested(collector, name, obj)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks the cost tests ``slow`` (the mutation run deselects them) and, while measuring, ``no_cover``."""
    measuring = coverage_controller(config) is not None  # pytest-cov fails on its own mark under --no-cov
    for item in items:
        if item.name in COST_TESTS:
            item.add_marker(pytest.mark.slow)
            if measuring:
                item.add_marker(pytest.mark.no_cover)
    if mutant_runs.in_mutant_run():
        mutant_runs.keep_requested(config, items)
        mutant_runs.likeliest_first(items, config.rootpath)
        if not os.environ.get("MUTMUT_FULL_EXAMPLES"):
            mutant_runs.fewer_examples(items)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    mutant_runs.note_killer(report)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """In mutmut's first pass (which maps each test to the functions it calls), every test starts with the
    engine's caches empty: a cached function would otherwise be mapped only to the first test that asked it
    (``adapters.layout``, ``modules._guess``, the pickle tables), and its mutants would run too few tests.
    In a mutant's run each test starts a clock (``mutant_runs.start_test_clock``)."""
    mutant_runs.start_test_clock(item)
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        for module in [module for name, module in sys.modules.items() if name.split(".")[0] == "engine"]:
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def pytest_collection_finish(session: pytest.Session) -> None:
    if mutant_runs.in_fork_server(session.config):
        mutant_runs.prepare_fork_server(session.config)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session):
    """Outside pytest-cov's own wrapper, so its data is complete and combined when this looks at it."""
    result = yield
    shares = coverage_by_package(session.config)
    if shares is not None and whole_suite(session):
        session.config.stash[SHARES] = shares
        if min(shares.values()) < COVERAGE_FLOOR:
            session.testsfailed += 1  # too late for sessionfinish: this is what sets the exit status
    return result


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    shares = config.stash.get(SHARES, None)
    if shares is None:
        return
    low = [f"{name}/" for name, share in shares.items() if share < COVERAGE_FLOOR]
    text = " · ".join(f"{name}/ {share:.1f}%" for name, share in shares.items())
    terminalreporter.write_sep("=", f"lines covered: {text} (floor {COVERAGE_FLOOR:.0f}% each)",
                               red=bool(low), green=not low)
    if low:
        terminalreporter.write_line(f"coverage floor missed by {', '.join(low)}: add tests for the lines "
                                    "`coverage report -m` lists", red=True, bold=True)


def coverage_by_package(config: pytest.Config) -> dict[str, float] | None:
    """Each package's percentage of lines covered in this run, or None when coverage was not measured."""
    cov = getattr(coverage_controller(config), "cov", None)
    if cov is None:
        return None
    from coverage.exceptions import NoDataError
    shares = {}
    for name in PACKAGES:
        try:
            shares[name] = cov.report(include=[str(ROOT / name / "*")], file=io.StringIO())
        except NoDataError:
            shares[name] = 0.0
    return shares


def whole_suite(session: pytest.Session) -> bool:
    """Only a run of every test says anything about the floor."""
    config = session.config
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    deselected = reporter.stats.get("deselected") if reporter is not None else None
    return (config.args_source == pytest.Config.ArgsSource.TESTPATHS and not deselected
            and not config.option.keyword and not config.option.markexpr and not config.option.collectonly)
