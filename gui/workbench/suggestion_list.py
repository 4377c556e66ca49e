"""The diff's suggestions: each chain of recipe changes engine ``suggest`` proved, and Apply.

A suggestion's label (what it changes and how many tensors it makes load) wraps onto as many lines as it needs:
it is never cut at any width. Its tooltip adds the changes in the recipe's terms, each step with what it fixes,
and every pair the chain makes (``conv1.weight → conv1.weight [8, 1, 3, 3]``), so they are read before Apply.
Where the dock is too short for the lines (docks side by side at 1024x640), the rows scroll rather than ask
the window for more. Applying is the document's business: ``applyRequested`` says which suggestion, and the
whole chain is one undoable edit.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from engine.surgery import Suggestion
from gui.widgets import MIN_PANEL, TOOLTIP_CHARS, clipped

BREAK = "\u200b"  # a zero-width space: where a long name may wrap (after its dots and underscores)
_BREAKABLE = re.compile(r"(?<=[._/])(?=\S)")


def wrappable(text: str) -> str:
    """``text`` with a break opportunity after each dot, underscore and slash: Qt wraps a label at spaces only,
    and a long dotted name would otherwise widen the dock to its own length."""
    return _BREAKABLE.sub(BREAK, text)


class WrappedLabel(QLabel):
    """Plain text that wraps to the width it is given; ``full_text`` is the text without its break marks."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.full_text = ""
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)  # a taller row keeps it in view
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.MinimumExpanding)
        self.set_text(text)

    def set_text(self, text: str) -> None:
        self.full_text = clipped(text)
        self.setText(wrappable(self.full_text))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """One line: the height it needs is its height for the width it gets (Qt's own guess is for a width
        a few words wide, many lines)."""
        return QSize(super().minimumSizeHint().width(), self.fontMetrics().lineSpacing())


class SuggestionRow(QFrame):
    """One suggestion: Apply, then its label (wrapped, never cut); changes, steps and pairs in its tooltip."""

    def __init__(self, suggestion: Suggestion, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("suggestionRow")
        self.suggestion = suggestion
        self.title = WrappedLabel(suggestion.label)
        self.title.setObjectName("suggestionTitle")
        self.title.setToolTip(clipped("\n".join([suggestion.label, suggestion.terms,
                                                 *(step.line("step") for step in suggestion.steps),
                                                 *(pair.line() for pair in suggestion.pairs)]), TOOLTIP_CHARS))
        self.apply_button = QPushButton("Apply")
        self.apply_button.setObjectName("suggestionApply")
        self.apply_button.setToolTip(clipped(f"Change the recipe: {suggestion.terms} (one step: undo with Ctrl+Z)"))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.apply_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.title, 1)


class RowsArea(QScrollArea):
    """The rows, as tall as their wrapped text at the width they are given, and scrolled where the dock is shorter.

    A trap: a scroll area that resizes its widget uses the widget's minimum size, which Qt guesses for a label a
    few words wide (many lines): the rows are sized here instead, to their height for the viewport's width.
    """

    def __init__(self, rows: QWidget) -> None:
        super().__init__()
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.setWidget(rows)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(MIN_PANEL.width(), self.widget().heightForWidth(self.width()))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        first = self.widget().layout().itemAt(0)
        line = first.widget().apply_button.sizeHint().height() if first is not None else 0  # the first row's line
        return QSize(MIN_PANEL.width(), min(self.sizeHint().height(), line))

    def fit_rows(self) -> None:
        """Size the rows to the viewport's width and the height their text needs there."""
        rows, width = self.widget(), self.viewport().width()
        rows.resize(width, rows.heightForWidth(width))

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Resize:  # the area's width, or a scroll bar come or gone
            self.fit_rows()
        return super().viewportEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.updateGeometry()  # another width, another height


class SuggestionList(QWidget):
    """The proven suggestions, best first; hidden while there are none."""

    applyRequested = Signal(object)  # the Suggestion whose Apply was clicked

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("suggestionList")
        self.suggestions: list[Suggestion] = []
        rows = QWidget()
        self._layout = QVBoxLayout(rows)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(4)
        self.area = RowsArea(rows)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.area)
        self.hide()

    def show_suggestions(self, suggestions: list[Suggestion]) -> None:
        self.suggestions = list(suggestions)
        while self._layout.count():
            widget = self._layout.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        for suggestion in self.suggestions:
            row = SuggestionRow(suggestion, self)
            row.apply_button.clicked.connect(lambda _=False, s=suggestion: self.applyRequested.emit(s))
            self._layout.addWidget(row)
        self.setVisible(bool(self.suggestions))
        self.area.fit_rows()
        self.area.updateGeometry()

    def rows(self) -> list[SuggestionRow]:
        return [self._layout.itemAt(i).widget() for i in range(self._layout.count())]  # type: ignore[misc]
