"""The export dialog's last lines: what the export did, then Diff Result Against Source, Close and Export."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget


class ExportFooter(QWidget):
    """``result`` (the outcome, in rich text) above ``diff_button``, ``close_button`` and ``export_button``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.result = QLabel()
        self.result.setObjectName("exportResult")
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.diff_button = QPushButton("Diff Result Against Source")
        self.diff_button.setObjectName("diffResult")
        self.diff_button.setToolTip("Compare the written file with the recipe's result, tensor by tensor and "
                                    "value by value")
        self.diff_button.setEnabled(False)
        self.export_button = QPushButton("Export")
        self.export_button.setObjectName("exportButton")
        self.export_button.setDefault(True)
        self.close_button = QPushButton("Close")
        actions = QHBoxLayout()
        actions.addWidget(self.diff_button)
        actions.addStretch(1)
        actions.addWidget(self.close_button)
        actions.addWidget(self.export_button)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.result)
        column.addLayout(actions)

    def show_result(self, text: str, problem: bool = False) -> None:
        self.result.setText(text)
        self.result.setProperty("role", "problem" if problem else "")
        self.result.style().unpolish(self.result)
        self.result.style().polish(self.result)
