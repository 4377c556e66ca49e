"""File › Open URL…: a model on an HTTP(S) server or the Hugging Face Hub, by address, with recent addresses.

The dialog only takes the address; the window opens it in a worker like any file (only the index is
fetched), so a slow server never freezes the window and the busy bar's Cancel abandons it.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from engine import is_url
from gui import settings

URL_BOX = "urlBox"
HINT = ("An <b>https://</b> address of a model file, a Hub page (…/blob/…), or "
        "<b>hf://</b>ORG/REPO[@REVISION]/PATH. Only the file's index is downloaded to open it; tensors are fetched "
        "when shown or converted. A sharded model opens from its <i>*.index.json</i>. Gated and private Hub files "
        "use HF_TOKEN or the token saved by <code>hf auth login</code>, sent to the Hub only.")


class OpenUrlDialog(QDialog):
    """An address, typed or chosen from the recent ones; ``gui.model_picker`` adds a file on disk to it."""

    def __init__(self, parent: QWidget | None = None, title: str = "Open URL", hint: str = HINT) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setMinimumWidth(560)
        layout = QVBoxLayout(self)
        self.box = QComboBox()
        self.box.setObjectName(URL_BOX)
        self.box.setEditable(True)
        self.box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.box.addItems(settings.recent_urls())
        self.box.setCurrentText("")
        self.box.lineEdit().setPlaceholderText("hf://ORG/REPO/model.safetensors or https://…")
        self.box.lineEdit().textChanged.connect(self._changed)
        self.hint = QLabel(hint)
        self.hint.setWordWrap(True)
        self.hint.setProperty("role", "hint")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.label = QLabel("Address:")
        layout.addWidget(self.label)
        layout.addWidget(self.box)
        layout.addWidget(self.hint)
        layout.addWidget(self.buttons)
        self._changed()

    def url(self) -> str:
        return self.box.currentText().strip()

    def _changed(self, *_: object) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(is_url(self.url()))
