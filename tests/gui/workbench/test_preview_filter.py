"""The Preview's text filter narrows its rows by name as the user types, through a proxy (no rebuild)."""

from __future__ import annotations

from gui.main_window import MainWindow
from gui.workbench.panels.preview import NAME

from tests.helpers.gui_workbench import settle


def _shown_names(panel) -> list[str]:
    return [panel.sorted.index(r, NAME).data() for r in range(panel.sorted.rowCount())]


def test_typing_in_the_preview_filter_narrows_rows_by_name_without_replanning(window: MainWindow, surgery, qtbot):
    document = surgery()
    panel = window.panels["preview"]
    everything = sorted(_shown_names(panel))
    resets = []
    panel.model.modelReset.connect(lambda: resets.append(1))
    qtbot.keyClicks(panel.name_filter, "FC1")
    assert sorted(_shown_names(panel)) == ["fc1.bias", "fc1.weight"]
    assert panel.shown.text() == f"2 of {len(everything)} rows"
    assert not resets and not document.busy  # the proxy filtered; the plan and its model stayed

    window.panels["adapters"].checks["pytorch-to-burn"].click()  # a new plan keeps the filter
    settle(qtbot, document)
    assert sorted(_shown_names(panel)) == ["fc1.bias", "fc1.weight"]
    assert "transposed" in panel.sorted.index(_shown_names(panel).index("fc1.weight"), 0).data()

    panel.name_filter.clear()
    assert panel.sorted.rowCount() == panel.model.rowCount() == len(everything)
    assert not panel.shown.isVisible()
