"""The metadata an export writes, as an editable Key/Value table prefilled with what ``convert`` would write.

The prefilled fields depend on the chosen format (a SafeTensors source's ``format`` stays ``format`` in a
SafeTensors file and becomes ``safetensors.format`` in a Burnpack), so they are derived again whenever the
format or the plan changes; what the user typed, changed or removed is kept across those changes.
"""

from __future__ import annotations

from typing import Mapping

from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


class MetadataSection(QGroupBox):
    """``metadata_table`` with ``add_button`` and ``remove_button`` under it, and a hint."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Metadata", parent)
        self._derived: dict[str, str] = {}  # the fields last derived, to tell them from the user's edits
        self.metadata_table = table = QTableWidget(0, 2)
        table.setObjectName("exportMetadata")
        table.setHorizontalHeaderLabels(["Key", "Value"])
        table.verticalHeader().hide()
        table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 10)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        table.horizontalHeader().setStretchLastSection(True)
        self.add_button = QPushButton("Add Row")
        self.add_button.clicked.connect(lambda: self.add_row("", "", edit=True))
        self.remove_button = QPushButton("Remove Row")
        self.remove_button.clicked.connect(self.remove_selected)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        hint = QLabel("Text stored in the file's header, as the command line writes it for the chosen format. "
                      "The producer and, when the recipe changes tensors, its digest are always recorded; edit "
                      "their values here.")
        hint.setProperty("role", "hint")
        hint.setWordWrap(True)
        column = QVBoxLayout(self)
        column.addWidget(table)
        column.addLayout(buttons)
        column.addWidget(hint)

    def metadata(self) -> dict[str, str]:
        """The table as text to text; rows without a key are ignored, a later key wins."""
        out = {}
        for row in range(self.metadata_table.rowCount()):
            key, value = (self.metadata_table.item(row, c) for c in (0, 1))
            name = key.text().strip() if key is not None else ""
            if name:
                out[name] = value.text() if value is not None else ""
        return out

    def derive(self, fields: Mapping[str, str]) -> None:
        """Show ``fields`` (what the export writes now), keeping the user's own rows, values and removals."""
        shown = self.metadata()
        edited = {key: value for key, value in shown.items() if self._derived.get(key) != value}
        removed = set(self._derived) - set(shown)
        self._derived = dict(fields)
        self.metadata_table.setRowCount(0)
        for key, value in {**{k: v for k, v in fields.items() if k not in removed}, **edited}.items():
            self.add_row(key, value)

    def add_row(self, key: str, value: str, edit: bool = False) -> int:
        table = self.metadata_table
        row = table.rowCount()
        table.insertRow(row)
        table.setItem(row, 0, QTableWidgetItem(key))
        table.setItem(row, 1, QTableWidgetItem(value))
        if edit:
            table.setCurrentCell(row, 0)
            table.editItem(table.item(row, 0))
        return row

    def remove_selected(self) -> None:
        rows = sorted({index.row() for index in self.metadata_table.selectedIndexes()}, reverse=True)
        for row in rows:
            self.metadata_table.removeRow(row)
