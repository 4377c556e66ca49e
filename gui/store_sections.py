"""The sections of a file's tab, one composite widget each: the tree with its bar, and the side panel.

``StoreView`` puts them side by side and wires them; each section only builds and lays out its widgets.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QSplitter,
    QTabWidget,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from gui.loaded_store import LoadedStore
from gui.models.tree_model import Column, TreeModel
from gui.panels.details import DetailsPanel
from gui.panels.file_info import FileInfoPanel
from gui.panels.values import ValuesPanel
from gui.tree_name_delegate import NameDelegate
from gui.widgets import scrolling
from gui.workers import TaskRunner

BASE_ORDERS = {"File order": "file", "Name order": "natural"}  # the tree's order when no header sorts it
VALUE_ROWS = 2  # rows of the value table a short window keeps in view (the details scroll instead)
DETAILS_MINIMUM = 24  # what the details keep when the value table takes the rest


class ValuesFirstSplitter(QSplitter):
    """Details above values: the details (statistics and histogram) get the height they ask for, the value
    table the rest, and at least VALUE_ROWS rows; short of that the details scroll.

    When even a line of details would cost the table its rows (the diff in front on a 640-pixel screen),
    the details fold away (the handle stays, to drag them back) and come back once the height allows. The
    sizes are worked out again at every resize (after the diff closes too) until the user drags the handle;
    they are never carried to the next run, so a fold cannot outlive the squeeze that caused it.
    """

    def __init__(self, values: ValuesPanel, details: QWidget) -> None:
        super().__init__(Qt.Orientation.Vertical)
        self._values = values
        self._details = details
        self.details_folded = False  # folded by this splitter for want of height, not by the user
        self.user_sized = False  # the handle was dragged: the user's sizes stand while they leave the table its rows
        self.splitterMoved.connect(self._dragged)
        details.installEventFilter(self)  # new statistics change what the details ask for

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self._details and event.type() == QEvent.Type.LayoutRequest and not self.user_sized:
            self.keep_value_rows()
        return False

    def _dragged(self) -> None:
        self.user_sized = True
        self.details_folded = False

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.keep_value_rows()

    def keep_value_rows(self) -> None:
        sizes = self.sizes()
        total = sum(sizes)
        if len(sizes) != 2 or total <= 0:
            return
        need = self._values.height_for_rows(VALUE_ROWS)
        if total - need < DETAILS_MINIMUM:
            self.details_folded = self.details_folded or sizes[0] > 0
            self.setSizes([0, total])
            return
        self.details_folded = False
        wanted = sizes[0] if self.user_sized else self._details.sizeHint().height()
        details = max(DETAILS_MINIMUM, min(wanted, total - need))
        self.setSizes([details, total - details])


class TreePane(QWidget):
    """The tensor tree under its bar (the base order and the flat-list switch)."""

    def __init__(self, model: TreeModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree_view = QTreeView()
        self.tree_view.setObjectName("storeTree")
        self.tree_view.setModel(model)
        self.tree_view.setUniformRowHeights(True)  # what keeps 100,000 rows smooth
        self.tree_view.setAlternatingRowColors(True)
        self.tree_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.tree_view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.tree_view.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # keeps a row's end: its recipe word
        self.name_delegate = NameDelegate(self.tree_view)  # hidden DType/Shape columns, drawn in the Name cell
        self.tree_view.setItemDelegateForColumn(Column.NAME, self.name_delegate)
        header = self.tree_view.header()
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # the file's order until a header is clicked
        header.setSortIndicatorClearable(True)  # a third click goes back to it
        self.tree_view.setSortingEnabled(True)
        self.order = QComboBox()
        self.order.setObjectName("treeOrder")
        self.order.addItems(list(BASE_ORDERS))
        self.order.setToolTip("File order is the order the model saved its tensors (its module order); "
                              "name order sorts layer.2 before layer.10. Click a column header to sort by it.")
        self.flat = QToolButton()
        self.flat.setObjectName("flatList")
        self.flat.setText("Flat list")
        self.flat.setCheckable(True)
        self.flat.setToolTip("List every tensor by its full name instead of grouping by dotted prefix")
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        bar.addWidget(self.order)
        bar.addWidget(self.flat)
        bar.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(bar)
        layout.addWidget(self.tree_view, 1)


class SidePanel(QTabWidget):
    """Selection (details above values, in ``selection_split``) and File tabs; the File tab shows first."""

    def __init__(self, loaded: LoadedStore, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.details = DetailsPanel(runner)
        self.values = ValuesPanel(runner)
        self.file_info = FileInfoPanel(loaded)
        details = scrolling(self.details, "detailsScroll")
        self.selection_split = ValuesFirstSplitter(self.values, self.details)
        details.setMinimumHeight(DETAILS_MINIMUM)  # a short window gives the value table its rows first
        self.selection_split.addWidget(details)
        self.selection_split.addWidget(self.values)
        self.selection_split.setStretchFactor(0, 1)  # both scroll, so neither imposes its height
        self.selection_split.setStretchFactor(1, 1)
        self.selection_split.setCollapsible(0, True)  # the details fold away before the value table loses rows
        self.selection_split.setCollapsible(1, False)
        self.addTab(self.selection_split, "Selection")
        self.addTab(self.file_info, "File")
        self.setCurrentWidget(self.file_info)
