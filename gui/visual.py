"""The visual language of DESIGN.md in one place: one colour per meaning, for the tree, the workbench and the diff."""

from __future__ import annotations

from PySide6.QtGui import QBrush, QColor, QFont

from gui.workbench.document import CONFLICT, DROPPED, MISMATCH, TRANSFORMED, UNUSED

AMBER = QColor("#b26a00")  # transformed: readable on white, distinct from red in grey screenshots
GREY = QColor("#8a8a8a")  # dropped
RED = QColor("#c03b3b")  # conflict, missing, invalid
BLUE = QColor("#2f6fb5")  # unused
GREEN = QColor("#2e7d32")  # applied

COLOURS = {TRANSFORMED: AMBER, DROPPED: GREY, CONFLICT: RED, MISMATCH: RED, UNUSED: BLUE}
INVALID_STYLE = f"QLineEdit {{ border: 2px solid {RED.name()}; border-radius: 3px; }}"
ERROR_TEXT_STYLE = f"color: {RED.name()};"  # a message that says what is wrong


def brush(state: str) -> QBrush | None:
    colour = COLOURS.get(state)
    return QBrush(colour) if colour is not None else None


def struck(font: QFont) -> QFont:
    """A copy of ``font`` struck through: how a dropped tensor reads even without colour."""
    out = QFont(font)
    out.setStrikeOut(True)
    return out
