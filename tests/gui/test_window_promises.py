"""README "The window" promises, each with the test that fails when it breaks. Real widgets, offscreen, through
pytest-qt.

``here::`` is this module; the others are paths under tests/gui/. "(checked)" marks a pair verified by breaking the
product line in a worktree and watching the test fail.

The tree:
- each file in a tab -> test_main_window.py::test_several_files_open_as_tabs_and_reopening_switches_tab; with no file,
  the bundled sample -> test_launch.py::test_screenshot_renders_the_window_offscreen_at_1400x900
- tensors grouped by dotted names in the file's order -> test_tree_view.py::test_a_checkpoint_opens_in_the_order_the_model_saved_its_tensors;
  "Name order" sorts naturally (`layer.2` before `layer.10`, `block2` before `block10`) ->
  here::test_name_order_sorts_digit_runs_by_value (checked: no existing test failed with mixed names sorted as text);
  header clicks sort largest first, a third click back ->
  test_tree_view.py::test_clicking_a_header_sorts_largest_first_then_smallest_then_file_order
- a chain of single-child groups is one row -> test_tree_view.py::test_a_t5_like_file_shows_its_single_child_chain_as_one_row;
  "Flat list" -> test_tree_view.py::test_the_flat_list_shows_every_full_name_once; over 64 tensors opens its first
  levels -> test_tree_view.py::test_a_large_file_opens_showing_its_first_levels (checked); from 5,000 tensors they
  open a moment after the tree shows -> test_late_first_levels.py (whole module)
- counts tell parameters from buffers -> test_main_window.py::test_groups_show_totals_with_right_aligned_numbers,
  test_main_window.py::test_selecting_a_group_shows_its_totals_and_module (checked), engine/test_tree.py::test_buffers_are_counted_apart_from_parameters
  (running stats, num_batches_tracked and any non-float tensor are buffers)
- search filters as typed, regex toggle, count, a regex-looking text searched as text says so, matches compacted ->
  test_main_window.py::test_search_filters_live_and_counts_matches (checked), test_main_window.py::test_regex_search_and_an_invalid_regex_is_marked_not_fatal,
  test_tree_view.py::test_search_results_are_compacted_and_a_regex_searched_as_text_says_so (checked),
  test_background_filter.py (whole module); the `.*` toggle filled blue when on ->
  test_window_gap_promises.py::test_the_regex_toggle_is_filled_blue_only_when_on (checked)

A selected tensor:
- details once each, statistics that fit its dtype, bf16/f16 digits -> panels/test_selection_panels.py (the details tests)
- histogram axis, log-count toggle, a constant's value -> panels/test_selection_panels.py::test_the_log_count_toggle_switches_the_histogram_scale,
  panels/test_selection_panels.py::test_a_scalar_histogram_shows_its_value_not_an_invented_range;
  the axis's ticks and zero line, and what the log-count toggle draws -> test_window_gap_promises.py::test_the_histogram_axis_has_tick_marks_at_round_values (checked),
  test_window_gap_promises.py::test_the_histogram_draws_a_zero_line_only_when_its_range_spans_zero (checked),
  test_window_gap_promises.py::test_the_log_count_toggle_raises_the_small_bars (checked)
- values table with NaN/Inf highlighted -> panels/test_selection_panels.py::test_nan_and_inf_cells_are_highlighted_in_the_table;
  a heat map that fills its area, a block of colour per value, its scale bar -> test_values_panel.py (whole module)
- heat map: hover reads a cell -> panels/test_selection_panels.py::test_hovering_the_heat_map_shows_the_cells_index_and_value;
  the wheel zooms, dragging pans -> here::test_the_heat_map_zooms_with_the_wheel_and_pans_by_dragging (checked);
  downsampling keeps each block's extreme and NaN -> panels/test_selection_panels.py::test_downsampling_keeps_each_blocks_extreme_and_its_nan
- computed in the background -> test_main_window.py::test_statistics_that_arrive_after_the_selection_changed_are_ignored;
  statistics read a stored tensor a chunk at a time, never a copy of it whole ->
  engine/test_stats.py::test_a_stored_tensor_is_summarized_without_a_copy_of_it_whole,
  engine/test_stats.py::test_every_reader_streams_the_same_statistics_as_its_values_read_whole
- a quantized tensor names its scheme; statistics of dequantized values; "Stored integers" ->
  panels/test_quantized_panels.py (whole module)

The File tab, opening, shortcuts:
- format, version, Burn releases, sizes, metadata, values and Copy as JSON ->
  test_main_window.py::test_file_panel_shows_format_metadata_and_totals, test_main_window.py::test_pytorch_values_show_as_a_tree_and_copy_as_json,
  panels/test_quantized_panels.py::test_the_file_panel_says_which_burn_releases_load_the_file,
  panels/test_file_info_pytorch_kinds.py (whole module), panels/test_file_info_burn_record.py (whole module)
- files open off the UI thread, by drop, Open Recent; a file that cannot be read gives a dialog with details ->
  test_main_window.py::test_drop_opens_files (checked), test_main_window.py::test_a_broken_file_shows_an_error_dialog_and_the_window_lives_on,
  test_survives_hostile_files.py (whole module)
- the toolbar has Open, Export…, Diff…, Surgery; shortcuts Ctrl+O, Ctrl+W, Ctrl+F, Ctrl+Shift+C, Ctrl+1, Ctrl+2 ->
  here::test_the_toolbar_and_the_documented_shortcuts (checked), test_main_window.py::test_ctrl_f_focuses_the_search_box,
  test_main_window.py::test_copy_name_puts_the_full_path_on_the_clipboard
- size, splitters and recent files are remembered -> test_main_window.py::test_recent_files_and_geometry_are_remembered

Fitting and looks:
- every state fits 1024x640, the Name column keeps 40%, dtype and shape fold into it, no sideways scroll, five
  value rows, six preview/diff rows, a cut Operations cell's tooltip, five value rows with the diff in front too
  (the details fold away, and come back once the height allows) -> test_window_fit_states.py (whole module),
  test_window_fits.py (whole module),
  test_window_fit_states.py::test_the_details_fold_away_only_for_want_of_height_and_come_back
- the DType column is as wide as the longest dtype name up to 11 characters, its tooltip the whole dtype and a
  quantized tensor's scheme -> test_tree_dtype_column.py (whole module)
- long names elide in the middle, the whole name in the tooltip -> test_window_gap_promises.py::test_a_long_name_elides_in_the_middle_with_the_whole_name_in_its_tooltip (checked),
  test_window_fits.py::test_a_long_name_elides_in_the_details_and_the_layout_does_not_jump
- `--theme dark` reads at 4.5:1 -> test_visual.py (whole module), test_launch.py::test_dark_theme_screenshot_paints_a_dark_window
- `--screenshot` renders offscreen at exactly the size asked, needs no display; a file that cannot be opened is its
  error dialog and exit 1 -> test_launch.py::test_screenshot_is_exactly_the_requested_size_in_every_state,
  test_launch.py::test_screenshot_without_a_platform_set_picks_offscreen_itself,
  test_launch.py::test_screenshot_of_a_broken_file_shows_the_error_state_and_fails; `--select` ->
  test_launch.py::test_screenshot_names_a_missing_tensor; `--recipe`, `--dock`, `--diff` ->
  workbench/test_launch_recipe.py (whole module)
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QModelIndex, QPoint, QPointF, Qt
from PySide6.QtGui import QKeySequence, QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication, QComboBox, QToolBar

from engine import ArrayStore, export
from gui.main_window import MainWindow


def test_the_toolbar_and_the_documented_shortcuts(window: MainWindow):
    (toolbar,) = window.findChildren(QToolBar)
    assert [a.iconText() for a in toolbar.actions() if a.iconText() and not a.isSeparator()][:4] == \
        ["Open", "Export…", "Diff…", "Surgery"]
    bound = {key: action for action in window.findChildren(type(window.actions.open))
             for key in (s.toString() for s in action.shortcuts()) if key}
    documented = {"Ctrl+O": window.actions.open, "Ctrl+W": window.actions.close_tab, "Ctrl+F": window.actions.find,
                  "Ctrl+Shift+C": window.actions.copy_path, "Ctrl+1": window.actions.show_selection,
                  "Ctrl+2": window.actions.show_file, "Ctrl+R": window.actions.start_surgery,
                  "Ctrl+Z": window.actions.undo, "Ctrl+Shift+Z": window.actions.redo, "Ctrl+S": window.actions.save_recipe,
                  "Ctrl+Shift+O": window.actions.open_recipe, "Ctrl+E": window.actions.export,
                  "Ctrl+D": window.actions.diff, "F5": window.actions.rerun, "Ctrl+Shift+L": window.actions.open_url}
    assert {key: bound.get(key) for key in documented} == documented
    assert all(QKeySequence(key).toString() == key for key in documented)


def _event(kind: QEvent.Type, at: QPointF, button: Qt.MouseButton) -> QMouseEvent:
    held = Qt.MouseButton.LeftButton if kind == QEvent.Type.MouseMove else button
    return QMouseEvent(kind, at, at, button, held, Qt.KeyboardModifier.NoModifier)


def test_the_heat_map_zooms_with_the_wheel_and_pans_by_dragging(heat_map):
    array = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    heat = heat_map(array)
    area = heat.image_area()
    centre = area.center()
    corner = QPointF(area.left() + 2, area.top() + 2)
    assert heat.cell_at(corner) == (0, 0)
    wheel = QWheelEvent(centre, heat.mapToGlobal(centre), QPoint(), QPoint(0, 120 * 3), Qt.MouseButton.NoButton,
                        Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(heat, wheel)
    zoomed = heat.cell_at(corner)
    assert zoomed[0] > 0 and zoomed[1] > 0  # the corner now shows a cell nearer the centre
    assert heat.cell_at(centre) == (32, 32)  # zoomed around the pointer
    QApplication.sendEvent(heat, _event(QEvent.Type.MouseButtonPress, centre, Qt.MouseButton.LeftButton))
    dragged_to = QPointF(centre.x() + area.width() / 8, centre.y() + area.height() / 8)
    QApplication.sendEvent(heat, _event(QEvent.Type.MouseMove, dragged_to, Qt.MouseButton.NoButton))
    QApplication.sendEvent(heat, _event(QEvent.Type.MouseButtonRelease, dragged_to, Qt.MouseButton.LeftButton))
    assert heat.cell_at(dragged_to) == (32, 32)  # the cell under the pointer moved with it
    assert heat.cell_at(corner)[0] < zoomed[0] and heat.cell_at(corner)[1] < zoomed[1]


def _children(model, parent) -> list[str]:
    return [model.index(r, 0, parent).data() for r in range(model.rowCount(parent))]


def test_name_order_sorts_digit_runs_by_value(window: MainWindow, open_view, tmp_path):
    names = ["layer.10.w", "layer.2.w", "layer.1.w", "block10.w", "Block9.w", "block2.w"]
    view = open_view(export(ArrayStore({n: np.ones(2, np.float32) for n in names}).entries, tmp_path / "m.bpk"))
    order = view.findChild(QComboBox, "treeOrder")
    order.setCurrentText("Name order")
    top = _children(view.model, QModelIndex())
    assert top == ["block2", "Block9", "block10", "layer"]
    layer = view.model.index(top.index("layer"), 0, QModelIndex())
    assert _children(view.model, layer) == ["1", "2", "10"]
