"""The diff view driven like a user: statuses per row, filters, a suggestion turned into a remap rule, values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from engine import ArrayStore, export, open_store
from tests.helpers.samples import SAMPLES
from engine.surgery import RemapRule
from gui.main_window import MainWindow
from gui.models.diff_model import ROW_ROLE, SHARE_ROLE, STATUSES, TONE_COLOURS, Column
from gui.workbench.diff_panel import DiffPanel, show_diff_dock
from gui.workbench.document import RecipeDocument

EXPECTED = {
    "conv1.weight": "applied",
    "norm1.gamma": "renamed",  # the adapter's rename of norm1.weight
    "conv2.bias": "shape_mismatch",
    "fc1.weight": "transposed",
    "fc1.bias": "dtype",
    "fc3.weight": "missing",
    "fc2.weight": "unused",
    "norm1.num_batches_tracked": "unused",
}


@pytest.fixture
def document(window: MainWindow, qtbot):
    store = open_store(SAMPLES / "sample_cnn.pt")
    document = RecipeDocument(store, window.work)
    document.push(document.recipe.with_changes(adapters=("pytorch-to-burn",)), "Add adapter")
    qtbot.waitUntil(lambda: not document.busy and document.plan is not None
                    and document.plan.recipe == document.recipe,
                    timeout=30_000)
    yield document
    document.close()
    store.close()


@pytest.fixture
def template(document: RecipeDocument, tmp_path: Path):
    """What a target model wants: fc1 untransposed, conv2.bias wider, fc2 renamed fc3, fc1.bias in F16, no counters."""
    values = {t.name: np.asarray(t.read()) for t in document.plan.tensors}
    wanted = {name: array for name, array in values.items() if not name.endswith("num_batches_tracked")}
    wanted["conv1.weight"] = wanted["conv1.weight"] + np.float32(0.125)
    fc1 = np.array(wanted["fc1.weight"].T, order="C")  # a copy: the read may be a read-only map
    fc1[0, 0] += np.float32(0.25)
    wanted["fc1.weight"] = fc1
    wanted["fc1.bias"] = wanted["fc1.bias"].astype(np.float16)
    wanted["conv2.bias"] = np.zeros(64, np.float32)
    wanted["fc3.weight"] = wanted.pop("fc2.weight")
    path = export(ArrayStore(wanted).entries, tmp_path / "target.safetensors")
    with open_store(path) as store:
        yield store


def _compared(panel: DiffPanel, qtbot) -> None:
    qtbot.waitUntil(panel.is_idle, timeout=30_000)
    qtbot.waitUntil(lambda: panel.model.rowCount() > 0, timeout=30_000)


def _visible_rows(panel: DiffPanel) -> list:
    return [panel.proxy.index(r, 0).data(ROW_ROLE) for r in range(panel.proxy.rowCount())]


def _row_index(panel: DiffPanel, name: str, column: Column = Column.STATUS):
    for r in range(panel.proxy.rowCount()):
        if panel.proxy.index(r, 0).data(ROW_ROLE).name == name:
            return panel.proxy.index(r, column)
    raise AssertionError(f"no visible row {name}")


def _panel(window: MainWindow, document: RecipeDocument, template, qtbot) -> DiffPanel:
    panel = show_diff_dock(window, document)
    panel.compare_with(template, role="template", values=False)
    _compared(panel, qtbot)
    return panel


def test_each_row_shows_its_status_as_word_icon_and_colour(window, document, template, qtbot):
    panel = _panel(window, document, template, qtbot)
    for name, key in EXPECTED.items():
        index = _row_index(panel, name)
        status = STATUSES[key]
        assert index.data() == status.word
        assert not index.data(Qt.ItemDataRole.DecorationRole).isNull()
        brush = index.data(Qt.ItemDataRole.ForegroundRole)
        if status.tone == "ok":
            assert brush is None  # default text, green tick icon
        else:
            assert brush.color().name() == TONE_COLOURS[status.tone]
    tooltip = _row_index(panel, "fc1.weight").data(Qt.ItemDataRole.ToolTipRole)
    assert tooltip.startswith("transposed: matches if transposed")
    missing = _row_index(panel, "fc3.weight", Column.SOURCE_NAME)
    assert missing.data() == "—" and missing.siblingAtColumn(Column.OTHER_SHAPE).data() == "[128, 10]"
    unused = _row_index(panel, "fc2.weight", Column.OTHER_NAME)
    assert unused.data() == "—" and unused.siblingAtColumn(Column.SOURCE_SHAPE).data() == "[128, 10]"
    colours = {_row_index(panel, n).data(Qt.ItemDataRole.ForegroundRole).color().name()
               for n in ("conv2.bias", "fc3.weight")}
    assert colours == {TONE_COLOURS["problem"]}
    assert panel.status_boxes["missing"].text() == "missing 1"
    assert panel.status_boxes["unused"].text() == "unused 3"


def test_status_checkboxes_and_the_text_filter_hide_rows(window, document, template, qtbot):
    panel = _panel(window, document, template, qtbot)
    total = panel.proxy.rowCount()
    applied = panel.status_boxes["applied"]
    assert applied.isVisible()
    applied.click()
    assert "applied" not in {row.status for row in _visible_rows(panel)}
    assert panel.proxy.rowCount() == total - panel.model.counts()["applied"]
    panel.status_boxes["unused"].click()
    shown = {row.status for row in _visible_rows(panel)}
    assert shown == {"renamed", "shape_mismatch", "transposed", "dtype", "missing"}
    qtbot.keyClicks(panel.filter_edit, "FC")
    assert {row.name for row in _visible_rows(panel)} == {"fc1.weight", "fc1.bias", "fc3.weight"}
    panel.filter_edit.clear()
    applied.click()
    panel.status_boxes["unused"].click()
    assert panel.proxy.rowCount() == total


def test_a_suggestion_becomes_a_remap_rule_and_undo_removes_it(window, document, template, qtbot):
    panel = _panel(window, document, template, qtbot)
    panel.table.setCurrentIndex(_row_index(panel, "fc3.weight"))
    buttons = [b for b in panel.suggestions.findChildren(QPushButton) if b.objectName() == "suggestion"]
    assert [b.text() for b in buttons] == ["fc2.weight  →  fc3.weight"]
    with qtbot.waitSignal(panel.compared, timeout=30_000):
        qtbot.mouseClick(buttons[0], Qt.MouseButton.LeftButton)
    assert document.recipe.remaps == (RemapRule(r"^fc2\.weight$", "fc3.weight"),)
    _compared(panel, qtbot)
    statuses = {row.name: row.status for row in panel.model.rows}
    assert statuses["fc3.weight"] == "renamed" and "fc2.weight" not in statuses

    with qtbot.waitSignal(panel.compared, timeout=30_000):
        document.undo_stack.undo()
    assert document.recipe.remaps == ()
    statuses = {row.name: row.status for row in panel.model.rows}
    assert statuses["fc3.weight"] == "missing" and statuses["fc2.weight"] == "unused"


def test_selecting_a_pair_shows_its_value_difference_and_histogram(window, document, template, qtbot):
    panel = _panel(window, document, template, qtbot)
    with qtbot.waitSignal(panel.valuesShown, timeout=30_000) as shown:
        panel.table.setCurrentIndex(_row_index(panel, "conv1.weight"))
    result = shown.args[0]
    assert result.max_abs == pytest.approx(0.125) and result.mean_abs == pytest.approx(0.125)
    assert "max |Δ| 0.125" in panel.values_label.text() and "allclose no" in panel.values_label.text()
    assert panel.histogram.isVisible() and sum(result.histogram) == 16 * 9

    with qtbot.waitSignal(panel.valuesShown, timeout=30_000) as shown:
        panel.table.setCurrentIndex(_row_index(panel, "fc1.weight"))
    result = shown.args[0]
    assert result.transposed and result.max_abs == pytest.approx(0.25)
    assert result.mean_abs == pytest.approx(0.25 / (800 * 128))
    assert "compared transposed" in panel.values_label.text()

    panel.table.setCurrentIndex(_row_index(panel, "conv2.bias"))
    assert "cannot be compared" in panel.values_label.text() and not panel.histogram.isVisible()


def test_the_document_template_is_compared_and_followed(window, document, template, qtbot):
    document.set_template(template)
    qtbot.waitUntil(lambda: not document.busy, timeout=30_000)
    panel = DiffPanel(document)
    qtbot.addWidget(panel)
    _compared(panel, qtbot)
    assert panel.other is template and panel.template_button.isEnabled() and not panel.values_box.isChecked()
    assert "target.safetensors (template)" in panel.against.text()


def test_compare_with_a_file_opens_it_in_a_worker_and_compares_values(window, document, qtbot, tmp_path):
    path = document.plan.export(tmp_path / "copy.bpk")
    panel = show_diff_dock(window, document)
    panel.compare_with_file(path)
    _compared(panel, qtbot)
    assert panel.values_box.isChecked()
    assert {row.status for row in panel.model.rows} == {"identical"}
    assert show_diff_dock(window, document) is panel  # one dock per document


def test_surgery_diff_shows_the_panel_for_the_current_tab(window, open_view, qtbot):
    open_view(SAMPLES / "sample_cnn.bpk")
    window.actions.diff.trigger()
    panel = window.diff_dock.widget()
    assert isinstance(panel, DiffPanel) and window.diff_dock.isVisible()
    assert panel.document is window.current_view().document
    qtbot.waitUntil(lambda: panel.document.plan is not None, timeout=30_000)
    panel.compare_with_file(SAMPLES / "sample_cnn.safetensors")  # the PyTorch layout of the same weights
    _compared(panel, qtbot)
    statuses = {row.name: row.status for row in panel.model.rows}
    assert statuses["fc1.weight"] == "transposed" and statuses["conv1.weight"] == "identical"


def test_a_common_prefix_is_offered_as_one_remap_rule_with_the_pairs_it_makes(window, document, qtbot, tmp_path):
    values = {"model." + t.name: np.asarray(t.read()) for t in document.plan.tensors}
    path = export(ArrayStore(values).entries, tmp_path / "prefixed.safetensors")
    panel = show_diff_dock(window, document)
    panel.compare_with_file(path)
    _compared(panel, qtbot)
    count = len(document.plan.tensors)
    assert panel.bulk_box.isVisible()
    (row,) = panel.bulk_box.rows()
    assert [c.remap for c in row.suggestion.changes] == [RemapRule("^", "model.")] and row.suggestion.fixes == count
    assert row.title.full_text == f"add the prefix model.: fixes {count} of {count} missing or mismatched"
    assert all(f"{t.source_name} → model.{t.name} [" in row.title.toolTip() for t in document.plan.tensors)
    row.apply_button.click()
    assert document.recipe.remaps[-1] == RemapRule("^", "model.")
    qtbot.waitUntil(lambda: panel.is_idle() and not document.busy and panel.model.rows
                    and all(row.status == "identical" for row in panel.model.rows), timeout=30_000)
    assert not panel.bulk_box.isVisible()


def test_the_summary_bar_and_the_worst_pairs_first(window, document, template, qtbot):
    panel = show_diff_dock(window, document)
    panel.compare_with(template, role="template", values=True)
    _compared(panel, qtbot)
    groups = dict((word, count) for word, count, _ in panel.summary_bar.groups)
    counts = panel.model.counts()
    assert groups["missing"] == counts["missing"] == 1 and groups["unused"] == counts["unused"]
    assert sum(groups.values()) == len(panel.model.rows)
    assert not panel.table.isColumnHidden(Column.DELTA)
    panel.table.sortByColumn(Column.DELTA, Qt.SortOrder.DescendingOrder)
    shown = [panel.proxy.index(r, 0).data(ROW_ROLE).max_abs for r in range(panel.proxy.rowCount())]
    compared = [delta for delta in shown if delta is not None]
    assert compared == sorted(compared, reverse=True) and shown[:len(compared)] == compared  # worst first
    assert panel.proxy.index(0, 0).data(ROW_ROLE).name == "conv1.weight"  # the 0.125 added to every value
    assert panel.proxy.index(0, Column.DELTA).data() == "0.125"
    assert panel.proxy.index(0, Column.DELTA).data(SHARE_ROLE) == 1.0


SAMPLE_MODEL_RS = """
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, conv::{Conv2d, Conv2dConfig}};
use burn::prelude::*;

#[derive(Module, Debug)]
pub struct SampleCnn<B: Backend> {
    conv1: Conv2d<B>,
    norm1: BatchNorm<B>,
    conv2: Conv2d<B>,
    norm2: BatchNorm<B>,
    fc1: Linear<B>,
    fc2: Linear<B>,
}

impl<B: Backend> SampleCnn<B> {
    pub fn new(device: &B::Device) -> Self {
        Self {
            conv1: Conv2dConfig::new([1, 16], [3, 3]).init(device),
            norm1: BatchNormConfig::new(16).init(device),
            conv2: Conv2dConfig::new([16, 32], [3, 3]).init(device),
            norm2: BatchNormConfig::new(32).init(device),
            fc1: LinearConfig::new(32 * 5 * 5, 128).init(device),
            fc2: LinearConfig::new(128, 10).init(device),
        }
    }
}
"""


def test_compare_with_a_models_rust_source_aligns_names_and_shapes_without_values(window, document, qtbot, tmp_path):
    source = tmp_path / "model.rs"
    source.write_text(SAMPLE_MODEL_RS)
    panel = show_diff_dock(window, document)
    panel.compare_with_file(source)
    _compared(panel, qtbot)
    statuses = {row.name: row.status for row in panel.model.rows}
    assert {name for name, status in statuses.items() if status not in ("applied", "renamed")} == {
        "norm1.num_batches_tracked", "norm2.num_batches_tracked"}  # Burn's BatchNorm keeps no counter
    assert len(statuses) == 18 and statuses["fc1.weight"] == "applied"  # [800, 128] once the adapter transposed it
    assert not panel.values_box.isEnabled()
    assert "model.rs" in panel.against.text()


def test_changed_pairs_show_their_relative_change_largest_first(window, document, qtbot, tmp_path):
    """A merged adapter or a fine-tune moves some tensors: their ||Δ||/||W|| shows as a percentage, the largest
    first; identical pairs leave the cell empty, and without any change the column is hidden."""
    values = {t.name: np.array(t.read()) for t in document.plan.tensors}
    values["conv1.weight"] = values["conv1.weight"] * np.float32(1.5)  # moved by half its norm
    values["fc2.weight"] = values["fc2.weight"] * np.float32(1.01)  # by a hundredth
    path = export(ArrayStore(values).entries, tmp_path / "moved.safetensors")
    panel = show_diff_dock(window, document)
    panel.compare_with_file(path)
    _compared(panel, qtbot)
    qtbot.waitUntil(lambda: any(r.relative_change is not None for r in panel.model.rows), timeout=30_000)
    assert not panel.table.isColumnHidden(Column.CHANGE)
    assert [r.name for r in _visible_rows(panel)[:2]] == ["conv1.weight", "fc2.weight"]
    assert _row_index(panel, "conv1.weight", Column.CHANGE).data() == "50%"
    assert _row_index(panel, "fc2.weight", Column.CHANGE).data() == "1%"
    assert _row_index(panel, "fc1.bias", Column.CHANGE).data() == ""
