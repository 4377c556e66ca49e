"""README "Limits" promises, each with the test that fails when it breaks.

``here::`` is this module; the others are paths under tests/ (``hostile[CLASS-LABEL]`` is a case of
hardening/test_hostile_classes.py::test_hostile_file_converts_or_is_refused_in_one_line_within_limits, built
from helpers/hard_hostile_files.py's CATALOGUE, each run in a child within 2 s of CPU and 300 MiB). "(checked)" marks a
pair verified by breaking the product line in a worktree and watching the test fail.

Formats:
- Burnpack version 1; metadata up to 100 MiB, 100,000 tensors, 10 GiB per tensor ->
  engine/formats/test_burnpack.py::test_malformed_files_are_refused_with_a_reason (version 2, 100 MiB + 1, 10 GiB cases),
  engine/formats/test_burnpack.py::test_more_tensors_than_burn_allows_is_refused_before_reading_them (checked)
- quantized Burnpack tensors: surgery never changes them (a transform is refused, a rename keeps them) ->
  engine/surgery/test_plan.py::test_quantized_tensors_may_be_renamed_but_not_decoded (checked)
- SafeTensors headers up to 100 MB -> here::test_a_safetensors_header_one_byte_over_100_mb_is_refused_unread (checked),
  engine/formats/test_safetensors.py::test_absurd_header_length_is_refused_without_reading_it; F8_E8M0, F4, F6, C64
  listed, packed F4/F6 not decoded -> engine/formats/test_safetensors.py::test_newer_dtypes_are_listed_not_decoded
- PyTorch read only -> engine/cli/test_exit_codes.py::test_a_pt_destination_is_a_usage_error_naming_format_and_saying_pt_cannot_be_written;
  its layouts -> engine/formats/test_formats_promises.py (PyTorch files); tar with or without a `tensors` member ->
  engine/formats/pytorch/test_pytorch_tar_without_tensors.py (whole module); quantized, sparse, nested and meta tensors
  refused -> engine/formats/pytorch/test_pytorch_whole_models.py::test_a_quantized_tensor_is_refused_saying_so; complex32
  and fnuz listed, not decoded -> engine/formats/pytorch/test_pytorch_read.py::test_complex32_and_fnuz_are_listed_but_not_decoded
- Burn records: Bin names by position without `--template` ->
  engine/formats/burn_record/test_burn_records.py::test_inspect_says_bin_names_are_positional; Bin quantized
  tensors refused -> here::test_a_quantized_tensor_in_a_bin_record_is_refused_in_one_line (checked); half-precision
  records before 0.14 read Bin int parameters as F16 and the dtype index follows the record's version ->
  engine/formats/burn_record/test_burn_records.py::test_half_floats_follow_the_settings_when_the_version_table_is_ambiguous,
  engine/formats/burn_record/test_burn_records.py::test_a_dtype_index_whose_size_fits_only_the_other_versions_table_reads_by_that_table,
  engine/formats/burn_record/test_burn_records_bad_input.py::test_a_bin_dtype_index_outside_the_versions_table_is_refused,
  engine/formats/burn_record/test_bin_records.py and test_old_layout_records.py (their own pairs);
  (Bin records find only parameters: a limit stated, not tested; the test writer cannot lay out an optimizer's
  HashMap in bincode);
  JSON records up to 256 MiB -> here::test_a_json_record_over_256_mib_is_refused_unparsed (checked); `.gz` decompressed once
  to a temporary file, refused past its allowance -> engine/formats/burn_record/test_burn_records_bad_input.py::test_a_gzip_bomb_is_stopped_while_it_inflates,
  engine/formats/burn_record/test_burn_records.py::test_gzip_records_leave_no_temporary_file
- remote files: `http(s)://` and `hf://` only, anything else is a path -> here::test_an_s3_address_is_one_line_not_a_download;
  a remote Bin record is downloaded whole within `STORE_STUDIO_MAX_DOWNLOAD` ->
  here::test_a_remote_bin_record_is_downloaded_within_the_limit (checked). (`hf://` revisions with `/` are a stated
  limit, not a behaviour: nothing to test.)
- complex tensors cannot go to Burnpack, said before anything is written ->
  engine/test_export.py (the complex128 case), here::test_a_complex_tensor_to_burnpack_writes_nothing (checked)

Hostile and changing files (one line naming the file, within 2 s of CPU and 300 MiB):
- nesting: pickle 100 levels, counted as built -> hostile[nesting-list-101], hostile[nesting-dict-101],
  hostile[nesting-tuple-key-101] (checked); SafeTensors header 64 -> hostile[nesting-json-shape-65] (checked); Burnpack CBOR 128 ->
  hostile[nesting-cbor-129] (checked); placeholders and modules count like containers -> hostile[nesting-placeholders-101],
  a module that contains itself -> hostile[nesting-module-cycle]
- integers in a pickle at most 1,024 bytes -> here::test_a_pickled_integer_of_1024_bytes_reads_and_1025_is_refused (checked:
  the hostile cases, 1,827 bytes and up, survived a limit of 1,500), hostile[traceback-int-key-4400], hostile[traceback-int-value-4400]
- at most 64 non-text keys with one hash -> hostile[hash-flooding-int-keys-1000], hostile[hash-flooding-placeholder-items-1000],
  engine/formats/pytorch/test_pytorch_unpickler.py::test_many_small_frozensets_with_equal_hashes_across_them_are_not_a_hash_flood
- shared references: max(100,000, size / 8) objects, never over 5,000,000 ->
  here::test_the_walk_may_visit_max_100000_or_size_over_8_objects_at_most_5000000 (checked: the hostile cases survived
  8 -> 4 bytes per object and a 10,000,000 cap), hostile[memo-sharing-fan-50] (checked for 100,000),
  hostile[memo-sharing-placeholder-fan-20], engine/formats/pytorch/test_pytorch_forged.py::test_exponential_sharing_is_cut_off
- TorchScript: at most 4,096 source files and 64 MiB in all, each inflated within data.pkl's bounds ->
  engine/formats/pytorch/test_torchscript_source_limits.py (whole module; checked: the moved-limit tests of
  test_torchscript_tables.py passed with 64 MiB loosened; the hostile case holds 4,096 only by its message), hostile[torchscript-classes-5000];
  only the classes data.pkl names -> hostile[torchscript-entries-100000]; a zip of 100,000 entries within 3 s ->
  hostile[torchscript-entries-100000]
- compressed data.pkl: at most 64 times its size, inflated no further than its header states -> hostile[zip-bomb-deflate-64MiB],
  hostile[zip-bomb-deflate-forged-256MiB] (these hold the attack, but the bounds survived doubling); any ratio up to
  16 MiB, 64 times past it, at most 1 GiB -> here::test_data_pkl_inflates_to_16_mib_at_any_ratio_and_64_times_beyond,
  here::test_data_pkl_stating_more_than_1_gib_is_refused_unread (checked)
- repeating views: 256 MiB a tensor, 64 x file + 1 GiB in all -> here::test_a_repeating_view_may_fill_256_mib_and_not_a_value_more,
  here::test_repeating_views_together_stay_within_64_times_the_file_plus_1_gib (both checked: the hostile cases survived
  both bounds doubled), hostile[broadcast-100x67108864]; statistics read
  each distinct value once -> hardening/test_hostile_classes.py::test_statistics_of_a_broadcast_view_read_each_value_once
- sharded SafeTensors: each shard opened once -> hostile[shard-aliases-4000]; a tensor mapped to no file refused ->
  hostile[traceback-index-to-empty], hostile[traceback-index-to-dot],
  hardening/test_fuzz_regressions.py::test_hostile_sharded_index_is_refused_with_a_clear_format_error
- lone surrogates refused -> hostile[traceback-surrogate-json-name], hostile[traceback-surrogate-pickle-name]; a
  descriptor field or `__metadata__` given twice -> hostile[official-refuses-duplicated-dtype],
  hostile[official-refuses-duplicated-metadata]; a Burnpack param_id outside 0..2^64-1 -> hostile[official-refuses-param-id--1]
- a file changed on disk: every read and export step checks it, never SIGBUS, a rename keeps the old bytes ->
  hardening/test_changed_on_disk.py (whole module; checked); the window marks the tab and offers Reload -> gui/test_stale_tab.py (whole module)
- export: permission bits kept -> hardening/test_export_edges.py::test_replacing_a_file_keeps_its_permission_bits (checked);
  SIGTERM/SIGHUP remove the partial -> hardening/test_export_edges.py::test_sigterm_and_sighup_remove_the_partial_file_and_still_end_the_process;
  the next export removes partials whose process is gone, never a live one ->
  hardening/test_export_crash.py::test_sigkill_at_20_points_leaves_the_old_file_or_a_complete_new_one,
  hardening/test_export_edges.py::test_a_partial_file_of_a_running_export_is_left_alone; a name too long for its partial ->
  hardening/test_export_edges.py::test_a_destination_name_too_long_for_a_partial_name_beside_it_still_exports; a dangling
  symlink needs --overwrite -> hardening/test_export_edges.py::test_a_dangling_symlink_destination_needs_overwrite (checked); a FIFO,
  device or socket is refused -> hardening/test_export_edges.py::test_a_fifo_destination_is_refused,
  hardening/test_export_edges.py::test_a_device_destination_is_refused_even_with_overwrite,
  here::test_a_socket_destination_is_refused_even_with_overwrite (checked)
"""

from __future__ import annotations

import os
import socket
import stat
import struct
import zipfile

import numpy as np
import pytest
import torch

from engine import ArrayStore, ExportError, FormatError, export, open_store
from engine.cli import main
from engine.formats.pytorch.checkpoint import node_budget
from tests.helpers.formats_burn_record_writers import Param, Settings, id_text, model_item, write_record
from tests.helpers.hard_hostile_files import zip_bomb


def test_a_safetensors_header_one_byte_over_100_mb_is_refused_unread(tmp_path):
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", 100_000_001) + b"{}")
    with pytest.raises(FormatError, match="over the limit"):
        open_store(path)


def test_a_json_record_over_256_mib_is_refused_unparsed(tmp_path, capsys):
    item, _ = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="PrettyJson"))
    with path.open("r+b") as f:  # sparse: trailing whitespace JSON would accept, past the limit
        f.seek((256 << 20) + 1 - 1)
        f.write(b" ")
    assert main(["inspect", str(path)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"JSON record of {(256 << 20) + 1} bytes is over the limit" in error


def test_a_quantized_tensor_in_a_bin_record_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """A Bin record whose parameter's DType index is QFloat's (the writer spells float32 as QFloat here)."""
    from tests.helpers import formats_burn_record_writers as burn_record_writers
    monkeypatch.setitem(burn_record_writers.NUMPY_NAMES, "float32", "QFloat")
    path = write_record(tmp_path, "model", {"w": Param(id_text(1), np.zeros(2, np.float32))}, Settings(recorder="Bin"))
    assert main(["inspect", str(path)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "quantized tensors in Bin records are not supported" in error


def test_an_s3_address_is_one_line_not_a_download(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["inspect", "s3://bucket/model.safetensors"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("store-studio: model.safetensors: ")


def test_a_remote_bin_record_is_downloaded_within_the_limit(tmp_path, monkeypatch, capsys):
    from tests.helpers.remote_http_site import Server, Site
    monkeypatch.delenv("HF_TOKEN", raising=False)
    item, _ = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="Bin"))
    server = Server(Site())
    try:
        server.site.files["/model.bin"] = path.read_bytes()
        monkeypatch.setenv("STORE_STUDIO_MAX_DOWNLOAD", str(path.stat().st_size))
        with open_store(server.url("/model.bin")) as remote, open_store(path) as local:
            assert remote.names == local.names
        monkeypatch.setenv("STORE_STUDIO_MAX_DOWNLOAD", str(path.stat().st_size - 1))
        assert main(["inspect", server.url("/model.bin")]) == 1
    finally:
        server.close()
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "STORE_STUDIO_MAX_DOWNLOAD" in error


def test_a_complex_tensor_to_burnpack_writes_nothing(tmp_path, capsys):
    source = export(ArrayStore({"ok": np.zeros(2, np.float32), "z": np.ones(2, np.complex64)}).entries,
                    tmp_path / "a.safetensors")
    out = tmp_path / "out"
    out.mkdir()
    assert main(["convert", str(source), str(out / "m.bpk")]) == 1
    error = capsys.readouterr().err
    assert error == "store-studio: m.bpk: tensor 'z': Burnpack cannot hold dtype C64\n"
    assert list(out.iterdir()) == []


def test_a_socket_destination_is_refused_even_with_overwrite(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a socket path must be short: bind a relative name
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind("model.bpk")
        with pytest.raises(ExportError, match="model.bpk is a socket, not a file"):
            export(ArrayStore({"w": np.ones(2, np.float32)}).entries, tmp_path / "model.bpk", overwrite=True)
        assert stat.S_ISSOCK(os.lstat(tmp_path / "model.bpk").st_mode)
        assert [p.name for p in tmp_path.iterdir()] == ["model.bpk"]


def test_a_pickled_integer_of_1024_bytes_reads_and_1025_is_refused(tmp_path):
    """``{"n": LONG4 of N bytes}``: the bound is the README's, to the byte."""
    for size, opens in ((1024, True), (1025, False)):
        path = tmp_path / f"int{size}.pt"
        path.write_bytes(b"\x80\x02}X\x01\x00\x00\x00n\x8b" + struct.pack("<I", size) + b"\x01" * size + b"s.")
        if opens:
            with open_store(path) as store:
                assert store.values["n"] == int.from_bytes(b"\x01" * size, "little")
        else:
            with pytest.raises(FormatError, match="an integer of 1025 bytes, over the limit of 1024"):
                open_store(path)


def test_the_walk_may_visit_max_100000_or_size_over_8_objects_at_most_5000000():
    """The README's budget for walking a checkpoint, as a function of its size in bytes."""
    assert [node_budget(size) for size in (0, 800_000, 8_000_000, 40_000_000, 10 ** 12)] == \
        [100_000, 100_000, 1_000_000, 5_000_000, 5_000_000]


def test_a_repeating_view_may_fill_256_mib_and_not_a_value_more(tmp_path):
    """A saved ``expand()`` of one F32 value: 2^26 values are 256 MiB exactly."""
    for count, opens in ((1 << 26, True), ((1 << 26) + 1, False)):
        path = tmp_path / f"expand{count}.pt"
        torch.save({"e": torch.ones(1).expand(count)}, path)
        if opens:
            with open_store(path) as store:
                assert store.entry("e").shape == (count,)
        else:
            with pytest.raises(FormatError, match=r"repeats its storage's values into 268435460 bytes, over the "
                                                  r"limit of 268435456"):
                open_store(path)


def test_repeating_views_together_stay_within_64_times_the_file_plus_1_gib(tmp_path):
    """Four 256 MiB views are 1 GiB (within 64 x the file plus 1 GiB); a fifth is over."""
    for views, opens in ((4, True), (5, False)):
        path = tmp_path / f"views{views}.pt"
        torch.save({f"e{i}": torch.ones(1).expand(1 << 26) for i in range(views)}, path)
        if opens:
            with open_store(path) as store:
                assert len(store) == 4
        else:
            limit = 64 * path.stat().st_size + (1 << 30)
            with pytest.raises(FormatError, match=f"claim {5 << 28} bytes in all, over the limit of {limit} "
                                                  r"\(64 times the file's"):
                open_store(path)


def test_data_pkl_inflates_to_16_mib_at_any_ratio_and_64_times_beyond(tmp_path):
    """data.pkl deflated about 1,000 times: 16 MiB opens (a pickle of None), one byte more is a zip bomb."""
    for size, opens in ((16 << 20, True), ((16 << 20) + 1, False)):
        path = tmp_path / f"inflate{size}.pt"
        path.write_bytes(zip_bomb(size, zipfile.ZIP_DEFLATED))
        if opens:
            with open_store(path) as store:
                assert len(store) == 0
        else:
            with pytest.raises(FormatError, match=r"would expand \d+ times .* over the limit of 64 \(a zip bomb\?\)"):
                open_store(path)


def test_data_pkl_stating_more_than_1_gib_is_refused_unread(tmp_path):
    path = tmp_path / "huge.pt"
    path.write_bytes(zip_bomb(1 << 20, zipfile.ZIP_DEFLATED, forged_size=(1 << 30) + 1))
    with pytest.raises(FormatError, match="data.pkl claims 1073741825 bytes, over the limit of 1073741824"):
        open_store(path)
