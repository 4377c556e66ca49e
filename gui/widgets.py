"""Small widgets that keep the window within a laptop screen: scroll areas and labels that elide.

A panel full of forms and buttons asks for its whole height as a minimum; wrapped in ``scrolling`` it asks
for almost nothing, so docks and splitters can shrink it and a 1024x640 screen still holds every state.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QFrame, QLabel, QLayout, QLayoutItem, QScrollArea, QSizePolicy, QWidget

MIN_PANEL = QSize(120, 60)  # the most a wrapped panel asks for: a scroll bar's worth
# Qt lays out every character of a text it shows, elides or measures (a 3 MB tooltip took 1.2 GB and 5 s),
# so a name from a file reaches Qt clipped: a line to LINE_CHARS, more than any screen shows; a tooltip to
# TOOLTIP_CHARS, which keeps a name of 50,000 segments whole (Copy Name copies any name whole).
LINE_CHARS = 1 << 10
TOOLTIP_CHARS = 1 << 17


def clipped(text: str, limit: int = LINE_CHARS) -> str:
    """``text``, or its start and end around an ellipsis when it is longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return f"{text[:head]}…{text[len(text) - (limit - 1 - head):]}"


BREAK_AFTER = re.compile(r"([./\\_,:;|()\[\]=>-])")  # where a long token may wrap: after a separator
ZERO_WIDTH_SPACE = "\u200b"
LONGEST_RUN = 24  # characters a token may run without a chance to wrap


def breakable(text: str) -> str:
    """``text`` with a chance to wrap after every separator of a long token (a regex, a tensor name), and every
    LONGEST_RUN characters of a run without one: a word-wrapped label then never asks for more width than its
    dock has, so no dock scrolls sideways however long a typed pattern grows."""
    def token(word: str) -> str:
        if len(word) <= LONGEST_RUN:
            return word
        parts = BREAK_AFTER.sub(lambda m: m.group(1) + ZERO_WIDTH_SPACE, word).split(ZERO_WIDTH_SPACE)
        runs = [part[i:i + LONGEST_RUN] for part in parts for i in range(0, max(len(part), 1), LONGEST_RUN)]
        return ZERO_WIDTH_SPACE.join(runs)
    return " ".join(token(word) for word in text.split(" "))


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
        self.setToolTip(clipped(text, TOOLTIP_CHARS))
        self._elide()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(40, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        room = max(10, self.contentsRect().width())
        shown = self.fontMetrics().elidedText(clipped(self.full_text), Qt.TextElideMode.ElideMiddle, room)
        if shown != super().text():
            super().setText(shown)


class FlowLayout(QLayout):
    """Buttons in a row that wraps onto the next line when the panel is narrow (Qt's flow layout example).

    A row of four buttons asks for its whole width as a minimum; this one asks for its widest button, so a
    dock at its default width needs no horizontal scroll bar.
    """

    def __init__(self, parent: QWidget | None = None, spacing: int = 6) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setContentsMargins(0, 0, 0, 0)
        self.setSpacing(spacing)

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 - Qt's name
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt's name
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 - Qt's name
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 - Qt's name
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt's name
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt's name
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 - Qt's name
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        width = sum(item.sizeHint().width() for item in self._items) + self.spacing() * max(0, len(self._items) - 1)
        height = max((item.sizeHint().height() for item in self._items), default=0)
        return QSize(width, height).grownBy(self.contentsMargins())

    def minimumSize(self) -> QSize:  # noqa: N802 - Qt's name
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        return size.grownBy(self.contentsMargins())

    def _arrange(self, rect: QRect, move: bool) -> int:
        """Place the items left to right, wrapping; the height they take at ``rect``'s width."""
        margins = self.contentsMargins()
        area = rect.marginsRemoved(margins)
        x, y, line = area.x(), area.y(), 0
        for item in self._items:
            hint = item.sizeHint()
            if x + hint.width() > area.right() + 1 and line > 0:
                x, y, line = area.x(), y + line + self.spacing(), 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self.spacing()
            line = max(line, hint.height())
        return y + line - rect.y() + margins.bottom()
