"""The ``store-studio`` entry point: subcommands stay on the command line, anything else opens the window."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QImage

import engine
from engine.cli.dispatch import mistyped_command
from gui.app import main as window_main
from gui.app import parser as window_parser
from tests.helpers.samples import SAMPLES

REPO = Path(__file__).resolve().parent.parent.parent


def _run(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env}
    return subprocess.run([sys.executable, "-m", "gui.launch", *args], cwd=REPO, env=environment,
                          capture_output=True, text=True, timeout=120)


def test_screenshot_renders_the_window_offscreen_at_1400x900(tmp_path: Path):
    out = tmp_path / "window.png"
    result = _run(str(SAMPLES / "sample_cnn.bpk"), "--screenshot", str(out), "--select", "fc1.weight",
                  QT_QPA_PLATFORM="offscreen")
    assert result.returncode == 0, result.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1400, 900)


def test_screenshot_without_a_platform_set_picks_offscreen_itself(tmp_path: Path):
    out = tmp_path / "window.png"
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    result = subprocess.run([sys.executable, "-m", "gui.launch", "--screenshot", str(out)], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert QImage(str(out)).width() == 1400


def test_screenshot_names_a_missing_tensor(tmp_path: Path):
    result = _run("--screenshot", str(tmp_path / "x.png"), "--select", "no.such.tensor", QT_QPA_PLATFORM="offscreen")
    assert result.returncode == 2
    assert "no tensor or group named 'no.such.tensor'" in result.stderr
    assert not (tmp_path / "x.png").exists()


def test_subcommands_still_run_the_cli_without_importing_qt():
    code = ("import sys; from gui.launch import main; rc = main(['inspect', sys.argv[1]]); "
            "print('qt imported' if 'PySide6' in sys.modules else 'no qt'); sys.exit(rc)")
    result = subprocess.run([sys.executable, "-c", code, str(SAMPLES / "sample_cnn.bpk")], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "conv1.weight" in result.stdout and result.stdout.strip().endswith("no qt")


def test_help_lists_the_commands_and_the_window_options():
    result = subprocess.run([sys.executable, "-m", "gui.launch", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "inspect" in result.stdout and "convert" in result.stdout
    assert "--screenshot PNG" in result.stdout and "--recipe" in result.stdout


def test_a_mistyped_command_is_a_usage_error_with_a_suggestion_and_no_window():
    for typed, meant in (("inpsect", "inspect"), ("conver", "convert"), ("dif", "diff")):
        result = _run(typed, "x.pt")
        assert result.returncode == 2
        assert result.stderr == (f"store-studio: {typed!r} is neither a command nor a file; did you mean {meant}? "
                                 "(store-studio --help lists the commands)\n")
    assert mistyped_command(["convert.bpk"]) is None and mistyped_command(["./inpsect"]) is None
    assert mistyped_command(["--select", "inpsect"]) is None and mistyped_command(["zzz"]) is None


def test_a_file_named_like_a_typo_still_opens(tmp_path: Path):
    shutil.copyfile(SAMPLES / "sample_cnn.bpk", tmp_path / "inpsect")
    out = tmp_path / "w.png"
    result = subprocess.run([sys.executable, "-m", "gui.launch", "inpsect", "--screenshot", str(out)], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert QImage(str(out)).width() == 1400


def test_version_prints_the_engine_version_from_both_halves():
    assert _run("--version").stdout == f"store-studio {engine.__version__}\n"
    result = subprocess.run([sys.executable, "-m", "engine", "--version"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == f"store-studio {engine.__version__}\n"


RECIPE = SAMPLES / "pytorch_to_burn.recipe.json"


@pytest.mark.parametrize("extra", [
    ["--select", "fc1.weight"],
    ["--panel", "file"],
    ["--recipe", str(RECIPE), "--dock", "adapters"],
    ["--recipe", str(RECIPE), "--diff", str(SAMPLES / "sample_cnn.bpk")],
    ["--diff", str(SAMPLES / "sample_cnn.safetensors")],
], ids=["select", "panel", "recipe-dock", "recipe-diff", "diff"])
def test_screenshot_is_exactly_the_requested_size_in_every_state(qapp, tmp_path: Path, extra: list[str]):
    out = tmp_path / "window.png"
    assert window_main([str(SAMPLES / "sample_cnn.pt"), "--size", "1024x640", "--screenshot", str(out), *extra]) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1024, 640)


def test_screenshot_of_a_broken_file_shows_the_error_state_and_fails(tmp_path: Path):
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    out = tmp_path / "error.png"
    result = _run(str(broken), "--size", "1024x640", "--screenshot", str(out), QT_QPA_PLATFORM="offscreen")
    assert result.returncode == 1 and "broken.safetensors" in result.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1024, 640)
    assert len({image.pixel(x, y) for x in range(300, 700, 7) for y in range(150, 400, 7)}) > 3  # a dialog drawn


def test_dark_theme_screenshot_paints_a_dark_window(tmp_path: Path):
    out = tmp_path / "dark.png"
    result = _run(str(SAMPLES / "sample_cnn.bpk"), "--theme", "dark", "--size", "1024x640", "--screenshot",
                  str(out), QT_QPA_PLATFORM="offscreen")
    assert result.returncode == 0, result.stderr
    image = QImage(str(out))
    assert QColor(image.pixel(500, 620)).lightness() < 100  # the status bar, on the dark window colour


def test_a_malformed_size_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        window_parser().parse_args(["--size", "1024by640"])
    assert exit_info.value.code == 2 and "WIDTHxHEIGHT" in capsys.readouterr().err
