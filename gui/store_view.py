"""One opened file in its tab: the tree on the left; the selection's details and values, or the file, on the right."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QEvent, QModelIndex, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QHeaderView, QSplitter, QVBoxLayout, QWidget

from engine import PatternError, TreeNode, build_tree, collector_paused, filter_entries, first_levels, name_matcher
from engine.surgery import ModuleFinder, ModuleGuess, logical_leaf
from gui.loaded_store import SMALL_STORE, LoadedStore, freeze_lasting_objects, release_frozen_objects
from gui.models.tree_model import Column, TreeModel
from gui.resources import monospace
from gui.store_sections import BASE_ORDERS, SidePanel, TreePane
from gui.workbench.document import RecipeDocument
from gui.workbench.plan_result import PlanResult
from gui.workers import TaskRunner

BACKGROUND_FILTER_FROM = 5_000  # tensors from which a typed filter is built in a worker (a few ms below)
EXPAND_LIMIT = 500  # a filtered tree opens fully when it holds at most this many tensors
NAME_SHARE = 0.42  # the Name column keeps at least this share of the tree's width; the others shrink first
COLUMN_SAMPLES = {Column.DTYPE: "BF16", Column.SHAPE: "[128, 64, 3, 3]", Column.PARAMS: "99,999,999",
                  Column.SIZE: "999 MiB", Column.RECIPE: "renamed from weight"}  # usual content; longer elides (tooltip)
DTYPE_CAP = "F8_E4M3FNUZ"  # the DType column grows to the store's longest dtype name (QFLOAT, BOOL(U32)) up to this
CELL_PADDING = 20  # pixels a cell's text needs beyond its own width (margins, the header's sort arrow)
HIDE_FIRST = (Column.SIZE, Column.PARAMS, Column.DTYPE, Column.SHAPE)  # what a narrow tree gives up, in order
COLUMN_MINIMUM = 36
# Formats whose file order says nothing of the model: the safetensors library writes names sorted as text
# (``layers.0, layers.1, layers.10, ... layers.2``), so such a file opens in name order; file order is one click away.
NAME_ORDER_FORMATS = ("safetensors",)
LEAF_CAP = 40  # characters of the longest last segment the Name column makes room for
COLLAPSE_INTO_NAME = (Column.DTYPE, Column.SHAPE)  # hidden, these are drawn at the end of the Name cell


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
        self._longest_leaf: str | None = None  # the longest last segment of a name, found when columns are fitted
        self.modules = ModuleFinder(self.store.entries)  # the selection's module type, guessed when shown
        self.document: RecipeDocument | None = None  # made when the user starts surgery on this file
        self.filter_text = ""
        self.filter_regex = False
        self.filter_result = FilterResult(len(self.store.entries), len(self.store.entries))
        self._shown: TreeNode | None = None  # the node the details and values show
        self._filter_generation = 0  # which filter request is the newest

        self.model = TreeModel(loaded.tree, self)
        tree_pane = TreePane(self.model)
        self.tree_view, self.name_delegate = tree_pane.tree_view, tree_pane.name_delegate
        self.order, self.flat = tree_pane.order, tree_pane.flat
        self.tree_view.viewport().installEventFilter(self)
        self._size_columns()
        # A large store's first levels are worked out once its tree has painted, then opened.
        self.levels_pending, self._levels_asked = loaded.opened is None, False
        self._opened_levels: list[TreeNode] = loaded.opened or []  # the groups open at first (a cleared filter's too)
        self._expand_first_levels(loaded.tree, self._opened_levels)
        self.tree_view.selectionModel().currentChanged.connect(self._current_changed)
        self.order.currentTextChanged.connect(self._base_order_changed)
        self.flat.toggled.connect(lambda _: self._rebuild())
        if self.store.format in NAME_ORDER_FORMATS:
            self.order.setCurrentText("Name order")

        self.side = SidePanel(loaded, runner)
        self.details, self.values, self.file_info = self.side.details, self.side.values, self.side.file_info
        self.selection_split = self.side.selection_split

        self.main_split = QSplitter(Qt.Orientation.Horizontal)
        self.main_split.addWidget(tree_pane)
        self.main_split.addWidget(self.side)
        self.main_split.setStretchFactor(0, 3)
        self.main_split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.main_split)

    def _size_columns(self) -> None:
        header = self.tree_view.header()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(COLUMN_MINIMUM)
        header.setSectionResizeMode(Column.NAME, QHeaderView.ResizeMode.Stretch)
        for column in COLUMN_SAMPLES:
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
        self._fit_columns()

    def _fit_columns(self) -> None:
        """Columns take what their usual content needs; when the tree is narrow the least useful ones hide,
        so Name keeps NAME_SHARE of the width and no column shows a squeezed ``2 t…ors``."""
        header = self.tree_view.header()
        metrics = QFontMetrics(monospace())
        wanted = {column: metrics.horizontalAdvance(sample) + CELL_PADDING for column, sample in COLUMN_SAMPLES.items()}
        wanted[Column.DTYPE] = self._dtype_width(metrics)
        shown = [c for c in COLUMN_SAMPLES if c != Column.RECIPE or self.model.has_marks]
        viewport = self.tree_view.viewport().width()
        room = viewport - max(viewport * NAME_SHARE, self._leaf_width(metrics))
        for column in HIDE_FIRST:
            if sum(wanted[c] for c in shown) <= room:
                break
            shown.remove(column)
        for column, width in wanted.items():
            self.tree_view.setColumnHidden(column, column not in shown)
            header.resizeSection(column, width)
        collapsed = tuple(c for c in COLLAPSE_INTO_NAME if c not in shown)
        if collapsed != self.name_delegate.collapsed:
            self.name_delegate.collapsed = collapsed
            self.tree_view.viewport().update()

    def _leaf_width(self, metrics: QFontMetrics) -> int:
        """What the Name column needs for the store's longest last segment (``num_batches_tracked``) two levels
        down, its icon beside it: the other columns hide before a leaf is cut (up to LEAF_CAP characters)."""
        if self._longest_leaf is None:
            leaves = (entry.name.rpartition(".")[2] for entry in self.store.entries)
            self._longest_leaf = max(leaves, key=len, default="")[:LEAF_CAP]
        icon = self.tree_view.iconSize().width() or 16
        return metrics.horizontalAdvance(self._longest_leaf) + 2 * self.tree_view.indentation() + icon + CELL_PADDING

    def _dtype_width(self, metrics: QFontMetrics) -> int:
        """Room for the widest dtype this store holds (its names are known from loading), up to DTYPE_CAP:
        a quantized ``QFLOAT`` shows whole rather than as ``QF…AT``; a longer name elides, its tooltip whole."""
        names = [COLUMN_SAMPLES[Column.DTYPE], *(name for name, _ in self.loaded.params_by_dtype)]
        widest = max(metrics.horizontalAdvance(name) for name in names)
        return min(widest, metrics.horizontalAdvance(DTYPE_CAP)) + CELL_PADDING

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self.tree_view.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_columns()
        if watched is self.tree_view.viewport() and event.type() == QEvent.Type.Paint and self.levels_pending \
                and not self._levels_asked:
            self._levels_asked = True
            QTimer.singleShot(0, self, self._open_first_levels)  # once this paint is on screen
        return super().eventFilter(watched, event)

    def _open_first_levels(self) -> None:
        """Work out a large store's first levels in a worker, then open them (unless a filter or a flat list
        replaced the tree meanwhile). Splitting up to 100,000 names waits until the tree is on screen.

        The task holds neither this tab nor, once done, its store (as a closed tab must free its store)."""
        tree, store, ready = self._full_tree, self.store, weakref.WeakMethod(self._first_levels_ready)

        def work(cancelled: Callable[[], bool]) -> list[TreeNode]:
            with collector_paused():  # its many lasting nodes would set off a full collection, holding the GIL
                opened = first_levels(tree)
                if not store.closed:
                    freeze_lasting_objects()  # they live as long as the tab
            return opened

        def done(opened: list[TreeNode]) -> None:
            method = ready()
            if method is None:  # the tab went away meanwhile: give back what the worker froze
                release_frozen_objects()
            else:
                method(tree, opened)

        self._runner.run(work, done)

    def _first_levels_ready(self, tree: TreeNode, opened: list[TreeNode]) -> None:
        self.levels_pending = False
        if tree is self._full_tree:
            self._opened_levels = opened
        if self.store.closed:
            release_frozen_objects()
        elif self.model.root is tree:
            self._expand_first_levels(tree, opened)

    def _expand_first_levels(self, tree: TreeNode, opened: list[TreeNode]) -> None:
        """A small store opens fully; a larger one shows its first levels (groups chosen off the UI thread)."""
        if tree.tensors <= SMALL_STORE:
            self.tree_view.expandAll()
            return
        for node in opened:
            self.tree_view.expand(self.model.index_of(node))

    @property
    def path(self) -> Path:
        return self.store.path

    def splitters(self) -> dict[str, QSplitter]:
        """Splitters whose sizes the window remembers between runs (the selection's sizes are worked out anew:
        ``ValuesFirstSplitter``)."""
        return {"tree": self.main_split}

    def start_surgery(self) -> RecipeDocument:
        """This tab's recipe document (made on first use); its plans mark the tree."""
        if self.document is None:
            self.document = RecipeDocument(self.store, parent=self)
            self.document.resultReady.connect(self._show_result)
        return self.document

    def favour_tree(self) -> None:
        """The workbench docks take room beside the tab: the tree keeps 3/5 of it, the details stay in view."""
        width = sum(self.main_split.sizes())
        self.main_split.setSizes([width * 3 // 5, width - width * 3 // 5])

    def show_side(self) -> None:
        """Unfold the details beside the tree when they were folded away."""
        sizes = self.main_split.sizes()
        if sizes[1] == 0:
            width = sum(sizes)
            self.main_split.setSizes([width * 3 // 5, width - width * 3 // 5])

    def _show_result(self, result: PlanResult) -> None:
        self.model.set_marks(dict(result.marks))
        self._fit_columns()  # the Recipe column shows while there are marks

    def close_store(self) -> None:
        if self.document is not None:
            self.document.close()
        self.details.cancel()
        self.values.show_entry(None)
        self.store.close()
        release_frozen_objects()

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
        if not _shows_the_same(self._shown, node):
            self.details.show_node(node, self._module_of(node))
            self.values.show_entry(node.entry if node is not None else None)
        self._shown = node
        if node is not None:
            self.side.setCurrentIndex(0)
        self.selected.emit(node)

    def _module_of(self, node: TreeNode | None) -> ModuleGuess | None:
        """The selection's module type, guessed from that module's tensors alone (a few ms on 100,000 tensors):
        no worker guesses every module in the background, taking turns at the GIL with the UI thread."""
        if node is None:
            return None
        return self.modules.guess(logical_leaf(node.entry.name)[0] if node.entry is not None else node.path)

    # --- filtering --------------------------------------------------------------------------------
    def apply_filter(self, text: str, regex: bool) -> FilterResult:
        """Show only tensors whose full name matches; an invalid regex leaves the tree as it was."""
        self._filter_generation += 1  # a filter still being built in the background is superseded
        total = len(self.store.entries)
        self.filter_text, self.filter_regex = text, regex
        if text:
            try:
                matcher = name_matcher(text, regex=regex)
            except PatternError as exc:
                self.filter_result = FilterResult(self.filter_result.matches, total, f"invalid regex: {exc}")
                return self.filter_result
            tree = self._build(filter_entries(self.store.entries, matcher))
        else:
            tree = self._sorted(self._full_tree)
        return self._show_filtered(text, tree)

    def filter_in_background(self, text: str, regex: bool, shown: Callable[[FilterResult], None]) -> None:
        """``apply_filter`` with its work (matching 100,000 names, laying out the tree's first level) in a
        worker, so that typing is never held up; ``shown`` gets the result once it is on screen. Only the
        newest request is shown: a result that a later keystroke superseded is dropped."""
        if not text or len(self.store.entries) < BACKGROUND_FILTER_FROM:
            shown(self.apply_filter(text, regex))
            return
        try:
            matcher = name_matcher(text, regex=regex)
        except PatternError:
            shown(self.apply_filter(text, regex))  # says why, at once
            return
        self._filter_generation += 1
        generation, entries, flat = self._filter_generation, self.store.entries, self.flat.isChecked()
        current = self.current_node()
        keep = current.path if current is not None else ""

        def work(cancelled: Callable[[], bool]) -> TreeNode:
            with collector_paused():  # a collection over 100,000 nodes would hold the GIL, freezing the window
                tree = build_tree(filter_entries(entries, matcher), order="file", compact=True, flat=flat)
                tree.children  # noqa: B018 - the first level is laid out here, not in the view's first paint
                tree.find(keep)  # so are the levels down to the selection, which the view selects again
            return tree

        def done(tree: TreeNode) -> None:
            if generation == self._filter_generation and self.flat.isChecked() == flat:
                self.filter_text, self.filter_regex = text, regex
                shown(self._show_filtered(text, self._sorted(tree)))

        self._runner.run(work, done)

    def _show_filtered(self, text: str, tree: TreeNode) -> FilterResult:
        current = self.current_node()
        self.model.set_root(tree)
        if text and tree.tensors <= EXPAND_LIMIT:
            self.tree_view.expandAll()
        elif not text and tree is self._full_tree:  # the filter cleared: the tree opens as when the file was opened
            self._expand_first_levels(tree, self._opened_levels)
        if current is None or not self.select(current.path):
            self._current_changed(QModelIndex(), QModelIndex())
        self.filter_result = FilterResult(tree.tensors, len(self.store.entries))
        return self.filter_result

    # --- order and shape ----------------------------------------------------------------------------
    def _build(self, entries: list) -> TreeNode:
        """A tree of ``entries`` in this view's current order and shape (compact groups, or a flat list)."""
        return self._sorted(build_tree(entries, order="file", compact=True, flat=self.flat.isChecked()))

    def _sorted(self, tree: TreeNode) -> TreeNode:
        """``tree`` in the order on show: a clicked header's, else the base order (lazy: opened levels only)."""
        header = self.tree_view.header()
        self.model.sort_tree(tree, header.sortIndicatorSection(), header.sortIndicatorOrder(), self.model.base_order)
        return tree

    def _rebuild(self) -> None:
        """Lay the tree out again (flat list toggled): the full tree is rebuilt, then the filter re-applied."""
        self._full_tree = self._build(self.store.entries)
        self._opened_levels = first_levels(self._full_tree)
        self.apply_filter(self.filter_text, self.filter_regex)

    def _base_order_changed(self, text: str) -> None:
        self.model.base_order = BASE_ORDERS[text]
        header = self.tree_view.header()
        if header.sortIndicatorSection() >= 0:
            header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # the view asks the model for sort(-1)
        else:
            self.model.sort(-1)


def _shows_the_same(shown: TreeNode | None, node: TreeNode | None) -> bool:
    """Whether ``node`` is the tensor on show again, in another tree (a filter kept it selected): the details,
    statistics and values on screen stay, with the slice the user chose, rather than being read again."""
    return (shown is not None and node is not None and node.entry is not None and shown.entry is node.entry
            and shown.tensors == node.tensors)
