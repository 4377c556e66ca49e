"""The diff view lists the tensors the recipe dropped, each with the reason, shape and dtype from its source."""

from __future__ import annotations

from pathlib import Path

import torch
from PySide6.QtCore import Qt

from engine import open_store
from engine.surgery import Filter
from gui.main_window import MainWindow
from gui.models.diff_model import ROW_ROLE, STATUSES, TONE_COLOURS, Column
from gui.workbench.diff_panel import show_diff_dock

from tests.helpers.gui_workbench import settle


def _model_file(path: Path) -> None:
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.save(net.state_dict(), path)


def test_dropped_tensors_are_rows_with_their_reason(window: MainWindow, surgery, qtbot, tmp_path: Path):
    path = tmp_path / "net.pt"
    _model_file(path)
    document = surgery(path)
    document.push(document.recipe.with_changes(filter=Filter(exclude=("running_", "num_batches"))), "Exclude")
    settle(qtbot, document)
    with open_store(path) as other:
        panel = show_diff_dock(window, document)
        panel.compare_with(other, role="file", values=False)
        qtbot.waitUntil(lambda: panel.is_idle() and panel.model.rowCount() > 0, timeout=30_000)
        rows = {row.source.name: row for row in panel.model.rows if row.status == "dropped"}
        assert sorted(rows) == ["1.num_batches_tracked", "1.running_mean", "1.running_var"]
        assert rows["1.running_mean"].note == next(d.reason for d in document.plan.dropped
                                                   if d.name == "1.running_mean")
        assert "running_" in rows["1.running_mean"].note and "num_batches" in rows["1.num_batches_tracked"].note
        assert panel.status_boxes["dropped"].text() == "dropped 3"
        index = next(panel.proxy.index(r, Column.STATUS) for r in range(panel.proxy.rowCount())
                     if panel.proxy.index(r, 0).data(ROW_ROLE) == rows["1.running_var"])
        assert index.data() == STATUSES["dropped"].word
        assert index.data(Qt.ItemDataRole.ForegroundRole).color().name() == TONE_COLOURS["dropped"]
        assert "running_" in index.data(Qt.ItemDataRole.ToolTipRole)
        assert index.siblingAtColumn(Column.SOURCE_SHAPE).data() == "[4]"
        assert index.siblingAtColumn(Column.SOURCE_DTYPE).data() == "F32"
        assert index.siblingAtColumn(Column.OTHER_NAME).data() == "—"
        # the other file has the dropped names: they read as missing from the result, beside the dropped rows
        missing = {r.other.name: r.note for r in panel.model.rows if r.status == "missing"}
        assert set(missing) == set(rows)
        assert missing["1.running_var"].startswith("the recipe drops 1.running_var (filter: ")
        panel.status_boxes["dropped"].click()
        assert all(panel.proxy.index(r, 0).data(ROW_ROLE).status != "dropped" for r in range(panel.proxy.rowCount()))
        panel.release()
