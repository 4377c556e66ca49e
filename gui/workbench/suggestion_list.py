"""The diff's suggestions: each recipe change engine ``suggest`` proved, with the pairs it makes, and Apply.

A user sees what a change would pair (``conv1.weight → conv1.weight [8, 1, 3, 3]``) before applying it, on
its line and, all of them, in its tooltip. Applying is the document's business: ``applyRequested`` says which.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from engine.surgery.suggest import Suggestion
from gui.widgets import ElidedLabel

PAIRS_SHOWN = 2  # pairs on a suggestion's line; its tooltip lists them all


class SuggestionRow(QFrame):
    """One suggestion on one line: Apply, what it does and fixes, then the first pairs it makes.

    The line elides when the dock is narrow; its tooltip holds the whole text and every pair.
    """

    def __init__(self, suggestion: Suggestion, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("suggestionRow")
        self.suggestion = suggestion
        lines = [pair.line() for pair in suggestion.pairs]
        more = len(lines) - PAIRS_SHOWN
        shown = ", ".join(lines[:PAIRS_SHOWN]) + (f", … and {more:,} more" if more > 0 else "")
        self.title = ElidedLabel(f"{suggestion.label} · {suggestion.change}" + (f" · pairs {shown}" if lines else ""))
        self.title.setObjectName("suggestionTitle")
        self.title.setToolTip("\n".join([f"{suggestion.label}", f"{suggestion.change}", *lines]))
        self.apply_button = QPushButton("Apply")
        self.apply_button.setObjectName("suggestionApply")
        self.apply_button.setToolTip(f"Change the recipe: {suggestion.change} (undo with Ctrl+Z)")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.apply_button)
        row.addWidget(self.title, 1)


class SuggestionList(QWidget):
    """The proven suggestions, best first, one line each; hidden while there are none."""

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
