"""README "Surgery" promises, each with the test that fails when it breaks.

Each promise below is a README sentence about `convert`'s surgery flags; the test after the arrow asserts its
outcome on a real file. ``here::`` is this module; the others are paths under tests/engine/.

Order of operations and what wins:
- later inputs win a name -> surgery/test_plan.py::test_later_sources_override_earlier_ones_and_say_so,
  cli/test_convert_surgery.py::test_several_inputs_merge_later_ones_winning
- a source's own filter sees the names as the file writes them -> surgery/test_plan.py::test_each_source_has_its_own_filter
- remaps run in order, each on the previous result -> cli/test_convert_surgery.py::test_chained_remaps_dry_run_prints_the_plan_and_writes_nothing,
  here::test_remaps_apply_in_order_each_on_the_previous_result
- `--contiguous-indices` counts every source name, whatever a filter drops later ->
  cli/test_convert_trust.py::test_contiguous_indices_count_every_source_name_before_the_filter
- an index is what Rust's parse::<usize>() takes (`+5` becomes 5; `²`, `1_000`, `-1`, past 2^64 - 1 are names; no
  segment stops a plan, a chain or the tree) -> surgery/test_index_segments.py (whole module)
- pytorch-to-burn transposes Linear weights, renames norm weight/bias to gamma/beta and PReLU weight to alpha ->
  surgery/test_adapters.py::test_pytorch_to_burn_transposes_a_square_linear_weight_on_the_bytes,
  surgery/test_burn_fixtures.py::test_norm_parameters_become_gamma_and_beta,
  cli/test_convert_trust.py::test_filters_match_the_names_after_remaps_and_adapters; burn-to-pytorch back ->
  surgery/test_adapters.py::test_burn_to_pytorch_transposes_a_square_linear_weight_back
- `--include/--exclude` see the names all the steps before produced -> cli/test_convert_trust.py::test_filters_match_the_names_after_remaps_and_adapters
- `dropped X as Y` in `--dry-run` shows the name the filter saw -> here::test_a_dropped_tensor_names_the_name_the_filter_saw
- filters that leave nothing stop with exit 1, naming the filter -> cli/test_convert_trust.py::test_filters_leaving_nothing_are_exit_1_naming_the_filter
- includes are OR-ed regexes searched anywhere in a name -> surgery/test_plan.py::test_include_regexes_are_searched_and_or_ed_and_exclusions_say_which_rule,
  here::test_includes_are_or_ed_and_searched_anywhere_in_a_name
- replacements take `$1`, `${name}`, `\\1`, and `$1_x` is group 1 then `_x` ->
  surgery/test_plan.py::test_remap_accepts_rust_and_python_replacements_and_counts_hits,
  surgery/test_rust_chain_semantics.py (whole module), here::test_dollar_one_underscore_is_group_one_then_the_text

The Rust chain (`recipe --as rust`, Copy as Rust):
- only the builder methods each store has in the recipe's `burn_version`, read from Burn's source ->
  surgery/test_rust_chain_api.py (whole module); what a store cannot do is never a call: BurnpackStore's renames
  for renumbering and skipped variants, one `with_from_adapter` with the cast chained, 0.21's HalfPrecisionAdapter
  and `// differs:`, `// left to do:` for BF16 before 0.22 and casts in 0.20, PytorchStore's
  `map_indices_contiguous(false)`, the `use` line, `// Store Studio only:` -> surgery/test_printed_recipe.py
  (whole module, its own pairs); the chain renames as the CLI did -> surgery/test_rust_chain_semantics.py (whole module)
- `recipe FILE --as cli` -> surgery/test_recipe_document.py (whole module, its own pairs)

What a cast touches:
- `--cast` casts float tensors only, after everything else, once -> here::test_cast_touches_float_tensors_only,
  cli/test_convert_trust.py::test_cast_given_twice_is_a_usage_error; a recipe casts by module type ->
  surgery/test_plan.py::test_casts_apply_to_floats_of_chosen_module_types

Module types and guesses:
- evidence first (running stats, a bias beside a 2-D weight, ...) -> surgery/test_modules.py (whole module),
  cli/test_convert_trust.py::test_a_square_weight_with_a_bias_is_a_linear_whatever_its_name; the named guesses
  (`tokens`, `embed_out`, `act`, `final_norm`, BERT's `embeddings.LayerNorm`, UNet's `time_embed.0`) ->
  surgery/test_modules.py (whole module), surgery/test_guesses.py (whole module), surgery/test_modules.py
  (its own pairs), cli/test_convert_trust.py (the LayerNorm and time_embed cases)
- every tensor resting on a guess is listed, one line each -> cli/test_convert_trust.py::test_tensors_resting_on_a_name_are_reported_after_the_summary;
  by `--dry-run` too -> cli/test_convert_surgery.py::test_strict_lists_each_guess_once,
  cli/test_convert_surgery.py::test_a_written_conversion_lists_its_guesses
- `--module PATH=TYPE` settles a module, any case -> cli/test_convert_trust.py::test_module_flags_settle_the_guesses_and_change_the_bytes,
  surgery/test_modules.py::test_module_types_are_read_in_any_case; an unknown type is exit 2 ->
  cli/test_convert_trust.py::test_an_unknown_module_type_is_a_usage_error
- `--strict` refuses (exit 3) while a guess is unsettled -> cli/test_convert_trust.py::test_strict_refuses_while_a_guess_is_unsettled

Fused modules:
- split and fused back exactly, bit for bit -> surgery/test_fused_modules.py::test_every_burn_tensor_is_the_torch_slice_transposed,
  surgery/test_fused_modules.py::test_fused_back_bit_for_bit, surgery/test_fused_modules.py::test_one_lstm_step_from_the_burn_tensors_matches_torch,
  surgery/test_fused_modules.py::test_one_gru_step_from_the_burn_tensors_matches_torch
- a stack's layer `k` goes to `MODULE.k`, reported as a guess a template settles -> surgery/test_fused_modules.py,
  surgery/test_fused_modules.py::test_a_template_settles_the_stack_placement
- what does not add up is left as it is -> surgery/test_fused_modules.py::test_shapes_that_do_not_add_up_are_left_as_they_are,
  surgery/test_fused_left_as_is.py (whole module; a projection `weight_hr_l0` and kdim/vdim attention, checked)
- back to PyTorch only exactly one cell's gates; stacks need layers 0 and 1; a BiLstm's directions land in one
  module -> surgery/test_fused_back_placement.py (whole module, its own pairs)
- a split is one operation with one input and all its outputs, then the transpose; the Preview reads
  `◆ split, transposed` -> surgery/test_fused_modules.py::test_a_split_is_one_operation_with_its_input_and_outputs,
  surgery/test_plan.py::test_a_split_names_its_rows_and_every_output, gui/workbench/test_fused_preview.py
- the Rust chain says `// left to do: split LSTM gates (...)` -> surgery/test_fused_modules.py::test_the_rust_chain_says_burn_store_cannot_split_fused_gates

What is refused and what is kept:
- a shape that differs from `--template` is exit 3, mismatches listed, nothing written ->
  cli/test_convert_trust.py::test_a_shape_mismatch_against_the_template_is_exit_3_and_writes_nothing
- `--allow-partial` forgives only missing tensors -> cli/test_convert_surgery.py::test_a_template_with_missing_tensors_exits_3_unless_partial,
  cli/test_convert_trust.py::test_a_shape_mismatch_against_the_template_is_exit_3_and_writes_nothing
- `--no-validate` writes despite mismatches and says so -> cli/test_convert_trust.py::test_no_validate_writes_anyway_and_says_so
- two tensors on one name are exit 1, nothing written -> cli/test_convert_surgery.py::test_conflicting_names_are_exit_1_and_write_nothing
- `--metadata K=V` adds or replaces, `--clear-metadata` drops the sources' ->
  cli/test_convert_trust.py::test_metadata_travels_across_formats_and_can_be_cleared_or_replaced,
  cli/test_metadata_meaning.py (whole module; the table of source fields and the names they travel under)
- Burnpack scalars survive Burnpack to Burnpack; `export(..., scalars=...)` refuses a scalar not one of Burn's four
  kinds before writing a byte -> test_export.py (its scalar tests: test_a_bare_number_is_refused_naming_the_scalar_and_nothing_is_written and after)
- `--top-level-key` on a file that is not PyTorch, or without the key, is exit 1 ->
  cli/test_convert_trust.py::test_top_level_key_on_a_file_that_is_not_pytorch_is_exit_1,
  cli/test_convert_trust.py::test_top_level_key_that_the_checkpoint_lacks_is_exit_1
- `--save-recipe` keeps paths relative so a folder can move -> cli/test_convert_trust.py::test_a_saved_recipe_replays_from_another_folder
- `--dry-run` prints every output tensor with its source and operations and writes nothing ->
  cli/test_convert_surgery.py::test_chained_remaps_dry_run_prints_the_plan_and_writes_nothing
- `diff --recipe` compares a source and its conversion as identical -> surgery/test_plan.py::test_export_through_a_plan_then_diff_is_all_identical
- `diff A B --suggest` prints `suggest:` lines, each proven on top of the ones before; `--save-recipe` saves A as
  source and B as template, and `convert --recipe` applies them ->
  cli/test_diff_suggest_cli.py::test_suggest_prints_each_change_and_the_saved_recipe_converts_to_what_the_template_wants,
  cli/test_diff_cli.py::test_suggest_finds_the_top_level_key_and_saves_source_and_template,
  surgery/test_suggest_steps.py (whole module); the fused split by name, naming its modules ->
  surgery/test_suggest_fused.py (whole module)
- non-float buffers (`num_batches_tracked`) are kept by the adapters -> surgery/test_round_trip_torch.py (whole module)
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from engine.cli import main


def convert(*args: object) -> int:
    return main(["convert", *map(str, args)])


def test_a_dropped_tensor_names_the_name_the_filter_saw(tmp_path, capsys):
    source = tmp_path / "a.safetensors"
    save_file({"enc.w": np.ones(2, np.float32), "head.w": np.zeros(2, np.float32), "kept": np.ones(1, np.float32)},
              str(source))
    assert convert(source, tmp_path / "o.safetensors", "--dry-run", "--remap", r"^enc\.", "encoder.",
                   "--exclude", r"^encoder\.", "--exclude", r"^head\.") == 0
    dropped = [line for line in capsys.readouterr().out.splitlines() if line.startswith("dropped ")]
    assert dropped == ["dropped enc.w as encoder.w (filter: excluded by rule 1 ('^encoder\\.'))",
                       "dropped head.w (filter: excluded by rule 2 ('^head\\.'))"]
    assert not (tmp_path / "o.safetensors").exists()


def test_remaps_apply_in_order_each_on_the_previous_result(tmp_path):
    source = tmp_path / "a.safetensors"
    save_file({"a.w": np.arange(2, dtype=np.float32)}, str(source))
    assert convert(source, tmp_path / "o.safetensors", "--remap", r"^a\.", "b.", "--remap", r"^b\.", "c.") == 0
    assert list(load_file(tmp_path / "o.safetensors")) == ["c.w"]
    assert convert(source, tmp_path / "p.safetensors", "--remap", r"^b\.", "c.", "--remap", r"^a\.", "b.") == 0
    assert list(load_file(tmp_path / "p.safetensors")) == ["b.w"]


def test_includes_are_or_ed_and_searched_anywhere_in_a_name(tmp_path):
    source = tmp_path / "a.safetensors"
    save_file({"enc.ln.w": np.ones(1, np.float32), "dec.w": np.ones(1, np.float32), "x.w": np.ones(1, np.float32)},
              str(source))
    assert convert(source, tmp_path / "o.safetensors", "--include", "ln", "--include", "^dec") == 0
    assert sorted(load_file(tmp_path / "o.safetensors")) == ["dec.w", "enc.ln.w"]


def test_dollar_one_underscore_is_group_one_then_the_text(tmp_path):
    source = tmp_path / "a.safetensors"
    save_file({"blk3.w": np.ones(1, np.float32)}, str(source))
    assert convert(source, tmp_path / "o.safetensors", "--remap", r"^blk(\d)\.", "layer$1_x.") == 0
    assert list(load_file(tmp_path / "o.safetensors")) == ["layer3_x.w"]


def test_cast_touches_float_tensors_only(tmp_path):
    weight = np.random.default_rng(3).standard_normal(5).astype(np.float32)
    steps, mask = np.arange(4, dtype=np.int64), np.array([True, False])
    source = tmp_path / "a.safetensors"
    save_file({"w": weight, "steps": steps, "mask": mask, "h": weight.astype(np.float16)}, str(source))
    assert convert(source, tmp_path / "o.safetensors", "--cast", "bf16") == 0
    with safe_open(str(tmp_path / "o.safetensors"), "pt") as f:  # torch reads bf16; numpy would not
        out = {name: f.get_tensor(name) for name in f.keys()}
    assert {name: str(t.dtype) for name, t in out.items()} == {
        "w": "torch.bfloat16", "h": "torch.bfloat16", "steps": "torch.int64", "mask": "torch.bool"}
    for name, by_hand in (("w", weight.astype(ml_dtypes.bfloat16)),  # by hand: ml_dtypes' rounding
                          ("h", weight.astype(np.float16).astype(ml_dtypes.bfloat16))):
        assert out[name].view(torch.int16).numpy().tobytes() == by_hand.tobytes()
    assert out["steps"].numpy().tobytes() == steps.tobytes() and out["mask"].numpy().tolist() == [True, False]
