"""The error dialog (a sentence a user can act on first, the traceback behind "Show Details…") and file-dialog filters."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox, QTextEdit, QWidget

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
        _fit_details(box, details)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box


def _screen_share(widget: QWidget | None, width: float, height: float) -> tuple[int, int]:
    """``width`` and ``height`` shares of the screen the widget is on, in pixels."""
    screen = (widget.screen() if widget is not None else None) or QGuiApplication.primaryScreen()
    area = screen.availableGeometry()
    return int(area.width() * width), int(area.height() * height)


def _fit_details(box: QMessageBox, details: str) -> None:
    """The details box as wide as its longest line (a traceback's), within 80% of the screen: a message box
    leaves it a few hundred pixels wide, where every line wraps."""
    text = box.findChild(QTextEdit)
    if text is None:
        return
    widest = max(QFontMetrics(text.font()).horizontalAdvance(line) for line in details.splitlines() or [""])
    text.setMinimumWidth(min(widest + 40, _screen_share(box, 0.8, 0.8)[0]))


def choose_paths(parent: QWidget | None, title: str, start: str, filters: str, *, save: bool = False,
                 many: bool = False) -> list[str]:
    """A file dialog sized to show its columns whole (a static QFileDialog opens too narrow for them): the
    files chosen, or none when cancelled. ``save`` asks for a new file, ``many`` lets several be picked."""
    dialog = QFileDialog(parent, title, start, filters)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave if save else QFileDialog.AcceptMode.AcceptOpen)
    dialog.setFileMode(QFileDialog.FileMode.AnyFile if save else
                       QFileDialog.FileMode.ExistingFiles if many else QFileDialog.FileMode.ExistingFile)
    dialog.setViewMode(QFileDialog.ViewMode.Detail)
    if save and start:
        dialog.selectFile(start)
    width, height = _screen_share(parent, 0.9, 0.85)
    dialog.resize(min(900, width), min(560, height))
    return dialog.selectedFiles() if dialog.exec() else []
