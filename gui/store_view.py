"""One opened file in its tab: the tree on the left; the selection's details and values, or the file, on the right."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QSplitter, QTabWidget, QTreeView, QVBoxLayout, QWidget

from engine.surgery.modules import ModuleGuess, infer_modules, logical_leaf
from engine.tree import TreeNode, build_tree, filter_entries, name_matcher
from gui.loaded_store import LoadedStore
from gui.models.tree_model import Column, TreeModel
from gui.panels.details import DetailsPanel
from gui.panels.file_info import FileInfoPanel
from gui.panels.values import ValuesPanel
from gui.workbench.document import RecipeDocument
from gui.workers import TaskRunner

EXPAND_LIMIT = 500  # a filtered tree opens fully when it holds at most this many tensors
SMALL_STORE = 64  # a store this small opens fully expanded: everything in it at a glance
INFER_DELAY_MS = 150  # module inference starts once the tree has painted


@dataclass(frozen=True)
class FilterResult:
    matches: int
    total: int
    error: str | None = None


class StoreView(QWidget):
    """The tab of one store. ``selected`` is emitted with the node now shown in the details."""

    selected = Signal(object)

    def __init__(self, loaded: LoadedStore, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loaded = loaded
        self.store = loaded.store
        self._full_tree = loaded.tree
        self._runner = runner
        self.modules: dict[str, ModuleGuess] | None = None
        self.document: RecipeDocument | None = None  # made when the user starts surgery on this file
        self.filter_text = ""
        self.filter_regex = False
        self.filter_result = FilterResult(len(self.store.entries), len(self.store.entries))

        self.model = TreeModel(loaded.tree, self)
        self.tree_view = QTreeView()
        self.tree_view.setObjectName("storeTree")
        self.tree_view.setModel(self.model)
        self.tree_view.setUniformRowHeights(True)  # what keeps 100,000 rows smooth
        self.tree_view.setAlternatingRowColors(True)
        self.tree_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.tree_view.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self._size_columns()
        if loaded.tree.tensors <= SMALL_STORE:
            self.tree_view.expandAll()
        self.tree_view.selectionModel().currentChanged.connect(self._current_changed)

        self.details = DetailsPanel(runner)
        self.values = ValuesPanel(runner)
        self.file_info = FileInfoPanel(loaded)
        self.selection_split = QSplitter(Qt.Orientation.Vertical)
        self.selection_split.addWidget(self.details)
        self.selection_split.addWidget(self.values)
        self.selection_split.setStretchFactor(0, 0)  # details take what they need, values the rest
        self.selection_split.setStretchFactor(1, 1)
        self.side = QTabWidget()
        self.side.addTab(self.selection_split, "Selection")
        self.side.addTab(self.file_info, "File")
        self.side.setCurrentWidget(self.file_info)

        self.main_split = QSplitter(Qt.Orientation.Horizontal)
        self.main_split.addWidget(self.tree_view)
        self.main_split.addWidget(self.side)
        self.main_split.setStretchFactor(0, 3)
        self.main_split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.main_split)

        # Inference of 100,000 module types holds the GIL for a while: let the tree paint first.
        QTimer.singleShot(INFER_DELAY_MS, self, lambda: runner.run(lambda cancelled: infer_modules(self.store.entries),
                                                                   self._modules_ready))

    def _size_columns(self) -> None:
        header = self.tree_view.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(Column.NAME, QHeaderView.ResizeMode.Stretch)
        metrics = self.tree_view.fontMetrics()
        samples = {Column.DTYPE: "F8_E4M3 ", Column.SHAPE: "[151936, 4096]  ", Column.PARAMS: "9,999,999,999  ",
                   Column.SIZE: "1023 MiB  "}
        for column, sample in samples.items():
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(column, int(metrics.horizontalAdvance(sample) * 1.15) + 12)

    @property
    def path(self) -> Path:
        return self.store.path

    def splitters(self) -> dict[str, QSplitter]:
        """Splitters whose sizes the window remembers between runs."""
        return {"tree": self.main_split, "selection": self.selection_split}

    def start_surgery(self) -> RecipeDocument:
        """This tab's recipe document (made on first use); its plans mark the tree."""
        if self.document is None:
            self.document = RecipeDocument(self.store, parent=self)
            self.document.planReady.connect(self._plan_ready)
        return self.document

    def favour_tree(self) -> None:
        """The workbench docks take room beside the tab: fold the details away (Ctrl+1 / Ctrl+2 bring them back)."""
        self.main_split.setSizes([sum(self.main_split.sizes()), 0])

    def show_side(self) -> None:
        """Unfold the details beside the tree when they were folded away."""
        sizes = self.main_split.sizes()
        if sizes[1] == 0:
            width = sum(sizes)
            self.main_split.setSizes([width * 3 // 5, width - width * 3 // 5])

    def _plan_ready(self, _plan: object) -> None:
        if self.document is not None:
            self.model.set_marks(self.document.marks)

    def close_store(self) -> None:
        if self.document is not None:
            self.document.close()
        self.details.cancel()
        self.values.show_entry(None)
        self.store.close()

    # --- selection --------------------------------------------------------------------------------
    def current_node(self) -> TreeNode | None:
        index = self.tree_view.currentIndex()
        return self.model.node(index) if index.isValid() else None

    def select(self, path: str) -> bool:
        """Select a tensor or group by its full dotted path; False when the current tree has none."""
        node = self.model.root.find(path)
        if node is None or node is self.model.root:
            return False
        index = self.model.index_of(node)
        parent = index.parent()
        while parent.isValid():
            self.tree_view.expand(parent)
            parent = parent.parent()
        self.tree_view.setCurrentIndex(index)
        self.tree_view.scrollTo(index)
        return True

    def _current_changed(self, current: QModelIndex, previous: QModelIndex) -> None:
        node = self.model.node(current) if current.isValid() else None
        self.details.show_node(node, self._module_of(node))
        self.values.show_entry(node.entry if node is not None else None)
        if node is not None:
            self.side.setCurrentIndex(0)
        self.selected.emit(node)

    def _module_of(self, node: TreeNode | None) -> ModuleGuess | None:
        if node is None or self.modules is None:
            return None
        path = logical_leaf(node.entry.name)[0] if node.entry is not None else node.path
        return self.modules.get(path)

    def _modules_ready(self, modules: dict[str, ModuleGuess]) -> None:
        self.modules = modules
        self.details.set_module(self._module_of(self.current_node()))

    # --- filtering --------------------------------------------------------------------------------
    def apply_filter(self, text: str, regex: bool) -> FilterResult:
        """Show only tensors whose full name matches; an invalid regex leaves the tree as it was."""
        total = len(self.store.entries)
        self.filter_text, self.filter_regex = text, regex
        if text:
            try:
                matcher = name_matcher(text, regex=regex)
            except re.error as exc:
                self.filter_result = FilterResult(self.filter_result.matches, total, f"invalid regex: {exc}")
                return self.filter_result
            tree = build_tree(filter_entries(self.store.entries, matcher))
        else:
            tree = self._full_tree
        current = self.current_node()
        self.model.set_root(tree)
        if text and tree.tensors <= EXPAND_LIMIT:
            self.tree_view.expandAll()
        if current is None or not self.select(current.path):
            self._current_changed(QModelIndex(), QModelIndex())
        self.filter_result = FilterResult(tree.tensors, total)
        return self.filter_result
