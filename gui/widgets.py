"""Small widgets that keep the window within a laptop screen: scroll areas and labels that elide.

A panel full of forms and buttons asks for its whole height as a minimum; wrapped in ``scrolling`` it asks
for almost nothing, so docks and splitters can shrink it and a 1024x640 screen still holds every state.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy, QWidget

MIN_PANEL = QSize(120, 60)  # the most a wrapped panel asks for: a scroll bar's worth


class _ContentScrollArea(QScrollArea):
    """Asks for its content's size (Qt's own hint caps it at a few dozen lines), so splitters start there."""

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        inner = self.widget()
        return inner.sizeHint().grownBy(self.contentsMargins()) if inner is not None else super().sizeHint()


def scrolling(widget: QWidget, name: str = "") -> QScrollArea:
    """``widget`` in a frameless scroll area that sizes it to the view and asks for no more than MIN_PANEL."""
    area = _ContentScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(widget)
    area.setMinimumSize(MIN_PANEL)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
    if name:
        area.setObjectName(name)
    return area


class ElidedLabel(QLabel):
    """One line that elides in the middle when short of room (``model.enc…layer.0.weight``).

    ``full_text`` is the whole text, also in the tooltip; the shown text stays selectable. Its minimum
    width is small, so a long name never widens the panel or makes the layout jump between selections.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.full_text = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        self.full_text = text
        self.setToolTip(text)
        self._elide()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(40, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        room = max(10, self.contentsRect().width())
        shown = self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideMiddle, room)
        if shown != super().text():
            super().setText(shown)
