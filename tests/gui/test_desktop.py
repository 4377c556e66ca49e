"""``--install-desktop`` writes a menu entry, MIME types and an icon under XDG_DATA_HOME; uninstall removes them."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gui import desktop

REPO = Path(__file__).resolve().parent.parent.parent
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"


def launch(*args: str, data_home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_DATA_HOME": str(data_home)}
    return subprocess.run([sys.executable, "-m", "gui.launch", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


def test_install_writes_the_desktop_entry_mime_types_and_icon_and_uninstall_removes_them(tmp_path):
    result = launch("--install-desktop", data_home=tmp_path)
    assert result.returncode == 0, result.stderr
    entry_path = tmp_path / "applications" / "store-studio.desktop"
    mime_path = tmp_path / "mime" / "packages" / "store-studio.xml"
    icon_path = tmp_path / "icons" / "hicolor" / "scalable" / "apps" / "store-studio.svg"
    assert result.stdout.splitlines() == [f"wrote {entry_path}", f"wrote {mime_path}", f"wrote {icon_path}"]

    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str
    entry.read(entry_path)
    section = entry["Desktop Entry"]
    assert section["Type"] == "Application" and section["Name"] == "Store Studio" and section["Icon"] == "store-studio"
    assert section["Exec"].endswith(" %F")
    assert section["MimeType"] == ("application/x-burnpack;application/x-safetensors;"
                                   "application/x-pytorch-checkpoint;application/x-burn-mpk;")

    globs = {t.get("type"): sorted(g.get("pattern") for g in t.iter(f"{MIME_NS}glob"))
             for t in ET.parse(mime_path).getroot().iter(f"{MIME_NS}mime-type")}
    assert globs == {"application/x-burnpack": ["*.bpk"], "application/x-safetensors": ["*.safetensors"],
                     "application/x-pytorch-checkpoint": ["*.pt", "*.pth"], "application/x-burn-mpk": ["*.mpk"]}
    assert icon_path.read_bytes() == desktop.ICON.read_bytes()

    result = launch("--uninstall-desktop", data_home=tmp_path)
    assert result.returncode == 0
    assert not entry_path.exists() and not mime_path.exists() and not icon_path.exists()
    assert launch("--uninstall-desktop", data_home=tmp_path).stdout == "nothing to remove\n"


@pytest.mark.skipif(shutil.which("update-mime-database") is None, reason="shared-mime-info is not installed")
def test_the_mime_database_learns_the_extensions(tmp_path):
    desktop.install(tmp_path)
    globs = (tmp_path / "mime" / "globs2").read_text()
    for line in ("application/x-burnpack:*.bpk", "application/x-safetensors:*.safetensors",
                 "application/x-pytorch-checkpoint:*.pth", "application/x-burn-mpk:*.mpk"):
        assert line in globs


def test_the_exec_line_runs_this_installation_and_quotes_odd_paths():
    command = desktop.launch_command()
    assert Path(command[0]).parent == Path(sys.executable).parent
    entry = desktop.desktop_entry(["/opt/my tools/store-studio", "$HOME"])
    assert 'Exec="/opt/my tools/store-studio" "\\\\$HOME" %F' in entry
    assert desktop.desktop_entry(["/usr/bin/store-studio"]).count("Exec=/usr/bin/store-studio %F") == 1
