"""README "Command line" promises (less "### Surgery": test_surgery_promises.py), each with the test that fails
when it breaks.

``here::`` is this module; the others are paths under tests/. "(checked)" marks a pair verified by breaking the
product line in a worktree and watching the test fail.

What each command does:
- `inspect` lists every tensor with name, dtype, shape, values and bytes, with totals (parameters + buffer values) and metadata ->
  here::test_inspect_table_has_a_row_per_tensor_with_dtype_shape_values_and_size (checked),
  engine/cli/test_cli.py::test_inspect_lists_tensors_and_totals, engine/cli/test_cli.py::test_inspect_json_is_machine_readable
- ... and a quantized tensor's scheme in words, and for a Burnpack the Burn releases that load it ->
  engine/formats/test_burn_targets.py::test_inspect_names_the_scheme_and_the_releases (checked)
- `inspect --top-level-key KEY` looks only inside that branch -> here::test_inspect_top_level_key_lists_only_that_branch (checked)
- `inspect --json` -> engine/cli/test_cli.py::test_inspect_json_is_machine_readable (checked)
- `convert` writes beside OUT and renames only when complete: a failure leaves OUT as it was ->
  hardening/test_export_crash.py::test_sigkill_at_20_points_leaves_the_old_file_or_a_complete_new_one,
  hardening/test_changed_on_disk.py::test_an_export_from_a_file_changed_midway_stops_with_that_error_and_leaves_nothing;
  Ctrl+C too -> here::test_ctrl_c_during_convert_leaves_out_as_it_was_and_exits_130 (checked)
- `--format` overrides OUT's extension -> engine/cli/test_cli.py::test_convert_format_flag_overrides_the_extension (checked)
- `--overwrite` is needed to replace OUT -> engine/cli/test_cli.py::test_convert_refuses_to_overwrite_with_one_line,
  engine/cli/test_exit_codes.py::test_an_existing_destination_says_use_overwrite (checked; the CLI and the exporter both
  check, so test_cli's still passes with either check broken)
- `--metadata KEY=VALUE` -> engine/cli/test_cli.py::test_convert_writes_a_readable_file
- `config` prints the non-tensor values as JSON, or the branch at `--key` ->
  engine/formats/pytorch/test_pytorch_cli_config.py::test_config_prints_all_values,
  engine/formats/pytorch/test_pytorch_cli_config.py::test_config_key_picks_a_branch (checked)
- `migrate` converts every Burn record under DIR -> engine/cli/test_migrate_cli.py (whole module)
- `convert`, `diff`, `migrate` draw a progress line (bytes, rate, time left) on a terminal only; `-q` silences it ->
  engine/cli/test_progress.py::test_convert_draws_a_progress_line_on_a_terminal_and_erases_it,
  engine/cli/test_progress.py::test_diff_draws_a_progress_line_on_a_terminal,
  engine/cli/test_progress.py::test_piped_stderr_gets_no_progress_line (checked),
  engine/cli/test_progress.py::test_quiet_silences_the_progress_line_even_on_a_terminal (checked),
  engine/cli/test_progress.py::test_the_line_shows_bytes_rate_and_time_left_and_redraws_at_most_ten_times_a_second;
  migrate's -> here::test_migrate_draws_a_progress_line_on_a_terminal_and_q_silences_it (checked)

Exit codes:
- 1 a problem with a file, one line naming it -> engine/cli/test_cli.py::test_a_broken_file_is_exit_1_with_one_line_naming_it,
  engine/cli/test_exit_codes.py::test_a_missing_input_is_exit_1_naming_the_folder_and_the_file,
  engine/cli/test_exit_codes.py::test_former_tracebacks_are_one_line_exit_1
- 2 a usage error: an unknown flag -> engine/cli/test_cli.py::test_usage_errors_are_exit_2; a regex that does not
  compile, `--metadata` without `=` -> engine/cli/test_exit_codes.py::test_a_bad_flag_value_is_a_usage_error_exit_2 (checked);
  a destination whose extension names no writable format ->
  engine/cli/test_exit_codes.py::test_a_pt_destination_is_a_usage_error_naming_format_and_saying_pt_cannot_be_written,
  here::test_a_destination_of_no_known_extension_is_a_usage_error; a mistyped command says "did you mean" ->
  gui/test_launch.py::test_a_mistyped_command_is_a_usage_error_with_a_suggestion_and_no_window (checked)
- 3 validation against `--template` failed -> engine/cli/test_exit_codes.py::test_template_validation_is_exit_3_and_counts_one_tensor_in_the_singular (checked),
  engine/cli/test_convert_trust.py::test_a_shape_mismatch_against_the_template_is_exit_3_and_writes_nothing;
  `--strict` found a guess -> engine/cli/test_convert_trust.py::test_strict_refuses_while_a_guess_is_unsettled (checked)
- `diff --exit-code` exits 1 when anything differs, else 0 (and 0 without the flag) ->
  engine/cli/test_exit_codes.py::test_diff_exit_code_is_1_only_when_asked_and_something_differs (checked)
- no traceback; an unexpected error is one line asking for a report, `STORE_STUDIO_TRACEBACK=1` shows it ->
  engine/cli/test_exit_codes.py::test_a_bug_is_one_line_asking_for_a_report_and_the_traceback_only_on_request (checked)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from engine import ArrayStore, export, open_store
from engine.cli import main

from tests.helpers.formats_burn_record_writers import Settings, model_item, write_record
from tests.helpers.engine_terminal import stderr_on_a_pty

REPO = Path(__file__).resolve().parents[3]


def store_studio(*args: str, stderr: int | None = subprocess.PIPE) -> subprocess.CompletedProcess:
    """The real entry point from this worktree, as a user's shell runs it."""
    return subprocess.run([sys.executable, "-m", "gui.launch", *args], stdout=subprocess.PIPE, stderr=stderr,
                          text=True, timeout=120, cwd=REPO)


def test_inspect_table_has_a_row_per_tensor_with_dtype_shape_values_and_size(tmp_path, capsys):
    path = export(ArrayStore({"enc.weight": np.zeros((3, 4), np.float16), "steps": np.arange(5, dtype=np.int64)}).entries,
                  tmp_path / "m.bpk", metadata={"author": "me"})
    assert main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines if line.startswith(("enc.weight", "steps"))}
    assert rows["enc.weight"] == ["enc.weight", "F16", "[3,", "4]", "12", "24", "B"]
    assert rows["steps"] == ["steps", "I64", "[5]", "5", "40", "B"]
    assert "2 tensors · 12 parameters + 5 buffer values · 64 B" in lines  # an int tensor holds no trained weights
    assert "  author = me" in lines


def test_inspect_top_level_key_lists_only_that_branch(tmp_path, capsys):
    path = tmp_path / "ckpt.pt"
    torch.save({"model": {"w": torch.ones(2)}, "ema": {"w": torch.zeros(2), "v": torch.zeros(1)}}, path)
    assert main(["inspect", str(path), "--json", "--top-level-key", "ema"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in doc["tensors"]] == ["w", "v"] and doc["totals"]["parameters"] == 3


@pytest.mark.child
def test_a_destination_of_no_known_extension_is_a_usage_error(tmp_path):
    source = export(ArrayStore({"w": np.ones(2, np.float32)}).entries, tmp_path / "a.bpk")
    result = store_studio("convert", str(source), str(tmp_path / "model.weights"))
    assert result.returncode == 2 and "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert "model.weights: its extension names no format Store Studio writes" in result.stderr
    assert not (tmp_path / "model.weights").exists()


# convert in a child whose progress callback presses Ctrl+C (SIGINT to itself) after the first tensor: the real
# signal, the real KeyboardInterrupt path through the exporter and the command line's handler.
CTRL_C_MIDWAY = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even when the suite runs as `pytest &`
from engine.cli import main, progress
progress.ProgressLine.__call__ = lambda self, done, total: os.kill(os.getpid(), signal.SIGINT)
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.child
def test_ctrl_c_during_convert_leaves_out_as_it_was_and_exits_130(tmp_path):
    source = export(ArrayStore({f"w{i}": np.full((64, 64), i, np.float32) for i in range(4)}).entries,
                    tmp_path / "src.safetensors")
    out = tmp_path / "out"
    out.mkdir()
    (out / "model.bpk").write_bytes(b"the old model")
    result = subprocess.run([sys.executable, "-c", CTRL_C_MIDWAY, "convert", str(source), str(out / "model.bpk"),
                             "--overwrite"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 130 and result.stderr == "store-studio: interrupted\n"
    assert (out / "model.bpk").read_bytes() == b"the old model"
    assert sorted(p.name for p in out.iterdir()) == ["model.bpk"]  # no partial file left beside it



@pytest.mark.child
def test_migrate_draws_a_progress_line_on_a_terminal_and_q_silences_it(tmp_path):
    item, _ = model_item()
    for name in ("loud", "quiet"):
        (tmp_path / name).mkdir()
        write_record(tmp_path / name, "model", item, Settings(recorder="NamedMpk"))
    code, shown = stderr_on_a_pty("migrate", str(tmp_path / "loud"))
    assert code == 0 and "writing model.bpk" in shown and "(100%)" in shown
    code, shown = stderr_on_a_pty("migrate", str(tmp_path / "quiet"), "-q")
    assert code == 0 and shown == ""
    with open_store(tmp_path / "quiet" / "model.bpk") as store:
        assert len(store) == 11
