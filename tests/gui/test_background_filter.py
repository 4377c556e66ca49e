"""Typing a filter over a large file builds the filtered tree in a worker; only the newest request is shown."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtTest import QTest
from safetensors.numpy import save_file

from gui.store_view import BACKGROUND_FILTER_FROM


def _large(tmp_path: Path) -> Path:
    path = tmp_path / "many.safetensors"
    count = BACKGROUND_FILTER_FROM + 1_000
    save_file({f"layers.{i // 10}.block.{i % 10}.weight": np.zeros(1, np.float32) for i in range(count)}, str(path))
    return path


def test_typed_filter_over_a_large_file_shows_its_matches_when_the_worker_is_done(window, open_view, qtbot, tmp_path):
    view = open_view(_large(tmp_path))
    QTest.keyClicks(window.search, "layers.17.")
    qtbot.waitUntil(lambda: view.filter_result.matches == 10, timeout=10_000)
    assert window.match_label.text().startswith("10 of 6,000 match")
    assert view.model.root.tensors == 10 and view.filter_text == "layers.17."


def test_a_superseded_background_filter_is_dropped(window, open_view, qtbot, tmp_path):
    view = open_view(_large(tmp_path))
    results = []
    view.filter_in_background("layers.1", False, results.append)  # 1,000+ matches: slower, and superseded
    view.filter_in_background("layers.42.block.3", False, results.append)
    qtbot.waitUntil(lambda: len(results) >= 1 and view._runner.active == 0, timeout=10_000)  # both workers done
    assert [r.matches for r in results] == [1] and view.filter_text == "layers.42.block.3"


def test_the_selected_tensor_stays_selected_and_in_view_through_a_background_filter(window, open_view, qtbot,
                                                                                     tmp_path):
    view = open_view(_large(tmp_path))
    assert view.select("layers.420.block.7.weight")
    QTest.keyClicks(window.search, "block.7")  # 600 matches: the levels down to the selection are laid out
    qtbot.waitUntil(lambda: view.filter_result.matches == 600, timeout=10_000)
    assert view.current_node().path == "layers.420.block.7.weight"
    index = view.tree_view.currentIndex()
    assert index.isValid() and view.tree_view.isExpanded(index.parent())
    view.flat.setChecked(True)  # a flat list finds the selection by its whole name
    window.search.setText("420.block")
    qtbot.waitUntil(lambda: view.filter_result.matches == 10, timeout=10_000)
    assert view.current_node().path == "layers.420.block.7.weight"
