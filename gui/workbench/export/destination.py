"""Where the export goes: the path, a Browse… button, and a warning as soon as the path names a file that exists."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget


class DestinationRow(QWidget):
    """``path_edit`` and ``browse`` on one line, ``exists_note`` under them (shown only when the file exists)."""

    def __init__(self, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path_edit = QLineEdit(str(path))
        self.path_edit.setObjectName("exportPath")
        self.path_edit.setMinimumWidth(300)
        self.browse = QPushButton("Browse…")
        self.exists_note = QLabel()
        self.exists_note.setObjectName("exportExists")
        self.exists_note.setProperty("role", "problem")
        self.exists_note.setWordWrap(True)
        line = QHBoxLayout()
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(self.path_edit, 1)
        line.addWidget(self.browse)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(line)
        column.addWidget(self.exists_note)

    def path(self) -> Path | None:
        """The typed path (``~`` expanded), None while the field is empty."""
        text = self.path_edit.text().strip()
        return Path(text).expanduser() if text else None

    def show_exists(self) -> None:
        """Point out right away that exporting replaces an existing file (and that it stays until the end)."""
        path = self.path()
        exists = path is not None and path.exists()
        self.exists_note.setText(f"⚠ {path.name} exists: exporting replaces it (the old file stays until the new "
                                 f"one is complete)." if exists and path is not None else "")
        self.exists_note.setVisible(exists)
