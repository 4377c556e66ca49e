"""README "The workbench" promises, each with the test that fails when it breaks. Real widgets in the real window,
offscreen, through pytest-qt.

``here::`` is this module; the others are paths under tests/gui/ (``wb/`` is workbench/). "(checked)" marks a pair
verified by breaking the product line in a worktree and watching the test fail.

- Surgery › Start Surgery opens the workbench; everything planned live and undoable ->
  wb/test_panels.py::test_workbench_docks_are_hidden_until_surgery_starts, wb/test_panels.py::test_undo_redo_from_the_edit_menu_restore_the_recipe,
  wb/test_document.py::test_push_is_undoable_and_redoable, wb/test_document.py::test_rapid_edits_plan_once_for_the_last_recipe;
  Ctrl+R -> test_window_promises.py::test_the_toolbar_and_the_documented_shortcuts
- Filters: regexes, exact names, predicates, each with its count and names ->
  wb/test_panels.py::test_typing_a_regex_shows_its_count_and_the_tree_greys_what_is_dropped, wb/test_panels.py::test_a_predicate_row_filters_by_ndim;
  they match the names after remap and adapters -> wb/test_filters_names.py::test_a_filter_rule_matches_the_remapped_name_and_shows_it;
  a regex that does not compile is marked and left out -> wb/test_panels.py::test_an_invalid_regex_is_marked_in_place_and_the_app_stays_alive;
  the names past those listed under the rules are in the count's tooltip -> wb/test_filter_count_tooltip.py::test_names_past_the_listed_ones_are_in_the_counts_tooltip (checked)
- Remap: ordered rules, drag or ↑/↓, hit counts, live examples -> wb/test_panels.py::test_adding_a_remap_rule_shows_hits_and_live_examples,
  wb/test_panels.py::test_remap_rules_reorder_with_buttons_and_drag, wb/test_panels.py::test_editing_a_remap_rule_in_its_cell_replans_and_a_broken_edit_is_refused;
  `$1` or `\1` in replacements -> engine/surgery/test_plan.py::test_remap_accepts_rust_and_python_replacements_and_counts_hits
- Adapters: PyTorch → Burn and the rest, top-level key, cast for all or some module types ->
  wb/test_panels.py::test_pytorch_to_burn_marks_transposed_and_renamed_in_the_preview, wb/test_panels.py::test_top_level_key_and_cast_through_their_combos;
  Burn → PyTorch, contiguous indices, skip enum variants and fuse weight norm each do what they say ->
  wb/test_adapter_boxes.py (whole module; checked);
  inferred types with reasons, `? guessed`, a double-click override settles ->
  wb/test_panels.py::test_overriding_a_module_type_with_its_combo_changes_the_plan,
  wb/test_preview_guesses.py::test_guessed_tensors_are_listed_and_settling_them_in_adapters_clears_them (PRelu and
  EnumVariant offered; choosing the guessed kind itself settles it; a double-click on a guessed preview row opens
  its module's type in Adapters)
- Sources: a later file replaces the same names, each with its own key and filter ->
  wb/test_panels.py::test_a_second_source_overrides_and_reorders, wb/test_source_key.py (whole module); a source's own
  key wins over the recipe's -> here::test_a_sources_own_key_wins_over_the_recipes (checked: no existing test failed
  with the recipe's key winning),
  wb/test_panels.py::test_a_source_filter_is_checked_as_typed_and_the_source_removed; the replaced tensors marked in
  the earlier source's tree -> wb/test_replaced_marks.py (whole module)
- Preview: every tensor with its operations and the count line, F5, marks, the filter box, guesses, a warning for
  recipe parts that find nothing -> wb/test_panels.py::test_f5_reruns_the_preview (checked), wb/test_preview_filter.py (whole module),
  wb/test_fused_preview.py (whole module), wb/test_preview_guesses.py (whole module),
  wb/test_recipe_fit.py::test_applying_a_recipe_that_does_not_fit_warns_in_status_bar_and_preview; amber transformed with
  its word, grey struck-through dropped with its reason, red conflicts, the tree marking its own tensors alike ->
  wb/test_preview_colours.py (whole module; checked)
- Set Template… (and the diff view's Template button): the Template column, missing rows, tree marks, undo, Clear
  Template -> wb/test_template_picker.py (whole module; checked for Clear Template)
- Save/Open Recipe, the same JSON `convert --recipe` replays; closing with unsaved edits asks ->
  wb/test_panels.py::test_save_and_open_recipe_round_trip, wb/test_panels.py::test_closing_with_unsaved_changes_asks_and_cancel_keeps_the_window,
  wb/test_save_prompt.py (whole module)
- Copy as Command Line / Rust -> wb/test_panels.py::test_copy_as_puts_the_engine_printers_text_on_the_clipboard,
  wb/test_panels.py::test_copy_as_rust_spells_out_the_renumbering_a_burnpack_store_cannot_do
- Export: Burn version, a tensor that choice cannot hold named before writing, Dequantize ->
  panels/test_quantized_panels.py::test_the_export_dialog_writes_for_the_burn_version_chosen,
  panels/test_quantized_panels.py::test_the_export_dialog_warns_before_writing_what_the_choice_cannot_hold; metadata
  prefilled -> wb/test_export_dialog.py::test_exports_the_plan_to_burnpack_with_edited_metadata (checked for the digest),
  wb/test_export_validation.py::test_the_sources_metadata_is_offered_for_export_unless_the_recipe_clears_it; a SafeTensors
  source's `format` kept as `format` in SafeTensors and `safetensors.format` in a Burnpack, derived again when the
  format changes with the user's edits kept -> wb/test_export_metadata.py::test_the_dialog_shows_what_convert_writes_for_the_chosen_format,
  wb/test_export_metadata.py::test_changing_the_format_derives_the_metadata_again_and_keeps_the_users_edits; bytes,
  speed and time left while it streams -> wb/test_export_dialog.py::test_cancel_during_a_large_export_leaves_the_old_file_and_no_partial; asks before
  replacing -> wb/test_export_dialog.py::test_no_to_the_overwrite_question_leaves_the_file_untouched (checked); Cancel leaves the
  destination -> wb/test_export_dialog.py::test_cancel_during_a_large_export_leaves_the_old_file_and_no_partial; template
  validation and "Export Anyway" -> wb/test_export_validation.py (whole module); Burnpack scalars kept ->
  wb/test_export_validation.py::test_burnpack_scalars_survive_a_gui_export_burnpack_to_burnpack (checked); "Diff Result Against
  Source" all identical, the recipe's own renames noted -> wb/test_export_dialog.py::test_diff_result_against_source_shows_every_tensor_identical
- Diff view: statuses with word, icon and colour, filters, summary bar, dropped rows ->
  wb/test_diff_panel.py::test_each_row_shows_its_status_as_word_icon_and_colour, wb/test_diff_panel.py::test_status_checkboxes_and_the_text_filter_hide_rows,
  wb/test_diff_panel.py::test_the_summary_bar_and_the_worst_pairs_first, wb/test_diff_dropped.py (whole module)
- suggested recipe changes, best first, with the pairs they make and Apply ->
  wb/test_diff_panel.py::test_a_common_prefix_is_offered_as_one_remap_rule_with_the_pairs_it_makes; at most two
  (one line each, so they fit at 1024x640) ->
  here::test_the_diff_view_offers_at_most_two_changes_best_first (checked: 2 -> 3 and 2 -> 1 both fail it); never one that pairs different shapes ->
  engine/surgery/test_suggest.py (whole module); the fused-gate split, with its pairs, and Apply ->
  wb/test_diff_fused_suggestion.py::test_the_split_is_offered_with_its_pairs_and_applying_it_makes_every_tensor_identical;
  the same logic as `diff --suggest` -> engine/cli/test_diff_suggest_cli.py (whole module), engine/surgery/test_suggest_steps.py (whole module)
- a missing tensor offers the closest names, one click makes a remap rule (undoable) ->
  wb/test_diff_panel.py::test_a_suggestion_becomes_a_remap_rule_and_undo_removes_it
- values compared: max |Δ| sorted worst first, a pair's statistics and histogram ->
  wb/test_diff_panel.py::test_the_summary_bar_and_the_worst_pairs_first, wb/test_diff_panel.py::test_selecting_a_pair_shows_its_value_difference_and_histogram
- `store-studio FILE --recipe R.json [--dock]`, and with no FILE the recipe's first source ->
  wb/test_launch_recipe.py (whole module), wb/test_recipe_fit.py::test_recipe_alone_opens_the_recipes_own_source_relative_to_its_folder
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from engine import ArrayStore, export, open_store
from engine.surgery.suggestions import suggest
from gui.main_window import MainWindow
from gui.workbench.diff_panel import show_diff_dock
from gui.workbench.document import RecipeDocument
from tests.helpers.gui_workbench import settle

# nine families of names, each its own rename: more than one search's bounds combine, so besides the best chain
# the families it leaves are offered one by one (engine/surgery/test_suggest_steps.py::test_five_suggestions_at_most)
WORDS = ("ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "owl")
SOURCE = {f"{w}.{w}_{k}": np.ones(2, np.float32) for w in WORDS for k in "wb"}
TARGET = {f"{w[::-1]}.{w}_{k}": np.ones(2, np.float32) for w in WORDS for k in "wb"}


def test_the_diff_view_offers_at_most_two_changes_best_first(window: MainWindow, qtbot, tmp_path):
    source = open_store(export(ArrayStore(SOURCE).entries, tmp_path / "source.safetensors"))
    target = export(ArrayStore(TARGET).entries, tmp_path / "target.safetensors")
    document = RecipeDocument(source, window.work)
    try:
        qtbot.waitUntil(lambda: not document.busy and document.plan is not None, timeout=30_000)
        with open_store(target) as other:  # six chains of changes would each make more load
            offered = [s.label for s in suggest([source], document.recipe, other, limit=10)]
        assert len(offered) == 6
        panel = show_diff_dock(window, document)
        panel.compare_with_file(target)
        qtbot.waitUntil(lambda: panel.is_idle() and panel.model.rowCount() > 0 and bool(panel.bulk_box.rows()),
                        timeout=30_000)
        shown = [row.suggestion.label for row in panel.bulk_box.rows()]
        assert shown == offered[:2]
    finally:
        document.close()
        source.close()


def test_a_sources_own_key_wins_over_the_recipes(window: MainWindow, surgery, qtbot, tmp_path):
    path = tmp_path / "ckpt.pt"
    torch.save({"model": {"fc.weight": torch.ones(2, 3), "fc.bias": torch.ones(2)},
                "ema": {"fc.weight": torch.full((2, 3), 0.5)}}, path)
    document = surgery(path)
    own = replace(document.recipe.sources[0], top_level_key="ema")
    document.push(document.recipe.with_changes(top_level_key="model", sources=(own,)), "Set keys")
    settle(qtbot, document)
    assert document.plan.names == ["fc.weight"]
    assert document.plan.tensors[0].read().tolist() == [[0.5] * 3] * 2
