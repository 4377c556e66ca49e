"""The diff's suggestions: each recipe change engine ``suggest`` proved, with the pairs it makes, and Apply.

A user sees what a change would pair (``conv1.weight → conv1.weight [8, 1, 3, 3]``) before applying it; the
whole list of pairs is in the tooltip. Applying is the document's business: ``applyRequested`` says which.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from engine.surgery.suggest import Suggestion
from gui.resources import monospace

PAIRS_SHOWN = 3  # pairs listed under a suggestion; the tooltip lists them all


class SuggestionRow(QFrame):
    """One suggestion: what it does and fixes, the first pairs it makes, and its Apply button."""

    def __init__(self, suggestion: Suggestion, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("suggestionRow")
        self.suggestion = suggestion
        self.title = QLabel(f"<b>{html.escape(suggestion.label)}</b> · {html.escape(suggestion.change)}")
        self.title.setWordWrap(True)
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # wraps, never widens
        lines = [pair.line() for pair in suggestion.pairs]
        more = len(lines) - PAIRS_SHOWN
        self.pairs = QLabel("\n".join(lines[:PAIRS_SHOWN] + ([f"… and {more:,} more"] if more > 0 else [])))
        self.pairs.setObjectName("suggestionPairs")
        self.pairs.setFont(monospace())
        self.pairs.setProperty("role", "hint")
        self.pairs.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.pairs.setToolTip("\n".join(lines))
        self.pairs.setVisible(bool(lines))
        self.apply_button = QPushButton("Apply")
        self.apply_button.setObjectName("suggestionApply")
        self.apply_button.setToolTip(f"Change the recipe: {suggestion.change} (undo with Ctrl+Z)")
        text = QVBoxLayout()
        text.setContentsMargins(0, 0, 0, 0)
        text.setSpacing(0)
        text.addWidget(self.title)
        text.addWidget(self.pairs)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 2, 0, 2)
        row.addLayout(text, 1)
        row.addWidget(self.apply_button)


class SuggestionList(QWidget):
    """The proven suggestions, best first; hidden while there are none."""

    applyRequested = Signal(object)  # the Suggestion whose Apply was clicked

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("suggestionList")
        self.suggestions: list[Suggestion] = []
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
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

    def rows(self) -> list[SuggestionRow]:
        return [self._layout.itemAt(i).widget() for i in range(self._layout.count())]  # type: ignore[misc]
