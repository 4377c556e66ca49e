"""The visual language of DESIGN.md in one place: one colour per meaning, for the tree, the workbench and the diff.

Each meaning has a light and a dark variant (gui/visual_palette.py), both readable (WCAG contrast of at
least 4.5:1) on the backgrounds of their palette; which one applies is read from the application's palette
when this module is first imported, so the app sets its palette (``--theme dark``) before building widgets.
"""

from __future__ import annotations

from PySide6.QtGui import QBrush, QFont, QGuiApplication

from gui.visual_palette import TONES, is_dark, tone
from gui.workbench.marks import CONFLICT, DROPPED, MISMATCH, TRANSFORMED, UNUSED

_app = QGuiApplication.instance()
DARK = _app is not None and is_dark(_app.palette())  # type: ignore[attr-defined]
AMBER, GREY, RED, BLUE, GREEN = (tone(name, DARK) for name in ("amber", "grey", "red", "blue", "green"))

COLOURS = {TRANSFORMED: AMBER, DROPPED: GREY, CONFLICT: RED, MISMATCH: RED, UNUSED: BLUE}
TONE_COLOURS = {"ok": GREEN.name(), "transformed": AMBER.name(), "problem": RED.name(), "unused": BLUE.name(),
                "dropped": GREY.name()}
INVALID_STYLE = f"QLineEdit {{ border: 2px solid {RED.name()}; border-radius: 3px; }}"
ERROR_TEXT_STYLE = f"color: {RED.name()};"  # a message that says what is wrong


def themed(stylesheet: str) -> str:
    """The app's stylesheet with its light colours swapped for this palette's variants."""
    for light, dark in TONES.values():
        stylesheet = stylesheet.replace(light, dark if DARK else light)
    return stylesheet


def brush(state: str) -> QBrush | None:
    colour = COLOURS.get(state)
    return QBrush(colour) if colour is not None else None


def struck(font: QFont) -> QFont:
    """A copy of ``font`` struck through: how a dropped tensor reads even without colour."""
    out = QFont(font)
    out.setStrikeOut(True)
    return out
