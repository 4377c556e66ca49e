"""Choosing a model for the workbench (a source to merge, a file to compare with, a template): a file or an address.

The Open URL dialog with its recent addresses, plus Browse… for a file on disk (which accepts at
once), so every picker takes an ``https://`` or ``hf://`` address wherever it takes a path. The
pickers open what is chosen in a worker, as they open files, so a slow server never freezes the window.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialogButtonBox, QPushButton, QWidget

from engine import Location, RemoteLocation, is_url, location, split_struct
from gui import settings
from gui.dialogs import MODEL_FILES, choose_paths
from gui.open_url import OpenUrlDialog

BROWSE_BUTTON = "browseFile"
RUST_FILES = "Burn model source (*.rs)"
TEMPLATE_HINT = (" A template may also be the Burn model's Rust source: <b>model.rs</b>, or its crate's <b>src/</b> "
                 "folder (add <b>::Net</b> to name the struct); nothing is compiled or run.")
HINT = ("A model file on disk (<b>Browse…</b>, or type its path), an <b>https://</b> address, a Hub page "
        "(…/blob/…) or <b>hf://</b>ORG/REPO[@REVISION]/PATH. An address is read by byte ranges: only what is "
        "needed is downloaded.")


class ModelPicker(OpenUrlDialog):
    """A path or an address; Open is enabled for an existing file or a URL (and a folder, for a template: a crate's
    ``src/`` read as the model's Rust source)."""

    def __init__(self, parent: QWidget | None, title: str, folder: str, template: bool = False) -> None:
        self.folder = folder  # where Browse… starts
        self.template = template
        super().__init__(parent, title, HINT + (TEMPLATE_HINT if template else ""))
        self.label.setText("File or address:")
        self.box.lineEdit().setPlaceholderText("/path/to/model.safetensors, hf://ORG/REPO/PATH or https://…")
        self.browse = QPushButton("Browse…")
        self.browse.setObjectName(BROWSE_BUTTON)
        self.browse.clicked.connect(self._browse)
        self.buttons.addButton(self.browse, QDialogButtonBox.ButtonRole.ActionRole)

    def choice(self) -> Location:
        return location(self.url())

    def _changed(self, *_: object) -> None:
        text = self.url()
        local = Path(text).expanduser()
        if self.template:  # the model's Rust source: a file or a folder, either with ::Struct
            local = split_struct(local)[0]
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(
            is_url(text) or (bool(text) and (local.is_file() or (self.template and local.is_dir()))))

    def _browse(self) -> None:
        models, rest = MODEL_FILES.split(";;", 1)
        filters = f"{models};;{RUST_FILES};;{rest}" if self.template else MODEL_FILES
        path = next(iter(choose_paths(self, self.windowTitle(), self.folder, filters)), "")
        if path:
            self.box.setEditText(path)
            self.accept()


def choose_model(parent: QWidget | None, title: str, near: Location | None = None,
                 template: bool = False) -> Location | None:
    """Ask for a model file or address (``near``: a file whose folder Browse… starts in); None when cancelled.
    A ``template`` may also be the model's Rust source: a ``.rs`` file, a folder, either with ``::Struct``."""
    folder = str(near.parent) if isinstance(near, Path) else ""
    picker = ModelPicker(parent, title, folder, template)
    if picker.exec() != ModelPicker.DialogCode.Accepted:
        return None
    chosen = picker.choice()
    if isinstance(chosen, RemoteLocation):
        settings.remember_url(str(chosen))
    elif not chosen.is_absolute():
        chosen = chosen.expanduser().absolute()
    return chosen
