"""Before Qt starts: can a window open here? If not, say why in one sentence instead of Qt's core dump.

Without a display Qt aborts (SIGABRT) and, when the xcb plugin lacks a system library, prints a
hint that names the wrong one. Both are checked first: the environment for a display, and the
dynamic loader (``ldd``) for what the xcb plugin cannot find, mapped to the package that holds it.
No Qt import here: this runs before any.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

# soname -> (Debian/Ubuntu package, Fedora package): every library Qt's xcb plugin links that a
# minimal system may lack (checked against the plugin's ldd list; Debian names with apt-cache).
PACKAGES: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-xinerama.so.0": ("libxcb-xinerama0", "libxcb"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libSM.so.6": ("libsm6", "libSM"),
    "libICE.so.6": ("libice6", "libICE"),
}
_NOT_FOUND = re.compile(r"^\s*(\S+)\s*=>\s*not found", re.MULTILINE)


def startup_problem(commands: Sequence[str], screenshot: bool, environ: Mapping[str, str] | None = None) -> str | None:
    """Why the window cannot open here, as one line for stderr; None when it can (or Qt is told what to use)."""
    environ = os.environ if environ is None else environ
    if screenshot or not sys.platform.startswith("linux") or environ.get("QT_QPA_PLATFORM", "") not in ("", "xcb"):
        return None
    if not environ.get("QT_QPA_PLATFORM") and not environ.get("DISPLAY") and not environ.get("WAYLAND_DISPLAY"):
        return ("store-studio: no display found (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open; "
                "render it offscreen with `store-studio FILE --screenshot out.png`, or use a command that needs "
                f"no display: {', '.join(commands)} (see store-studio --help).")
    if environ.get("QT_QPA_PLATFORM") == "xcb" or (environ.get("DISPLAY") and not environ.get("WAYLAND_DISPLAY")):
        plugin = xcb_plugin()
        missing = missing_libraries(plugin) if plugin else []
        if missing:
            return f"store-studio: Qt's X11 (xcb) platform plugin cannot load: {install_advice(missing)}."
    return None


def xcb_plugin() -> Path | None:
    """PySide6's own ``libqxcb.so``, found without importing PySide6 (that would start loading Qt)."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or spec.origin is None:
        return None
    plugin = Path(spec.origin).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return plugin if plugin.is_file() else None


def missing_libraries(library: Path) -> list[str]:
    """The sonames the dynamic loader cannot find for ``library`` (and what it links), in ldd's order."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    try:
        listing = subprocess.run([ldd, str(library)], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return list(dict.fromkeys(_NOT_FOUND.findall(listing)))


def install_advice(missing: Sequence[str]) -> str:
    """``libxcb-icccm.so.4 is missing; install it with `sudo apt install libxcb-icccm4` (Debian/Ubuntu) ...``."""
    known = [name for name in missing if name in PACKAGES]
    unknown = [name for name in missing if name not in PACKAGES]
    parts = [f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing"]
    if known:
        debian = " ".join(dict.fromkeys(PACKAGES[name][0] for name in known))
        fedora = " ".join(dict.fromkeys(PACKAGES[name][1] for name in known))
        parts.append(f"install with `sudo apt install {debian}` (Debian/Ubuntu) or `sudo dnf install {fedora}` (Fedora)")
    for name in unknown:
        parts.append(f"find the package holding {name} with `apt-file search {name}` or `dnf provides '*/{name}'`")
    return "; ".join(parts)
