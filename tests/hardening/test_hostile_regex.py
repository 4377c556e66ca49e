r"""Hostile regexes, which must not hang a conversion or the window: every pattern that reaches the engine from a
flag, a shared recipe or the window's search box runs in time linear in the name, in burn-store's dialect, or is
refused in one line. Each runs in a child process (``tests/helpers/hard_child.py``), measured: a hang is killed after
``child.TIMEOUT`` and fails the test, never a test run that waits for ever.

Promise -> test (README, "Limits"):
- ``(a+)+$`` in --include, --exclude, --remap, or any pattern of a recipe file (include, exclude, a source's
  filter, a predicate's ``matches``, a remap), against a name of 100,000 characters converts within 2 s of CPU
  and 300 MiB -> test_a_backtracking_pattern_converts_within_limits
- the search box: the same pattern over the same name, and a look-behind refused, saying why
  -> test_the_search_box_answers_a_backtracking_pattern_within_limits
- what Rust's regex refuses, and nesting or repeats past the limits, are a usage error (exit 2) on the command
  line and a recipe error (exit 1) in a recipe file, one line naming the flag or rule, within limits
  -> test_a_refused_pattern_on_the_command_line_is_a_usage_error, test_a_refused_pattern_in_a_recipe_is_one_line
- a refused pattern is never printed into a Rust chain -> test_a_refused_pattern_in_a_recipe_is_one_line (--as rust)
- a recipe of thousands of costly patterns is refused within limits, as are a name of megabytes that a
  remap would match millions of times -> test_a_recipe_of_costly_patterns_is_refused_within_limits,
  test_a_remap_matching_a_huge_name_everywhere_is_refused_within_limits
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

from engine.humanize import printable  # a line as a terminal shows it
from tests.helpers import hard_child as child

LONG = "a" * 100_000 + "b"  # (a+)+$ backtracks exponentially in the length of this, in Python's re
BACKTRACKS = "(a+)+$"
LOOK_BEHIND = "look-around ((?=, (?!, (?<=, (?<!) is not supported by Rust's regex at position 0"
NESTED = "(" * 5_000 + ")" * 5_000
NESTED_SHOWN = "'" + "(" * 80 + "...' (10,000 characters)"


@pytest.fixture
def long_named(tmp_path: Path) -> Path:
    path = tmp_path / "long.safetensors"
    save_file({LONG: np.zeros(2, np.float32), "keep.a": np.ones(2, np.float32)}, str(path))
    return path


def names(path: Path) -> list[str]:
    with safe_open(str(path), "np") as opened:
        return sorted(opened.keys())


def one_line(run: child.Run, status: int) -> str:
    lines = run.output.strip().splitlines()
    assert run.status == status and len(lines) == 1 and "Traceback" not in run.output, run.describe()
    return lines[0]


def recipe(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "shared.json"
    path.write_text(json.dumps({"version": 1, **doc}), encoding="utf-8")
    return path


@pytest.mark.parametrize("flags, kept", [
    (["--include", BACKTRACKS], ["keep.a"]),
    (["--exclude", BACKTRACKS], [LONG]),
    (["--remap", BACKTRACKS, "x"], [LONG, "keep.x"]),
    (["--recipe", {"filter": {"include": [BACKTRACKS]}}], ["keep.a"]),
    (["--recipe", {"filter": {"exclude": [BACKTRACKS]}}], [LONG]),
    (["--recipe", {"filter": {"where": [{"field": "name", "op": "matches", "value": BACKTRACKS}]}}], ["keep.a"]),
    (["--recipe", {"sources": [{"path": "long.safetensors", "filter": {"include": [BACKTRACKS]}}]}], ["keep.a"]),
    (["--recipe", {"remaps": [[BACKTRACKS, "x"]]}], [LONG, "keep.x"]),
], ids=["include", "exclude", "remap", "recipe-include", "recipe-exclude", "recipe-predicate", "recipe-source-filter",
        "recipe-remap"])
def test_a_backtracking_pattern_converts_within_limits(long_named: Path, tmp_path: Path, flags: list, kept: list):
    if isinstance(flags[-1], dict):
        flags = [flags[0], recipe(tmp_path, flags[1])]
    out = tmp_path / "out.safetensors"
    run = child.cli("convert", long_named, out, *flags, "-q")
    assert run.status == 0, run.describe()
    assert names(out) == sorted(kept)
    assert run.within_limits(), run.describe()


SEARCH_BOX = """
import json, os, sys, time
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from pathlib import Path
from PySide6.QtTest import QTest
from gui.app import create_app
create_app([sys.argv[0]])
from gui.main_window import MainWindow
window = MainWindow()
path = Path(sys.argv[1]).absolute()
window.open_file(path)
while window.view_for(path) is None:
    QTest.qWait(10)
view = window.view_for(path)
started = time.process_time()
found = view.apply_filter(sys.argv[2], True)
cpu = time.process_time() - started
refused = view.apply_filter("(?<=conv)1", True)
print(json.dumps({"matches": found.matches, "error": found.error, "cpu": cpu, "refused": refused.error}))
"""


def test_the_search_box_answers_a_backtracking_pattern_within_limits(long_named: Path):
    run = child.snippet(SEARCH_BOX, long_named, BACKTRACKS)
    assert run.status == 0, run.describe()
    shown = json.loads(run.output.strip().splitlines()[-1])
    assert (shown["matches"], shown["error"]) == (1, None)  # keep.a: case-insensitive, as the search box is
    assert shown["refused"] == f"invalid regex: {LOOK_BEHIND}"
    assert shown["cpu"] <= child.MAX_CPU, run.describe()  # the filter's own CPU: the window's start-up is apart


@pytest.mark.parametrize("flags, says", [
    (["--include", "(?<=conv)1"], f"--include: invalid regex '(?<=conv)1': {LOOK_BEHIND}"),
    (["--exclude", NESTED], f"--exclude: invalid regex {NESTED_SHOWN}: it nests deeper than 250 levels (Rust's "
                            "regex limit) at position 4749"),
    (["--include", "a{100000}"], "--include: invalid regex 'a{100000}': a repeat count above 1,000 (RE2's limit) at "
                                 "position 1"),
    (["--remap", "(a)\\1", "x"], "remap rule 1 ('(a)\\1' -> 'x'): invalid regex '(a)\\1': \\1: backreferences (and "
                                 "octal escapes) are not supported by Rust's regex at position 3"),
    (["--include", "\\bfc\\b"], "--include: invalid regex '\\bfc\\b': \\b: Rust's word boundaries are Unicode-aware "
                                "(é is a word character) and RE2's ASCII-only; spell the boundary out, e.g. "
                                "(?:^|\\.)name(?:\\.|$) at position 0"),
], ids=["look-behind", "nested-5000", "repeat-100000", "backreference", "word-boundary"])
def test_a_refused_pattern_on_the_command_line_is_a_usage_error(long_named: Path, tmp_path: Path, flags, says):
    out = tmp_path / "out.safetensors"
    run = child.cli("convert", long_named, out, *flags)
    assert one_line(run, 2) == printable(f"store-studio convert: {says}")
    assert not out.exists()
    assert run.within_limits(), run.describe()


@pytest.mark.parametrize("doc, says", [
    ({"filter": {"include": ["(?<=conv)1"]}}, f"include rule 1: invalid regex '(?<=conv)1': {LOOK_BEHIND}"),
    ({"remaps": [["^enc", "e"], ["(?<=conv)1", "x"]]},
     f"remap rule 2 ('(?<=conv)1' -> 'x'): invalid regex '(?<=conv)1': {LOOK_BEHIND}"),
    ({"filter": {"where": [{"or": [{"field": "name", "op": "matches", "value": NESTED}]}]}},
     f"filter.where[0].or[0]: predicate name matches '{NESTED}': invalid regex {NESTED_SHOWN}: it nests deeper than "
     "250 levels (Rust's regex limit) at position 4749"),
])
@pytest.mark.parametrize("command", ["convert", "recipe-as-rust"])
def test_a_refused_pattern_in_a_recipe_is_one_line(long_named: Path, tmp_path: Path, doc, says, command):
    path = recipe(tmp_path, doc)
    out = tmp_path / "out.safetensors"
    run = (child.cli("convert", long_named, out, "--recipe", path) if command == "convert"
           else child.cli("recipe", path, "--as", "rust"))
    assert one_line(run, 1) == printable(f"store-studio: shared.json: {says}")  # and no Rust chain on stdout
    assert not out.exists()
    assert run.within_limits(), run.describe()


def test_a_recipe_of_costly_patterns_is_refused_within_limits(long_named: Path, tmp_path: Path):
    """20,000 patterns of 30,000 RE2 instructions each (a 400 KB file) would take 10 minutes and 20 GiB."""
    path = recipe(tmp_path, {"filter": {"include": [rf"\w{{1,20}}{i}" for i in range(20_000)]}})
    run = child.cli("convert", long_named, tmp_path / "out.safetensors", "--recipe", path)
    assert one_line(run, 1) == printable("store-studio: shared.json: include rule 38: invalid regex '\\w{1,20}37': the "
                                         "patterns together are too costly: more than 1,048,576 characters and RE2 "
                                         "instructions (the most one recipe or command line may hold)")
    assert run.within_limits(), run.describe()


def test_a_remap_matching_a_huge_name_everywhere_is_refused_within_limits(tmp_path: Path):
    """Each match of ``a(?:.*z)?`` reads the rest of the name (in Rust too): over 2 MB of ``a``, quadratic."""
    source = tmp_path / "huge.safetensors"
    save_file({"a" * 2_000_000: np.zeros(1, np.float32)}, str(source))
    run = child.cli("convert", source, tmp_path / "out.safetensors", "--remap", "a(?:.*z)?", "b")
    assert one_line(run, 1) == ("store-studio: 'a(?:.*z)?' matches more than 64 times in a name of 2,000,000 "
                                "characters (the most Store Studio replaces in a name that long)")
    assert run.within_limits(), run.describe()
