"""``store-studio --install-desktop``: a freedesktop menu entry and file types, so a double-click opens the app.

Writes, under the user's data folder (``$XDG_DATA_HOME``, default ``~/.local/share``), the
``.desktop`` entry, a shared-mime-info package naming our extensions (no other application
claims them) and the icon; ``--uninstall-desktop`` removes exactly those. The desktop's caches are
refreshed with update-mime-database / update-desktop-database when they are installed; without
them the files still take effect at the next login. No Qt here: nothing to show.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping
from xml.sax.saxutils import quoteattr

from gui.samples import SAMPLES

APP_ID = "store-studio"
ICON = SAMPLES.parent / "icons" / "app.svg"
# MIME type -> (what it is, its extensions)
TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "application/x-burnpack": ("Burnpack model weights", ("bpk",)),
    "application/x-safetensors": ("SafeTensors model weights", ("safetensors",)),
    "application/x-pytorch-checkpoint": ("PyTorch checkpoint", ("pt", "pth")),
    "application/x-burn-mpk": ("Burn MessagePack record", ("mpk",)),
}


def data_home(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    return Path(environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def installed_files(home: Path) -> tuple[Path, Path, Path]:
    """The .desktop entry, the MIME package and the icon, in that order."""
    return (home / "applications" / f"{APP_ID}.desktop", home / "mime" / "packages" / f"{APP_ID}.xml",
            home / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg")


def install(home: Path | None = None) -> list[Path]:
    """Write the three files (replacing older ones) and refresh the desktop's caches; returns what was written."""
    home = home or data_home()
    entry, mime, icon = installed_files(home)
    for path in (entry, mime, icon):
        path.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text(desktop_entry(launch_command()), encoding="utf-8")
    mime.write_text(mime_package(), encoding="utf-8")
    shutil.copyfile(ICON, icon)
    _refresh(home)
    return [entry, mime, icon]


def uninstall(home: Path | None = None) -> list[Path]:
    """Remove what ``install`` wrote; returns what was there."""
    home = home or data_home()
    removed = [path for path in installed_files(home) if path.exists()]
    for path in removed:
        path.unlink()
    _refresh(home)
    return removed


def launch_command() -> list[str]:
    """How the menu starts this installation: the store-studio script beside this Python, else ``python -m``."""
    script = Path(sys.executable).parent / APP_ID
    return [str(script)] if script.is_file() else [sys.executable, "-m", "gui.launch"]


def desktop_entry(command: list[str]) -> str:
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Name=Store Studio",
        "GenericName=Model File Viewer",
        "Comment=Inspect and convert Burnpack, SafeTensors and PyTorch model files",
        f"Exec={' '.join(_exec_quote(arg) for arg in command)} %F",
        f"Icon={APP_ID}",
        "Terminal=false",
        "Categories=Development;Science;",
        f"MimeType={''.join(f'{t};' for t in TYPES)}",
        "",
    ])


def mime_package() -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">']
    for mime_type, (comment, extensions) in TYPES.items():
        lines.append(f"  <mime-type type={quoteattr(mime_type)}>")
        lines.append(f"    <comment>{comment}</comment>")
        lines += [f"    <glob pattern={quoteattr('*.' + ext)}/>" for ext in extensions]
        lines.append("  </mime-type>")
    lines += ["</mime-info>", ""]
    return "\n".join(lines)


def _exec_quote(arg: str) -> str:
    """An Exec= argument as the Desktop Entry spec wants it: quoted when it holds anything special."""
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`%'):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg).replace("%", "%%")
    return f'"{escaped}"'.replace("\\", "\\\\")  # the string escape applies on top of the quoting


def _refresh(home: Path) -> None:
    """Let the desktop see the change now; a missing or failing tool is no error (next login will)."""
    for tool, folder in (("update-mime-database", home / "mime"), ("update-desktop-database", home / "applications")):
        executable = shutil.which(tool)
        if executable and folder.is_dir():
            try:
                subprocess.run([executable, str(folder)], capture_output=True, timeout=60)
            except (OSError, subprocess.SubprocessError):
                pass
