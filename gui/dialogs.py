"""The error dialog (a sentence a user can act on first, the traceback behind "Show Details…") and file-dialog filters."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

ERROR_DIALOG = "errorDialog"  # object name, so tests and scripts can find open error dialogs
MODEL_FILES = "Model files (*.bpk *.safetensors *.json *.pt *.pth *.bin *.ckpt *.mpk *.gz);;All files (*)"  # file dialogs
RECIPE_FILES = "Store Studio recipes (*.recipe.json *.json);;All files (*)"


def as_sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def show_error(parent: QWidget | None, headline: str, message: str, details: str = "") -> QMessageBox:
    """Show an error without blocking: the window keeps repainting and stays usable behind it."""
    box = QMessageBox(QMessageBox.Icon.Warning, "Store Studio", headline, QMessageBox.StandardButton.Ok, parent)
    box.setObjectName(ERROR_DIALOG)
    box.setInformativeText(as_sentence(message))
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if details:
        box.setDetailedText(details)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box
