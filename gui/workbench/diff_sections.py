"""The diff view's sections, one composite widget each: what is compared, the status filters, the pair table
and the selected pair's details. ``DiffPanel`` puts them together and wires them to its document and workers.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gui.models.diff_model import STATUSES, Column, DiffFilterModel, status_icon
from gui.panels.histogram import HistogramWidget
from gui.resources import icon, monospace
from gui.workbench.diff_bars import DeltaBarDelegate


class DiffHeader(QWidget):
    """What the result is compared with, the comparison's message and progress, and the buttons that choose."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.against = QLabel("Nothing to compare with yet")
        self.against.setObjectName("diffAgainst")
        self.against.setProperty("role", "heading")
        self.against.setMinimumWidth(60)  # its whole text while there is room; clipped (the tooltip has it) when not
        self.template_button = QPushButton("Template")
        self.template_button.setObjectName("diffTemplate")
        self.open_button = QPushButton(icon("open"), "Compare with…")
        self.open_button.setToolTip("Open another model file and compare the recipe's result with it")
        self.values_box = QCheckBox("Compare values")
        self.values_box.setToolTip("Also compare every pair's values (reads both files; a template's values "
                                   "are usually untrained, so this is off for templates)")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setMaximumHeight(16)
        self.cancel_button = QPushButton("Cancel")
        self.message = QLabel()
        self.message.setObjectName("diffMessage")
        self.message.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # clips, never widens
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.against)
        row.addWidget(self.message, 1)
        for widget in (self.progress, self.cancel_button, self.values_box, self.template_button, self.open_button):
            row.addWidget(widget)


class StatusFilters(QWidget):
    """One check box per status (with its count) and a name filter: ``statusToggled(key, on)``, ``textChanged``."""

    statusToggled = Signal(str, bool)
    textChanged = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(10)
        self.boxes: dict[str, QCheckBox] = {}
        for key, status in STATUSES.items():
            box = QCheckBox(status.word)
            box.setObjectName(f"status-{key}")
            box.setIcon(status_icon(key))
            box.setChecked(True)
            box.setToolTip(f"Show {status.word} rows: {status.meaning}")
            box.toggled.connect(lambda on, k=key: self.statusToggled.emit(k, on))
            self.boxes[key] = box
            row.addWidget(box)
        row.addStretch(1)
        self.edit = QLineEdit()
        self.edit.setObjectName("diffFilter")
        self.edit.setPlaceholderText("Filter by name")
        self.edit.setClearButtonEnabled(True)
        self.edit.addAction(icon("search"), QLineEdit.ActionPosition.LeadingPosition)
        self.edit.setMinimumWidth(120)
        self.edit.textChanged.connect(self.textChanged)
        row.addWidget(self.edit)


class PairTable(QTableView):
    """The pairs, one row each, sortable; the max |Δ| column draws a bar (its width fits the longest number)."""

    def __init__(self, proxy: DiffFilterModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diffTable")
        self.setModel(proxy)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)  # as the preview's
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        for column in (Column.SOURCE_NAME, Column.OTHER_NAME):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # rows come in natural order until a click
        self.setSortingEnabled(True)
        self.setItemDelegateForColumn(Column.DELTA, DeltaBarDelegate(self))
        header.setSectionResizeMode(Column.DELTA, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(Column.DELTA, self.fontMetrics().horizontalAdvance("max |Δ| 0.000e-00") + 12)


class PairDetails(QWidget):
    """The selected pair: its names, what its status means, name suggestions, value difference and histogram."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("pairDetails")
        self.title = QLabel()
        self.title.setObjectName("pairTitle")
        self.title.setFont(monospace())
        self.title.setWordWrap(True)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note = QLabel("Select a row to see how the pair differs.")
        self.note.setWordWrap(True)
        self.note.setProperty("role", "hint")
        self.suggestions = QWidget()
        self.suggestions.setLayout(QVBoxLayout())
        self.suggestions.layout().setContentsMargins(0, 0, 0, 0)
        self.values_label = QLabel()
        self.values_label.setObjectName("pairValues")
        self.values_label.setWordWrap(True)
        self.histogram = HistogramWidget()
        self.histogram.setObjectName("differenceHistogram")
        self.histogram_caption = QLabel("Histogram of source − other")
        self.histogram_caption.setProperty("role", "hint")
        column = QVBoxLayout(self)
        column.setContentsMargins(8, 0, 0, 0)
        for widget in (self.title, self.note, self.suggestions, self.values_label, self.histogram,
                       self.histogram_caption):
            column.addWidget(widget)
        column.addStretch(1)
        self.setMinimumWidth(200)
