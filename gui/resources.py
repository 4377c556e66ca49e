"""Icons, stylesheet and fonts from ``resources/`` beside the packages, found the way gui.samples finds the samples."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from PySide6.QtGui import QFont, QFontDatabase, QIcon

RESOURCES = Path(__file__).resolve().parent.parent / "resources"


@cache
def icon(name: str) -> QIcon:
    """An SVG icon by name (``open`` is ``resources/icons/open.svg``); SVG stays crisp at any scale."""
    return QIcon(str(RESOURCES / "icons" / f"{name}.svg"))


def stylesheet() -> str:
    return (RESOURCES / "style" / "app.qss").read_text(encoding="utf-8")


def monospace() -> QFont:
    """The system's fixed-width font, for tensor names, shapes and dtypes."""
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
