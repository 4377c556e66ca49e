"""At 1024x640, in every workbench state and both themes, measured: rectangles, rows, scroll bars, columns.

Each theme is one run of window_fit_probe.py in its own process (the palette is read once per process).
States: a file opened with a tensor selected; each dock open alone; all docks tabified with the preview or
the diff in front; all docks side by side. The PNGs of every state are left in /tmp/store-studio-fit-<theme>
for a person to look at.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
PROBE = Path(__file__).with_name("window_fit_probe.py")
SCREEN = [1024, 640]
VALUE_ROWS = 2  # the selection's value table keeps at least this many rows in view, the diff in front included
DETAILS_LINE = 24  # where the height allows it, the details above the values keep at least this much
DIFF_FRONT = ("alone-diff", "tabified-diff")  # the diff's bars take height: only there may the details fold
RIGHT = ("filters", "remap", "adapters", "sources")


@pytest.fixture(scope="module", params=["system", "dark"])
def states(request, tmp_path_factory) -> dict:
    shots = Path(f"/tmp/store-studio-fit-{request.param}")
    result = subprocess.run([sys.executable, str(PROBE), request.param, str(shots)], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"},
                            timeout=600, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_every_state_is_measured(states):
    assert set(states) == {"opened", *(f"alone-{d}" for d in (*RIGHT, "preview", "diff")), "tabified-preview",
                           "tabified-diff", "side-by-side"}


def test_the_window_stays_1024x640_and_asks_for_no_more(states):
    for name, state in states.items():
        assert state["window"] == SCREEN, name
        assert state["minimum"][0] <= SCREEN[0] and state["minimum"][1] <= SCREEN[1], (name, state["minimum"])


def test_no_dock_scrolls_sideways_and_wrapped_text_stays_inside(states):
    for name, state in states.items():
        for dock, facts in state["docks"].items():
            assert not facts["horizontal_scroll_bar"], (name, dock)
            assert facts["wrapped_labels_wider_than_dock"] == [], (name, dock)


def test_the_tree_keeps_name_dtype_and_shape_readable(states):
    for name, state in states.items():
        tree = state["tree"]
        assert tree["name"] >= 0.4 * tree["viewport"], name
        for column, facts in tree["columns"].items():  # a column of its own, wide enough, or in the name cell
            shown = not facts["hidden"] and facts["width"] >= facts["needs"]
            assert shown or facts["in_name_cell"], (name, column, facts)


def test_the_value_table_shows_two_rows_in_every_state(states):
    for name, state in states.items():
        assert state["values_visible"] and state["value_rows"] >= VALUE_ROWS, (name, state["value_rows"])


def test_the_details_fold_away_only_for_want_of_height_and_come_back(states):
    """States are measured in order: tabified-preview, after alone-diff, shows the details came back."""
    for name in set(states) - set(DIFF_FRONT):
        assert states[name]["details_height"] >= DETAILS_LINE, (name, states[name]["details_height"])


def test_the_preview_and_diff_show_six_rows_and_every_operation_reads_whole_or_in_its_tooltip(states):
    for name in ("alone-preview", "tabified-preview"):
        assert states[name]["preview"]["rows"] >= 6, name
    for name in ("alone-diff", "tabified-diff"):
        assert states[name]["diff_rows"] >= 6, name
    for name, state in states.items():
        if "preview" in state:
            assert state["preview"]["operations_hidden"] == [], name
