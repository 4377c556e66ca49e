"""A large store's tab shows its tree first; a worker then works out its first levels and the tab opens them,
unless a filter replaced the tree meanwhile (gui/store_view.py, _open_first_levels)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

import gui.store_view as store_view_module
from gui.loaded_store import LATE_LEVELS_FROM

PER_PART = LATE_LEVELS_FROM // 2 + 10  # two parts: the store is over the threshold


def _large(tmp_path: Path) -> Path:
    """``model`` (a lone row) holding ``enc`` and ``dec``, each with thousands of layers."""
    path = tmp_path / "large.safetensors"
    save_file({f"model.{part}.{i}.weight": np.zeros(1, np.float32) for part in ("enc", "dec") for i in range(PER_PART)},
              str(path))
    return path


def _top_rows(view) -> list[str]:
    return [view.model.index(row, 0).data() for row in range(view.model.rowCount())]


def test_the_first_levels_of_a_large_store_open_once_worked_out(window, open_view, qtbot, tmp_path):
    view = open_view(_large(tmp_path))
    assert view.loaded.opened is None  # left to the view: nothing was split while loading
    model_row = view.model.index(0, 0)
    qtbot.waitUntil(window.is_idle, timeout=30_000)  # what a screenshot waits for: the shown tab's levels opened
    assert view.tree_view.isExpanded(model_row) and not view.levels_pending
    assert _top_rows(view) == ["model"]
    children = [view.model.index(row, 0, model_row).data() for row in range(view.model.rowCount(model_row))]
    assert sorted(children) == ["dec", "enc"]  # the lone row opened; its children hold thousands of rows each: closed
    assert not view.tree_view.isExpanded(view.model.index(0, 0, model_row))
    assert view.select("model.dec.7.weight") and view.current_node().entry.name == "model.dec.7.weight"


def test_first_levels_arriving_after_a_filter_leave_the_filtered_tree_as_it_is(window, open_view, qtbot, tmp_path,
                                                                               monkeypatch):
    release, started = threading.Event(), threading.Event()
    real = store_view_module.first_levels

    def held(tree):
        started.set()
        assert release.wait(60), "the test never released the worker"
        return real(tree)

    monkeypatch.setattr(store_view_module, "first_levels", held)
    view = open_view(_large(tmp_path))
    qtbot.waitUntil(started.is_set, timeout=30_000)
    result = view.apply_filter("enc", regex=False)
    assert result.matches == PER_PART
    release.set()
    qtbot.waitUntil(lambda: window.work.active == 0, timeout=30_000)
    assert _top_rows(view) == ["model.enc"]  # the filtered tree, its lone row left closed (too many matches)
    assert not view.tree_view.isExpanded(view.model.index(0, 0))
