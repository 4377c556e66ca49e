"""Each workbench panel, edited through its real widgets like a user would."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QComboBox, QMessageBox

from engine import ArrayStore, open_store
from engine.surgery import Filter, Recipe, RemapRule
from engine.surgery.printers import as_cli, as_rust
from gui.main_window import MainWindow
from gui.models.tree_model import MARK_ROLE, Column
from gui.visual import RED
from gui.workbench.marks import DROPPED, TRANSFORMED
from gui.workbench.panels.adapters import KIND
from gui.workbench.panels.filters import EXCLUDE, INCLUDE, WHERE
from gui.workbench.panels.preview import NAME, STATUS
from gui.workbench.panels.remap import MIME, check

from tests.helpers.gui_workbench import FIXTURES, SAMPLE_BPK, SAMPLE_PT, settle


def test_workbench_docks_are_hidden_until_surgery_starts(window: MainWindow, open_view, qtbot):
    open_view(SAMPLE_PT)
    assert not any(dock.isVisible() for dock in window.docks.values())
    window.actions.start_surgery.trigger()
    assert all(dock.isVisible() or window.tabifiedDockWidgets(dock) for dock in window.docks.values())
    assert window.docks["preview"].isVisible()


def test_typing_a_regex_shows_its_count_and_the_tree_greys_what_is_dropped(window: MainWindow, surgery, qtbot):
    document = surgery()
    panel = window.panels["filters"]
    panel.add_buttons[EXCLUDE].click()
    row = panel.rows[0]
    qtbot.keyClicks(row.edit, "running")
    settle(qtbot, document)
    assert document.recipe.filter == Filter(exclude=("running",))
    assert row.hits.text() == "4 tensors"
    assert document.undo_stack.count() == 1  # a whole typed regex is one undo step
    view = window.current_view()
    norm1 = next(i for i in range(view.model.rowCount()) if view.model.index(i, 0).data() == "norm1")
    parent = view.model.index(norm1, 0)
    marks = {view.model.index(r, 0, parent).data(MARK_ROLE).state if view.model.index(r, 0, parent).data(MARK_ROLE)
             else None for r in range(view.model.rowCount(parent))}
    assert DROPPED in marks
    dropped = next(view.model.index(r, 0, parent) for r in range(view.model.rowCount(parent))
                   if "running_mean" in view.model.index(r, 0, parent).data())
    assert dropped.siblingAtColumn(Column.RECIPE).data() == "dropped"
    assert dropped.data(Qt.ItemDataRole.FontRole).strikeOut()


def test_an_invalid_regex_is_marked_in_place_and_the_app_stays_alive(window: MainWindow, surgery, qtbot):
    document = surgery()
    panel = window.panels["filters"]
    panel.add_buttons[INCLUDE].click()
    row = panel.rows[0]
    qtbot.keyClicks(row.edit, "conv(")
    settle(qtbot, document)
    assert row.error is not None and "invalid regex" in row.error
    assert row.hits.text() == "⚠ invalid" and RED.name() in row.edit.styleSheet()
    assert panel.message.isVisible() and "invalid regex" in panel.message.text()
    assert document.recipe.filter.is_empty and document.error is None  # never planned
    qtbot.keyClicks(row.edit, ")")
    settle(qtbot, document)
    assert row.error is None and document.recipe.filter.include == ("conv()",)
    assert row.hits.text() == "4 tensors"


def test_a_predicate_row_filters_by_ndim(window: MainWindow, surgery, qtbot):
    document = surgery()
    panel = window.panels["filters"]
    panel.add_buttons[WHERE].click()
    row = panel.rows[0]
    row.field.setCurrentText("ndim")
    row.op.setCurrentText("==")
    qtbot.keyClicks(row.edit, "4")
    settle(qtbot, document)
    assert row.hits.text() == "2 tensors"
    assert sorted(document.plan.names) == ["conv1.weight", "conv2.weight"]


def test_adding_a_remap_rule_shows_hits_and_live_examples(window: MainWindow, surgery, qtbot):
    document = surgery()
    panel = window.panels["remap"]
    qtbot.keyClicks(panel.pattern, r"^fc(\d)")
    qtbot.keyClicks(panel.replacement, r"head.linear$1")
    assert "fc1.weight  →  head.linear1.weight" in [panel.examples.item(i).text() for i in range(panel.examples.count())]
    assert "would rename 4 tensors" in panel.examples_title.text()
    panel.add_button.click()
    settle(qtbot, document)
    assert document.recipe.remaps == (RemapRule(r"^fc(\d)", "head.linear$1"),)
    assert panel.model.index(0, 2).data() == "4"
    assert "the rules rename 4 tensors" in panel.examples_title.text()
    assert "head.linear2.bias" in document.plan.names


def test_a_broken_remap_rule_stays_in_the_form_marked(window: MainWindow, surgery, qtbot):
    document = surgery()
    panel = window.panels["remap"]
    qtbot.keyClicks(panel.pattern, "fc")
    qtbot.keyClicks(panel.replacement, "x$2")
    assert panel.message.isVisible() and "group" in panel.message.text()
    assert not panel.add_typed()
    assert document.recipe.remaps == ()


def test_remap_rules_reorder_with_buttons_and_drag(window: MainWindow, surgery, qtbot):
    document = surgery()
    panel = window.panels["remap"]
    document.add_remap("a", "b")
    document.add_remap("c", "d")
    document.add_remap("e", "f")
    panel.table.selectRow(0)
    panel.down.click()
    assert [r.pattern for r in document.recipe.remaps] == ["c", "a", "e"]
    data = panel.model.mimeData([panel.model.index(2, 0)])
    assert data.hasFormat(MIME)
    panel.model.dropMimeData(data, Qt.DropAction.MoveAction, 0, 0, panel.model.index(-1, -1))
    assert [r.pattern for r in document.recipe.remaps] == ["e", "c", "a"]
    document.undo_stack.undo()
    assert [r.pattern for r in document.recipe.remaps] == ["c", "a", "e"]


def test_pytorch_to_burn_marks_transposed_and_renamed_in_the_preview(window: MainWindow, surgery, qtbot):
    document = surgery()
    window.panels["adapters"].checks["pytorch-to-burn"].click()
    settle(qtbot, document)
    assert document.recipe.adapters == ("pytorch-to-burn",)
    preview = window.panels["preview"]
    rows = {preview.model.index(r, NAME).data(): preview.model.index(r, STATUS).data()
            for r in range(preview.model.rowCount())}
    assert rows["fc1.weight"] == "◆ transposed" and rows["norm1.gamma"] == "◆ renamed"
    assert rows["conv1.weight"] == "✓ unchanged"
    assert preview.counts.text().startswith("12 unchanged · 6 renamed or transformed · 0 dropped · 0 conflicts")
    view = window.current_view()
    fc1 = next(view.model.index(i, 0) for i in range(view.model.rowCount()) if view.model.index(i, 0).data() == "fc1")
    weight = next(view.model.index(r, 0, fc1) for r in range(view.model.rowCount(fc1))
                  if view.model.index(r, 0, fc1).data().startswith("weight"))
    assert weight.data(MARK_ROLE).state == TRANSFORMED and weight.data() == "weight"  # same name, transposed
    assert weight.siblingAtColumn(Column.RECIPE).data() == "transposed"


def test_overriding_a_module_type_with_its_combo_changes_the_plan(window: MainWindow, surgery, qtbot):
    document = surgery()
    panel = window.panels["adapters"]
    panel.checks["pytorch-to-burn"].click()
    settle(qtbot, document)
    row = next(r for r in range(panel.modules.rowCount()) if panel.modules.index(r, 0).data() == "fc1")
    index = panel.modules.index(row, KIND)
    assert index.data() == "Linear"
    panel.table.edit(index)
    combo = panel.table.findChild(QComboBox, "kindEditor")
    assert combo is not None
    combo.setCurrentText("Embedding")
    combo.activated.emit(combo.currentIndex())
    settle(qtbot, document)
    assert document.recipe.module_overrides == {"fc1": "Embedding"}
    fc1 = next(t for t in document.plan.tensors if t.name == "fc1.weight")
    assert fc1.shape == (128, 800) and not fc1.ops  # an Embedding weight is not transposed
    assert panel.modules.index(row, KIND).data() == "Embedding ✎"


def test_top_level_key_and_cast_through_their_combos(window: MainWindow, surgery, qtbot):
    document = surgery(FIXTURES / "config" / "weights_with_config.pt")
    panel = window.panels["adapters"]
    assert [panel.key.itemText(i) for i in range(panel.key.count())] == ["(whole file)", "my_config", "my_model"]
    panel.key.setCurrentText("my_model")
    panel.key.activated.emit(panel.key.currentIndex())
    panel.cast.setCurrentText("F16")
    panel.cast.activated.emit(panel.cast.currentIndex())
    settle(qtbot, document)
    assert document.recipe.top_level_key == "my_model"
    assert all(not n.startswith("my_model.") for n in document.plan.names)
    assert {str(t.dtype) for t in document.plan.tensors} == {"F16"}


def test_a_second_source_overrides_and_reorders(window: MainWindow, surgery, qtbot, tmp_path: Path):
    from engine import export
    document = surgery(SAMPLE_PT)
    other = tmp_path / "other.safetensors"
    export(ArrayStore({"fc2.bias": np.ones(10, np.float32)}).entries, other)
    panel = window.panels["sources"]
    panel.add_file(other)
    qtbot.waitUntil(lambda: len(document.stores) == 2, timeout=30_000)
    settle(qtbot, document)
    assert panel.list.count() == 2 and "other.safetensors" in panel.list.item(1).text()
    assert [o.name for o in document.plan.overrides] == ["fc2.bias"]
    panel.list.setCurrentRow(1)
    panel.up.click()
    settle(qtbot, document)
    assert Path(document.stores[0].path).name == "other.safetensors"
    assert document.plan.overrides[0].kept.startswith(str(SAMPLE_PT))
    panel.list.setCurrentRow(0)
    qtbot.keyClicks(panel.exclude, "bias")
    settle(qtbot, document)
    assert document.recipe.sources[0].filter == Filter(exclude=("bias",))
    assert not document.plan.overrides


def test_undo_redo_from_the_edit_menu_restore_the_recipe(window: MainWindow, surgery, qtbot):
    document = surgery()
    window.panels["adapters"].checks["pytorch-to-burn"].click()
    document.add_remap("fc", "head")
    assert window.actions.undo.isEnabled()
    window.actions.undo.trigger()
    assert document.recipe == Recipe(sources=document.recipe.sources, adapters=("pytorch-to-burn",))
    window.actions.undo.trigger()
    assert not window.panels["adapters"].checks["pytorch-to-burn"].isChecked()
    window.actions.redo.trigger()
    window.actions.redo.trigger()
    assert document.recipe.remaps == (RemapRule("fc", "head"),)
    assert window.panels["remap"].model.rowCount() == 1


def test_save_and_open_recipe_round_trip(window: MainWindow, surgery, qtbot, tmp_path: Path, monkeypatch):
    document = surgery()
    window.panels["adapters"].checks["pytorch-to-burn"].click()
    document.add_remap("^fc", "head")
    assert window.isWindowModified()
    target = tmp_path / "mine.recipe.json"
    monkeypatch.setattr("gui.main_window.choose_paths", lambda *a, **k: [str(target)])
    window.actions.save_recipe.trigger()
    written = Recipe.load(target)
    assert (written.remaps, written.adapters) == ((RemapRule("^fc", "head"),), ("pytorch-to-burn",))
    assert not document.is_modified and not window.isWindowModified()
    saved = document.recipe
    document.add_remap("conv", "c")
    monkeypatch.setattr(window, "ask_save", lambda view: QMessageBox.StandardButton.Discard)
    window.open_recipe(target)
    qtbot.waitUntil(lambda: document.recipe == saved and not document.is_modified, timeout=30_000)
    assert Recipe.load(target).remaps == saved.remaps


def test_closing_with_unsaved_changes_asks_and_cancel_keeps_the_window(window: MainWindow, surgery, qtbot, monkeypatch):
    document = surgery()
    document.add_remap("fc", "head")
    asked = []
    monkeypatch.setattr(window, "ask_save", lambda view: asked.append(view) or QMessageBox.StandardButton.Cancel)
    window.close()
    assert asked and window.isVisible()
    window.close_current()
    assert window.tabs.count() == 1
    monkeypatch.setattr(window, "ask_save", lambda view: QMessageBox.StandardButton.Discard)
    window.close_current()
    assert window.tabs.count() == 0


def test_copy_as_puts_the_engine_printers_text_on_the_clipboard(window: MainWindow, surgery, qtbot):
    document = surgery()
    document.add_remap("fc", "head")
    window.actions.copy_cli.trigger()
    assert QGuiApplication.clipboard().text() == as_cli(document.recipe)
    assert QGuiApplication.clipboard().text() == f"store-studio convert {SAMPLE_PT} OUT --remap fc head"
    window.actions.copy_rust.trigger()
    assert QGuiApplication.clipboard().text() == as_rust(document.recipe)
    assert QGuiApplication.clipboard().text() == ("// burn-store 0.22.0-pre.2 (Burn 0.22)\n"
                                                  "use burn_store::{ModuleSnapshot, PytorchStore};\n"
                                                  "// differs: PytorchStore always applies PyTorchToBurnAdapter "
                                                  "(transposes Linear weights, renames norms); this recipe does not\n"
                                                  f'let mut store = PytorchStore::from_file(r"{SAMPLE_PT}")\n'
                                                  '    .with_key_remapping(r"fc", r"head")\n'
                                                  '    .map_indices_contiguous(false);\n'
                                                  'let result = model.load_from(&mut store)?;')


def test_copy_as_rust_spells_out_the_renumbering_a_burnpack_store_cannot_do(window: MainWindow, surgery, qtbot):
    document = surgery(SAMPLE_BPK)
    document.push(document.recipe.with_changes(remaps=(RemapRule(r"^fc(\d)", "fc.$1"),),
                                               adapters=("contiguous-indices",)), "renumber")
    settle(qtbot, document)
    window.actions.copy_rust.trigger()
    text = QGuiApplication.clipboard().text()
    assert "map_indices_contiguous" not in text
    assert '.with_remap_pattern(r"^fc\\.1\\.weight$", r"fc.0.weight")' in text  # fc.1/fc.2 become fc.0/fc.1
    assert '.with_remap_pattern(r"^fc\\.2\\.bias$", r"fc.1.bias")' in text


def test_f5_reruns_the_preview(window: MainWindow, surgery, qtbot):
    document = surgery(SAMPLE_BPK)
    plans = []
    document.planReady.connect(plans.append)
    assert window.actions.rerun.shortcut().toString() == "F5"
    window.actions.rerun.trigger()
    settle(qtbot, document)
    assert len(plans) == 1


def test_export_and_diff_actions_run_the_export_and_show_the_diff_dock(window: MainWindow, surgery, qtbot, monkeypatch):
    from gui.workbench.diff_panel import DiffPanel
    document = surgery()
    calls = []
    monkeypatch.setattr("gui.main_window.run_export", lambda w, d: calls.append((w, d)))
    window.actions.export.trigger()
    assert calls == [(window, document)]
    window.actions.diff.trigger()
    assert isinstance(window.diff_dock.widget(), DiffPanel) and window.diff_dock.isVisible()
    QApplication.processEvents()


def test_a_predicate_group_from_a_recipe_file_survives_other_filter_edits(window: MainWindow, surgery, qtbot):
    from engine.surgery import Predicate, PredicateGroup
    document = surgery()
    group = PredicateGroup("or", (Predicate("ndim", "==", 4), Predicate("name", "contains", "fc1")))
    document.push(document.recipe.with_changes(filter=Filter(where=(group,))), "Load")
    panel = window.panels["filters"]
    panel.add_buttons[EXCLUDE].click()
    qtbot.keyClicks(panel.rows[-1].edit, "bias")
    settle(qtbot, document)
    assert document.recipe.filter == Filter(where=(group,), exclude=("bias",))
    assert sorted(document.plan.names) == ["conv1.weight", "conv2.weight", "fc1.weight"]


def test_editing_a_remap_rule_in_its_cell_replans_and_a_broken_edit_is_refused(window: MainWindow, surgery, qtbot):
    from gui.workbench.panels.remap import HITS, PATTERN, REPLACEMENT
    document = surgery()
    panel = window.panels["remap"]
    document.add_remap("^fc1", "head1")
    settle(qtbot, document)
    assert not panel.model.flags(panel.model.index(0, HITS)) & Qt.ItemFlag.ItemIsEditable
    assert panel.model.setData(panel.model.index(0, REPLACEMENT), "out1")
    settle(qtbot, document)
    assert document.recipe.remaps == (RemapRule("^fc1", "out1"),)
    assert {"out1.weight", "out1.bias"} <= set(document.plan.names) and "head1.weight" not in document.plan.names
    with open_store(SAMPLE_PT) as source:
        planned = next(t for t in document.plan.tensors if t.name == "out1.weight")
        assert planned.read().tobytes() == source.read("fc1.weight").tobytes()

    assert not panel.model.setData(panel.model.index(0, PATTERN), "fc(")
    assert panel.message.isVisibleTo(panel) and "rule 1" in panel.message.text()
    assert document.recipe.remaps == (RemapRule("^fc1", "out1"),)
    document.undo_stack.undo()
    assert document.recipe.remaps == (RemapRule("^fc1", "head1"),)
    assert panel.model.index(0, REPLACEMENT).data() == "head1"


def test_removing_the_selected_remap_rule_keeps_the_others_and_is_undoable(window: MainWindow, surgery, qtbot):
    document = surgery()
    panel = window.panels["remap"]
    document.add_remap("^fc1", "head1")
    document.add_remap("^conv1", "stem")
    settle(qtbot, document)
    panel.table.selectRow(0)
    panel.remove.click()
    settle(qtbot, document)
    assert document.recipe.remaps == (RemapRule("^conv1", "stem"),)
    assert "fc1.weight" in document.plan.names and "stem.weight" in document.plan.names
    assert panel.model.rowCount() == 1 and panel.model.index(0, 0).data() == "^conv1"
    document.undo_stack.undo()
    assert [r.pattern for r in document.recipe.remaps] == ["^fc1", "^conv1"]


def test_a_source_filter_is_checked_as_typed_and_the_source_removed(window: MainWindow, surgery, qtbot, tmp_path: Path):
    from engine import export
    document = surgery(SAMPLE_PT)
    other = tmp_path / "other.safetensors"
    export(ArrayStore({"fc2.bias": np.full(10, 7, np.float32), "extra.weight": np.ones(3, np.float32)}).entries, other)
    panel = window.panels["sources"]
    panel.add_file(other)
    qtbot.waitUntil(lambda: len(document.stores) == 2, timeout=30_000)
    settle(qtbot, document)
    panel.list.setCurrentRow(0)
    assert not panel.remove.isEnabled()  # the tab's own file stays
    panel.list.setCurrentRow(1)
    assert panel.remove.isEnabled()

    qtbot.keyClicks(panel.include, "fc(")
    assert panel.message.isVisibleTo(panel) and "source 2 include" in panel.message.text()
    assert document.recipe.sources[1].filter == Filter(include=("fc",))  # the last regex that compiled
    qtbot.keyClick(panel.include, Qt.Key.Key_Backspace)
    qtbot.keyClicks(panel.include, r"2\.bias$")
    settle(qtbot, document)
    assert document.recipe.sources[1].filter == Filter(include=(r"fc2\.bias$",))
    assert not panel.message.isVisibleTo(panel) and panel.list.item(1).text().endswith("·  filtered")
    assert "extra.weight" not in document.plan.names
    bias = next(t for t in document.plan.tensors if t.name == "fc2.bias")
    assert bias.read().tolist() == [7.0] * 10  # the later source still overrides

    panel.list.setCurrentRow(1)
    panel.remove.click()
    settle(qtbot, document)
    assert len(document.stores) == 1 and len(document.recipe.sources) == 1 and panel.list.count() == 1
    with open_store(SAMPLE_PT) as source:
        bias = next(t for t in document.plan.tensors if t.name == "fc2.bias")
        assert bias.read().tobytes() == source.read("fc2.bias").tobytes()


def test_a_source_that_cannot_be_opened_says_why_and_changes_nothing(window: MainWindow, surgery, qtbot,
                                                                     tmp_path: Path):
    from gui.dialogs import ERROR_DIALOG
    document = surgery(SAMPLE_PT)
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{nope}  ")
    window.panels["sources"].add_file(broken)

    def shown() -> list[QMessageBox]:  # this window's own: other tests' windows may linger until deleted
        return [box for box in window.findChildren(QMessageBox, ERROR_DIALOG) if box.isVisible()]

    qtbot.waitUntil(lambda: bool(shown()), timeout=30_000)
    [box] = shown()
    assert box.text() == "Store Studio could not add broken.safetensors."
    assert box.informativeText().startswith("Broken.safetensors: ")
    assert len(document.stores) == 1 and not document.is_modified
    box.close()


def test_a_remap_error_quotes_the_pattern_as_typed():
    message = check(RemapRule(r"^fc(\d", r"head.\1"), 3)
    assert message is not None and message.startswith(r"remap rule 3 ('^fc(\d' -> 'head.\1'): invalid regex '^fc(\d'")
    assert "\\\\" not in message  # not Python's repr, which doubles every backslash
