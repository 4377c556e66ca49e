"""README's opening and "The two commands" promises, each with the test that fails when it breaks, and those
of "Tests and tools" about the suite's own settings.

``here::`` is this module; the others are paths under tests/. It sits beside tests/engine, not in it: every test
here runs the product in a child process, whose calls the mutation run (tests/engine) cannot map to the
functions they test. "(checked)" marks a pair verified by breaking the product line in a worktree and watching the
test fail.

What opens and what is written:
- `.bpk`, `.safetensors` (sharded too), `.pt`/`.pth`, Burn's `.mpk`/`.bin`/`.json` records, each also `.gz` ->
  engine/formats/test_formats_promises.py (its sections), engine/formats/test_open_store.py::test_a_file_opens_by_its_bytes_whatever_its_name
- converting is streaming, atomic and never executes a pickle -> engine/cli/test_command_line_promises.py (`convert`),
  engine/formats/pytorch/test_pytorch_hostile.py::test_hostile_file_is_refused_naming_the_global_and_nothing_runs

The two commands:
- `store-studio` with no file opens the bundled sample -> gui/test_launch.py::test_screenshot_renders_the_window_offscreen_at_1400x900
- urllib3 and huggingface_hub are loaded only when a URL is opened ->
  here::test_a_local_file_loads_no_http_library_in_any_command, here::test_a_convert_of_local_files_loads_no_http_library
  (checked: an eager `import urllib3` in engine/formats/__init__.py fails both), here::test_a_url_loads_urllib3 (the probe sees an import when there is one),
  gui/test_window_setup_promises.py::test_the_window_on_a_local_file_loads_no_http_library
- the test extra's torch and safetensors only write reference files (the app reads and writes SafeTensors
  itself) -> engine/cli/test_startup_imports.py::test_a_plain_convert_loads_no_qt_no_surgery_and_no_ml_dtypes_for_f32,
  here::test_a_local_file_loads_no_http_library_in_any_command (neither torch nor safetensors is loaded by a command)
- Qt's X11 libraries are checked with the dynamic loader before starting, naming the packages ->
  gui/test_platform_check.py::test_missing_libraries_reads_what_the_dynamic_loader_cannot_find,
  gui/test_platform_check.py::test_install_advice_names_the_debian_and_fedora_packages,
  gui/test_platform_check.py::test_the_real_xcb_plugin_missing_libraries_give_the_packages_to_install
- without any display `store-studio` says so and exits 2 -> gui/test_platform_check.py::test_no_display_is_one_sentence_and_exit_2;
  `--screenshot` and every subcommand work without one -> gui/test_platform_check.py::test_a_platform_set_a_screenshot_or_wayland_needs_no_check,
  gui/test_launch.py::test_screenshot_without_a_platform_set_picks_offscreen_itself,
  gui/test_launch.py::test_subcommands_still_run_the_cli_without_importing_qt
- `--install-desktop` writes the `.desktop` entry, the MIME types and the icon under `$XDG_DATA_HOME`;
  `--uninstall-desktop` removes them -> gui/test_desktop.py::test_install_writes_the_desktop_entry_mime_types_and_icon_and_uninstall_removes_them,
  gui/test_desktop.py::test_the_mime_database_learns_the_extensions, gui/test_desktop.py::test_the_exec_line_runs_this_installation_and_quotes_odd_paths;
  `~/.local/share` when `$XDG_DATA_HOME` is unset -> here::test_install_desktop_defaults_to_local_share (checked: a
  default of `~/.local` fails it)
- `--version` prints the version -> gui/test_launch.py::test_version_prints_the_engine_version_from_both_halves; also in
  Help › About -> gui/test_about.py::test_about_shows_the_engine_version

Tests and tools (the suite's own promises):
- each worker task installs the trace hook coverage set with `threading.settrace` ->
  gui/test_workers.py::test_a_threading_trace_hook_reaches_the_work_on_pool_threads
- hypothesis draws a fixed sequence when `CI=true` -> test_suite_settings.py::test_ci_true_selects_the_derandomized_profile,
  test_suite_settings.py::test_this_run_uses_the_profile_its_environment_asks_for
- the fuzz slice's per-case limit counts CPU time -> hardening/test_fuzzing_limits.py::test_a_case_that_only_waits_is_not_slow,
  hardening/test_fuzzing_limits.py::test_a_case_that_computes_past_the_limit_is_slow
- `fuzz.py --long SECONDS --format F` says how many inputs each hostile class made ->
  here::test_the_long_fuzz_counts_the_inputs_of_each_hostile_class; `--replay` checks saved inputs again ->
  here::test_replay_checks_saved_inputs_again
- (not tested here: the whole suite's coverage floor of 90% per package, which only a whole-suite run measures,
  tests/conftest.py::pytest_terminal_summary)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "resources" / "samples"
HTTP_LIBRARIES = {"urllib3", "huggingface_hub", "requests", "fsspec", "aiohttp"}
# run in a fresh interpreter: the modules a command leaves loaded, by their top-level package
PROBE = """
import contextlib, io, json, sys
from gui.launch import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def loaded_by(*args: str) -> tuple[int, set[str]]:
    """The exit code of ``store-studio ARGS`` and the top-level packages it imported."""
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


@pytest.mark.parametrize("args", [
    ("inspect", str(SAMPLES / "sample_cnn.pt")),
    ("diff", str(SAMPLES / "sample_cnn.bpk"), str(SAMPLES / "sample_cnn.bpk")),
    ("config", str(SAMPLES / "sample_cnn.pt")),
], ids=["inspect", "diff", "config"])
def test_a_local_file_loads_no_http_library_in_any_command(args):
    code, modules = loaded_by(*args)
    assert code == 0
    assert not modules & (HTTP_LIBRARIES | {"torch", "safetensors"})


def test_a_convert_of_local_files_loads_no_http_library(tmp_path):
    code, modules = loaded_by("convert", str(SAMPLES / "sample_cnn.pt"), str(tmp_path / "out.safetensors"), "-q")
    assert code == 0 and (tmp_path / "out.safetensors").stat().st_size > 0
    assert not modules & HTTP_LIBRARIES


def test_a_url_loads_urllib3():
    """The other side: an address is read with urllib3 (here one no server answers), so the probe would see it."""
    code, modules = loaded_by("inspect", "http://127.0.0.1:9/none.safetensors")
    assert code == 1 and "urllib3" in modules


def test_the_long_fuzz_counts_the_inputs_of_each_hostile_class(tmp_path):
    result = subprocess.run([sys.executable, "tests/hardening/fuzz.py", "--long", "2", "--format", "safetensors",
                             "--seed", "1", "--findings", str(tmp_path / "findings")],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "seed 1, 2 s over safetensors"
    cases = int(lines[1].split(": ", 1)[1].split(" cases", 1)[0])
    assert lines[1].startswith(f"safetensors: {cases} cases (") and lines[1].endswith(" refused, 0 distinct failures")
    tried = lines[2].removeprefix("  hostile classes tried: ")
    assert tried != lines[2]
    # how many cases 2 s make depends on the machine's load: the line's form is the promise, not its counts
    counts = {} if tried == "none" else {k: int(n) for k, n in (part.rsplit(" ", 1) for part in tried.split(", "))}
    assert all(n > 0 for n in counts.values()) and sum(counts.values()) <= cases
    assert lines[-1] == f"total: {cases} cases, 0 distinct failures"


def test_replay_checks_saved_inputs_again(tmp_path):
    (tmp_path / "junk.safetensors").write_bytes(b"\xff" * 64)
    inputs = [str(SAMPLES / "sample_cnn.bpk"), str(tmp_path / "junk.safetensors")]
    result = subprocess.run([sys.executable, "tests/hardening/fuzz.py", "--replay", *inputs], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [f"{inputs[0]}: clean", f"{inputs[1]}: refused"]


def test_install_desktop_defaults_to_local_share(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XDG_DATA_HOME"} | {"HOME": str(tmp_path)}
    share = tmp_path / ".local" / "share"
    for args, expected in ((["--install-desktop"], 0), (["--uninstall-desktop"], 0)):
        result = subprocess.run([sys.executable, "-m", "gui.launch", *args], cwd=REPO, env=env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == expected, result.stderr
        if args == ["--install-desktop"]:
            assert result.stdout.splitlines()[0] == f"wrote {share / 'applications' / 'store-studio.desktop'}"
            assert (share / "mime" / "packages" / "store-studio.xml").is_file()
    assert not (share / "applications" / "store-studio.desktop").exists()
