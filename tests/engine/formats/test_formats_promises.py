"""README "Formats" promises (PyTorch files; Burn versions, bools and quantized tensors; Migrating from Burn's
recorders), each with the test that fails when it breaks, so a user relying on a README sentence can see what holds it.

``here::`` is this module; the others are paths under tests/ (``pt/`` is engine/formats/pytorch/, ``rec/`` is
engine/formats/burn_record/, ``fmt/`` is engine/formats/). "(checked)" marks a pair verified by breaking the
product line in a worktree and watching the test fail.

PyTorch files:
- nothing a file names is imported, called or run -> pt/test_pytorch_hostile.py::test_hostile_file_is_refused_naming_the_global_and_nothing_runs,
  pt/test_pytorch_hostile.py::test_an_unknown_class_is_a_placeholder_not_an_import
- state_dict files open from the zip, legacy, tar and plain-pickle layouts, names/dtypes/shapes/values as
  torch.load(weights_only=True) -> pt/test_pytorch_read.py::test_tensors_equal_torch_load,
  pt/test_pytorch_read.py::test_legacy_files_torch_itself_cannot_load, pt/test_pytorch_read.py::test_tar_layout_opens,
  pt/test_pytorch_tar_layout.py (whole module), pt/test_pytorch_read.py::test_plain_pickle_without_tensors
- Python-2-era checkpoints: protocol 2, OrderedDict from [key, value] lists, _rebuild_tensor v1/v2, a Parameter
  built by calling its class, cuda:N and torch.cuda.*Storage storages -> pt/test_pytorch_python2.py (whole module),
  pt/test_pytorch_allowlist.py::test_the_oldest_rebuild_call_and_v3_with_its_own_dtype_read_exactly;
  byte-string keys read as UTF-8, else Latin-1 -> here::test_python2_byte_strings_read_as_utf8_else_latin1 (checked: no
  other test failed when either reading was broken)
- other classes become inert placeholders (class path, __args__, __dict__/__slots__ keys, __items__/__list__),
  tensors inside listed -> pt/test_pytorch_placeholders.py::test_every_shape_of_state_is_kept_with_its_class (checked),
  pt/test_pytorch_denylist.py::test_other_classes_become_placeholders; `config` prints them as JSON ->
  pt/test_pytorch_whole_models.py::test_config_prints_placeholders_as_json; the File panel shows the same tree ->
  gui/panels/test_file_info_pytorch_kinds.py (whole module)
- whole pickled modules list state_dict() (torch's order, prefixed by where they sit, non-persistent buffers
  left out, tied parameters under each name, parametrizations), plain attributes are values, a tensor attribute
  is a value not a tensor -> pt/test_pytorch_whole_models.py::test_a_bare_pickled_model_of_unimportable_classes_lists_its_state_dict (checked),
  pt/test_pytorch_whole_models.py::test_a_model_inside_a_checkpoint_is_prefixed_by_where_it_sits,
  pt/test_pytorch_whole_models.py::test_parametrizations_list_their_originals
- TorchScript archives read as torch.jit.load(f).state_dict(), code/ never run ->
  pt/test_pytorch_whole_models.py::test_torchscript_archive_reads_as_jit_load_state_dict,
  pt/test_pytorch_whole_models.py::test_torchscript_code_is_read_as_text_never_run; `constants.pkl` and
  `traced_inputs.pkl` are not read -> pt/test_torchscript_unread_pickles.py (whole module; checked); the tables read
  from the class sources -> pt/test_torchscript_tables.py (whole module, its own pairs)
- integer keys name tensors in decimal; other keys as Python prints them, and the note says burn-store refuses
  them -> pt/test_pytorch_keys.py (whole module; checked)
- a file torch.load(weights_only=True) would refuse is said so: the note, one `class ... refuses: NAME` line per
  class in `inspect`, `refused_by_torch_weights_only` in `--json` -> here::test_inspect_lists_each_class_weights_only_refuses (checked:
  no existing test failed when the class lines were removed), pt/test_pytorch_whole_models.py::test_a_bare_pickled_model_of_unimportable_classes_lists_its_state_dict;
  the File panel's box -> gui/panels/test_file_info_pytorch_kinds.py (whole module); a TorchScript archive's note ->
  pt/test_pytorch_whole_models.py::test_torchscript_archive_reads_as_jit_load_state_dict
- refused, one line naming the file: deny-listed globals at the top, in a placeholder's state or arguments ->
  pt/test_pytorch_denylist.py::test_a_denied_global_is_refused_by_name_and_nothing_runs; inside a module's tables ->
  pt/test_pytorch_whole_models.py::test_a_pickled_module_whose_table_holds_a_refused_global_is_refused; every entry
  has a source -> pt/test_pytorch_denylist.py::test_every_entry_says_where_it_comes_from_and_none_is_allowed_too
- quantized/sparse/nested/meta tensors refused -> pt/test_pytorch_whole_models.py::test_a_quantized_tensor_is_refused_saying_so
- a TorchScript class without source refused -> pt/test_pytorch_whole_models.py::test_a_torchscript_module_without_its_class_source_is_refused_saying_why (checked);
  an object of a native class without source is a placeholder -> pt/test_torchscript_native_class.py (whole module; checked)
- a loop among non-tensor objects reads (its pointer back as {"$ref": ...}), a loop around tensors refused ->
  pt/test_pytorch_forged.py::test_checkpoint_that_contains_itself

Burn versions, bools and quantized tensors:
- `--burn-version` on convert decides the Bool spelling per release -> fmt/test_burn_targets.py::test_bools_are_spelled_as_the_target_version_reads_them (checked);
  on migrate -> fmt/test_burn_targets.py::test_migrate_writes_for_the_burn_version_asked; in a recipe, the flag winning ->
  fmt/test_burn_targets.py::test_a_recipes_burn_version_decides_the_spelling; 0.22 when none is given ->
  fmt/test_quantized.py::test_bpk_to_bpk_keeps_the_bytes_and_writes_the_target_generation, engine/test_burn_versions.py (whole module)
- the scheme generation per release -> fmt/test_quantized.py::test_bpk_to_bpk_keeps_the_bytes_and_writes_the_target_generation,
  fmt/test_quantized.py::test_a_scheme_of_the_targets_generation_is_written_as_burn_spells_it
- inspect and the File panel read which releases load a file from its bytes (Burn main reads a generation 1
  scheme as one F32 tensor scale) -> fmt/test_burn_targets.py::test_which_burn_releases_load_a_file_is_read_from_its_bytes (checked),
  fmt/test_burn_targets.py::test_inspect_names_the_scheme_and_the_releases, gui/panels/test_quantized_panels.py (whole module)
- a U8/U32 bool cannot be written for 0.20 -> fmt/test_burn_targets.py::test_a_u32_bool_cannot_go_to_burn_0_20 (checked)
- quantized bytes decode as Burn's (packed words lowest bits first, sign-extended; scales per tensor or block;
  two-level global scale; zero scale read as 0.1; generation 1 runs, generation 2 rectangles; blocks
  right-aligned) -> fmt/test_quantized.py (the decoding tests, Burn's own vectors; checked for the zero scale); 8-bit
  packed values unpadded, as QuantizedBytes::new writes them, and padded to whole words ->
  here::test_8_bit_packed_values_read_unpadded_and_padded (checked: no existing test failed without the unpadded layout)
- bytes that do not fit the scheme fail to open in one line naming the tensor ->
  fmt/test_quantized.py::test_bad_quantized_tensors_are_one_line_and_nothing_is_written
- what Burn's reader does not decode is listed and copied without values; rows ending mid-word too ->
  fmt/test_quantized.py::test_schemes_burn_cannot_decode_are_listed_copied_and_refused_when_read,
  fmt/test_quantized.py::test_packed_rows_that_split_words_are_refused_not_guessed
- Burnpack to Burnpack keeps the bytes and rewrites the scheme; refused naming why where the target cannot
  express it -> fmt/test_quantized.py::test_bpk_to_bpk_keeps_the_bytes_and_writes_the_target_generation,
  fmt/test_quantized.py::test_a_scheme_the_target_cannot_express_is_refused_naming_why
- statistics, heat map and diffs use dequantized values -> fmt/test_quantized.py::test_statistics_and_diff_use_the_dequantized_values
- SafeTensors refuses quantized tensors; `--dequantize` writes F32 values ->
  fmt/test_quantized.py::test_convert_to_safetensors_refuses_quantized_unless_dequantize
- SafeTensors bools as burn-store writes them (BOOL, U8, U32) ->
  fmt/test_burn_targets.py::test_safetensors_bools_are_written_as_burn_stores_safetensors_store_writes_them (checked)
  (the v0.20.0 remark describes burn-store, not this tool: a 0.20 file has only native bools)

Migrating from Burn's recorders:
- every recorder's files open, recognised by content, full and half precision ->
  rec/test_burn_records.py::test_every_recorder_reads_names_shapes_dtypes_values_and_param_ids
- `convert model.mpk model.bpk` -> rec/test_burn_records.py::test_convert_to_burnpack_is_byte_exact
- tensor names are field paths; param ids become Burnpack param_ids ->
  rec/test_burn_records.py::test_tensor_names_follow_lists_and_enum_variants,
  rec/test_burn_records.py::test_param_id_text_decodes_to_the_u64_burnpack_stores
- metadata as burn.version/recorder/settings/float/int -> rec/test_burn_records.py::test_convert_to_burnpack_is_byte_exact (checked)
- optimizer and scheduler numbers become scalars -> rec/test_burn_records.py::test_scheduler_numbers_become_burnpack_scalars_on_conversion (checked),
  rec/test_burn_records.py::test_optimizer_state_tensors_values_and_scalars; the File panel shows every non-tensor
  field -> gui/panels/test_file_info_burn_record.py (whole module)
- an optimizer's record in current Burn's layout (`{param_id}.{field}`, `__rank`, UInt counters) ->
  rec/test_optimizer_migration.py (whole module; checked for `__rank`); Adam, AdamW, SGD, AdaGrad, RmsProp and Adan keep their
  field names -> rec/test_optimizer_migration.py (the first four; the last two in
  test_an_rmsprop_record_loads_field_by_field and test_an_adan_record_loads_field_by_field, not checked by a break of its own: the walk is generic, so any break of the names fails the Adam tests first)
- records keyed by pre-0.14 UUIDs keep their field paths -> rec/test_burn_records.py::test_old_uuid_ids_are_kept_as_metadata_without_a_param_id,
  rec/test_optimizer_migration.py::test_a_record_that_is_not_an_optimizers_keeps_its_field_paths
- `migrate` skips a record whose .bpk exists, one line per file and a total, originals kept ->
  engine/cli/test_migrate_cli.py::test_migrate_again_skips_what_is_converted_and_dry_run_writes_nothing (checked),
  engine/cli/test_migrate_cli.py::test_migrate_converts_every_record_beside_itself_and_keeps_the_originals
- a Bin record's names are positional (inspect and the File panel say so) unless `--template` names them,
  shapes checked -> rec/test_burn_records.py::test_every_recorder_reads_names_shapes_dtypes_values_and_param_ids (checked:
  test_inspect_says_bin_names_are_positional alone did not fail with `param.N` renamed), rec/test_burn_records.py::test_inspect_says_bin_names_are_positional,
  rec/test_burn_records.py::test_a_template_names_bin_parameters_and_a_mismatch_is_refused
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import torch

from engine.cli import main
from engine.formats import open_store

from tests.helpers.formats_quantized_files import f32, gen2, i8, write


def test_python2_byte_strings_read_as_utf8_else_latin1(tmp_path):
    """Protocol 2, SHORT_BINSTRING keys: `ok\\xc3\\xa9` is UTF-8 for "oké"; `\\xe9t\\xe9` is not UTF-8, so Latin-1."""
    path = tmp_path / "py2.pt"
    path.write_bytes(b"\x80\x02}(U\x04ok\xc3\xa9K\x01U\x03\xe9t\xe9K\x02u.")
    with open_store(path) as store:
        assert store.values == {"oké": 1, "été": 2}


def saved_with_a_class_torch_refuses(path: Path) -> None:
    """A checkpoint holding an object of ``userproj.cfg.Config``, a class importable only while torch saves."""
    module = types.ModuleType("userproj.cfg")

    class Config:
        def __init__(self) -> None:
            self.lr = 0.5

    Config.__module__, Config.__qualname__ = module.__name__, "Config"
    module.Config = Config
    sys.modules["userproj"], sys.modules[module.__name__] = types.ModuleType("userproj"), module
    try:
        torch.save({"w": torch.ones(2), "cfg": Config()}, path)
    finally:
        del sys.modules[module.__name__], sys.modules["userproj"]


def test_inspect_lists_each_class_weights_only_refuses(tmp_path, capsys):
    path = tmp_path / "ckpt.pt"
    saved_with_a_class_torch_refuses(path)
    assert main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  class torch.load(weights_only=True) refuses: userproj.cfg.Config" in lines
    assert any(line.startswith("note: torch.load(weights_only=True) would refuse this file") for line in lines)
    assert main(["inspect", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["refused_by_torch_weights_only"] == ["userproj.cfg.Config"]
    assert [t["name"] for t in doc["tensors"]] == ["w"] and doc["values"]["cfg"]["lr"] == 0.5


def test_8_bit_packed_values_read_unpadded_and_padded(tmp_path):
    """Three Q8S values in PackedU32: 3 value bytes as QuantizedBytes::new writes them, or one whole u32 word."""
    for raw in (i8(4, -2, 8) + f32(0.5), i8(4, -2, 8, 0) + f32(0.5)):
        with open_store(write(tmp_path, {"w": ({"QFloat": gen2()}, [3], raw)})) as store:
            assert store.read("w").tolist() == [2.0, -1.0, 4.0]
