"""A filter that keeps the selected tensor keeps what the side panel shows of it: its statistics and the slice
the user chose stay on screen rather than being read again (gui/store_view.py, _shows_the_same)."""

from __future__ import annotations

from tests.helpers.samples import SAMPLES


def test_a_filter_keeping_the_selected_tensor_keeps_its_statistics_and_slice(window, open_view, qtbot):
    view = open_view(SAMPLES / "sample_cnn.bpk")
    assert view.select("conv2.weight")
    values, details = view.values, view.details
    qtbot.waitUntil(lambda: values.current is not None and details.stats is not None, timeout=30_000)
    values.spins[0].setValue(5)
    qtbot.waitUntil(lambda: values.current is not None and values.current.leading == (5, 0), timeout=30_000)
    stats, shown = details.stats, values.current

    result = view.apply_filter("conv2", regex=False)

    assert result.matches == 2 and view.current_node().path == "conv2.weight"
    assert view.current_node() is not view._full_tree.find("conv2.weight")  # a node of the filtered tree
    assert details.stats is stats and values.current is shown and values.current.leading == (5, 0)
    assert values.spins[0].value() == 5 and details.title.text() == "conv2.weight"


def test_a_group_selected_again_under_a_filter_shows_the_filtered_totals(window, open_view, qtbot):
    view = open_view(SAMPLES / "sample_cnn.bpk")
    assert view.select("conv2")
    assert view.details.summary.text().startswith("group · 2 tensors")
    view.apply_filter("conv2.w", regex=False)
    assert view.current_node().path == "conv2"
    assert view.details.summary.text().startswith("group · 1 tensors")
