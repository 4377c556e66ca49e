"""Before Qt: no display, or an xcb plugin missing system libraries, is one sentence and exit 2, not a core dump."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.samples import SAMPLES
from gui.platform_check import PACKAGES, install_advice, missing_libraries, startup_problem, xcb_plugin

REPO = Path(__file__).resolve().parent.parent.parent
COMMANDS = ["inspect", "convert", "diff", "recipe", "config"]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the check is for Linux desktops")


def launch(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    return subprocess.run([sys.executable, "-m", "gui.launch", *args], cwd=REPO, env={**base, **env},
                          capture_output=True, text=True, timeout=120)


@linux_only
@pytest.mark.parametrize("args", [(), (str(SAMPLES / "sample_cnn.bpk"),)])
def test_no_display_is_one_sentence_and_exit_2(args):
    result = launch(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("store-studio: no display found")
    assert "--screenshot out.png" in result.stderr and "inspect, convert, diff, recipe, config" in result.stderr
    assert "Aborted" not in result.stderr and "xcb" not in result.stderr


def test_a_platform_set_a_screenshot_or_wayland_needs_no_check():
    assert startup_problem(COMMANDS, screenshot=True, environ={}) is None
    assert startup_problem(COMMANDS, screenshot=False, environ={"QT_QPA_PLATFORM": "offscreen"}) is None
    assert startup_problem(COMMANDS, screenshot=False, environ={"WAYLAND_DISPLAY": "wayland-0"}) is None
    assert startup_problem(COMMANDS, screenshot=False, environ={"QT_QPA_PLATFORM": ""}) is not None


@linux_only
@pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("ldd")), reason="needs gcc and ldd")
def test_missing_libraries_reads_what_the_dynamic_loader_cannot_find(tmp_path):
    """A real ELF that needs a library which is gone, as Qt's plugin needs libxcb-cursor.so.0 on a bare system."""
    (tmp_path / "gone.c").write_text("int gone(void) { return 1; }\n")
    (tmp_path / "plugin.c").write_text("int gone(void); int plugin(void) { return gone(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", tmp_path / "libstorestudiogone.so.7", tmp_path / "gone.c",
                    "-Wl,-soname,libstorestudiogone.so.7"], check=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", tmp_path / "plugin.so", tmp_path / "plugin.c",
                    tmp_path / "libstorestudiogone.so.7"], check=True)
    (tmp_path / "libstorestudiogone.so.7").unlink()
    assert missing_libraries(tmp_path / "plugin.so") == ["libstorestudiogone.so.7"]
    assert "find the package holding libstorestudiogone.so.7 with `apt-file search libstorestudiogone.so.7`" in \
        install_advice(["libstorestudiogone.so.7"])


def test_install_advice_names_the_debian_and_fedora_packages():
    advice = install_advice(["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"])
    assert advice == ("libxcb-cursor.so.0, libxcb-icccm.so.4, libxcb-keysyms.so.1 are missing; install with "
                      "`sudo apt install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1` (Debian/Ubuntu) or "
                      "`sudo dnf install xcb-util-cursor xcb-util-wm xcb-util-keysyms` (Fedora)")
    assert install_advice(["libxcb-shm.so.0", "libxcb-sync.so.1"]).endswith("`sudo dnf install libxcb` (Fedora)")


@linux_only
def test_the_real_xcb_plugin_missing_libraries_give_the_packages_to_install():
    plugin = xcb_plugin()
    missing = missing_libraries(plugin) if plugin else []
    if not missing:
        pytest.skip("this machine has every library Qt's xcb plugin needs")
    result = launch(DISPLAY=":99")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("store-studio: Qt's X11 (xcb) platform plugin cannot load: ")
    for soname in missing:
        assert soname in result.stderr and PACKAGES[soname][0] in result.stderr
