"""Conventions and conversions: PyTorch/Burn adapters, top-level key, dtype cast, and the module types they rely on.

The adapters act per module type (a Linear weight is transposed, an Embedding's is not), and types are
inferred from names and shapes; the table shows each guess with its reason, and a combo per row overrides it.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, Qt
from PySide6.QtGui import QAction, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QSizePolicy,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine import natural_key
from engine.surgery import (
    BURN_TO_PYTORCH,
    CONTIGUOUS_INDICES,
    ENUM_VARIANT,
    FUSE_WEIGHT_NORM,
    KINDS,
    PYTORCH_TO_BURN,
    SKIP_ENUM_VARIANTS,
    CastRule,
    ModuleGuess,
    Plan,
)
from gui.models.tree_model import Index
from gui.resources import monospace
from gui.visual import AMBER
from gui.workbench.checkpoint_keys import WHOLE_FILE, top_level_keys
from gui.workbench.panels.base import DocumentPanel

ADAPTER_LABELS = {
    PYTORCH_TO_BURN: ("PyTorch → Burn", "Transpose Linear weights; norm weight/bias become gamma/beta"),
    BURN_TO_PYTORCH: ("Burn → PyTorch", "Transpose Linear weights; norm gamma/beta become weight/bias"),
    CONTIGUOUS_INDICES: ("Contiguous indices", "Renumber layers.0, layers.2, layers.4 as 0, 1, 2"),
    SKIP_ENUM_VARIANTS: ("Skip enum variants", "Drop Burn's CamelCase enum segments (feature.BaseConv.weight)"),
    FUSE_WEIGHT_NORM: ("Fuse weight norm", "Replace weight_g/weight_v by the weight they stand for"),
}
NO_CAST = "no cast"
CASTS = (NO_CAST, "F16", "BF16", "F32")
PATH, KIND, REASON = 0, 1, 2


class ModulesModel(QAbstractTableModel):
    """Module path, kind (editable) and why, from the latest plan."""

    def __init__(self, panel: "AdaptersPanel", parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._panel = panel
        self.guesses: list[ModuleGuess] = []
        self.unsettled: set[str] = set()  # module paths whose name-only kind changes some tensor (Plan.guesses)
        self._font = monospace()
        self._bold = QFont(self._font)
        self._bold.setBold(True)

    def reset(self, guesses: list[ModuleGuess], unsettled: set[str] | None = None) -> None:
        self.beginResetModel()
        self.guesses = guesses
        self.unsettled = unsettled or set()
        self.endResetModel()

    def row_of(self, path: str) -> int:
        return next((i for i, guess in enumerate(self.guesses) if guess.path == path), -1)

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.guesses)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 3

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return ("Module", "Type", "Why")[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        guess, column = self.guesses[index.row()], index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            if column == PATH:
                return guess.path or "(top level)"
            if column == KIND and role == Qt.ItemDataRole.DisplayRole:
                return f"{guess.kind} ✎" if guess.overridden else \
                    f"{guess.kind} ? guessed" if guess.path in self.unsettled else guess.kind
            if column == KIND:
                return guess.kind
            return guess.reason
        if role == Qt.ItemDataRole.FontRole:
            return self._bold if guess.overridden and column == KIND else self._font if column == PATH else None
        if role == Qt.ItemDataRole.ForegroundRole and column == KIND and (guess.overridden or
                                                                         guess.path in self.unsettled):
            return AMBER
        if role == Qt.ItemDataRole.ToolTipRole:
            if guess.path in self.unsettled:
                return (f"{guess.path}: {guess.kind} is a guess ({guess.reason}). Double-click the type and pick "
                        f"{' or '.join(guess.alternatives) or 'one'} to settle it.")
            return f"{guess.path}: {guess.kind} ({guess.reason}). Double-click the type to change it."
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        return flags | Qt.ItemFlag.ItemIsEditable if index.column() == KIND else flags

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or index.column() != KIND:
            return False
        guess = self.guesses[index.row()]
        confirms = guess.path in self.unsettled and not guess.overridden  # picking the guessed kind settles it too
        return (guess.kind != value or confirms) and self._panel.override(guess.path, str(value))


class KindDelegate(QStyledItemDelegate):
    """A combo of module kinds that commits as soon as one is picked."""

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem, index: QModelIndex) -> QWidget:
        combo = QComboBox(parent)
        combo.setObjectName("kindEditor")
        combo.addItems(KINDS)
        combo.activated.connect(lambda _: self.commitData.emit(combo))
        return combo

    def setEditorData(self, editor: QWidget, index: QModelIndex) -> None:
        editor.setCurrentText(index.data(Qt.ItemDataRole.EditRole))  # type: ignore[attr-defined]

    def setModelData(self, editor: QWidget, model: Any, index: QModelIndex) -> None:
        model.setData(index, editor.currentText(), Qt.ItemDataRole.EditRole)  # type: ignore[attr-defined]


class AdaptersPanel(DocumentPanel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._showing = False  # True while widgets are set from the recipe (their signals are not edits)
        self.checks: dict[str, QCheckBox] = {}
        self.scope_actions: dict[str, QAction] = {}
        self.modules_title = QLabel("Module types")
        self.modules_title.setProperty("role", "heading")
        self.modules_title.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self._adapter_boxes())
        layout.addLayout(self._key_and_cast())
        layout.addWidget(self.modules_title)
        layout.addWidget(self._module_table(), 1)
        self.setEnabled(False)

    def _adapter_boxes(self) -> QGroupBox:
        """One check box an adapter, its explanation under it (not beside: both keep the dock's width)."""
        adapters = QGroupBox("Adapters")
        grid = QVBoxLayout(adapters)
        for name, (label, tip) in ADAPTER_LABELS.items():
            check = QCheckBox(label)
            check.setObjectName(f"adapter-{name}")
            check.setToolTip(tip)
            check.toggled.connect(lambda on, n=name: self._toggled(n, on))
            hint = QLabel(tip)
            hint.setProperty("role", "hint")
            hint.setWordWrap(True)
            hint.setContentsMargins(22, 0, 0, 4)
            grid.addWidget(check)
            grid.addWidget(hint)
            self.checks[name] = check
        return adapters

    def _key_and_cast(self) -> QFormLayout:
        self.key = QComboBox()
        self.key.setObjectName("topLevelKey")
        self.key.setToolTip("Keep only one branch of a PyTorch checkpoint (e.g. its state_dict), without its prefix")
        self.key.activated.connect(lambda _: self._key_chosen())
        self.cast = QComboBox()
        self.cast.setObjectName("castTarget")
        self.cast.addItems(CASTS)
        self.cast.activated.connect(lambda _: self._cast_changed())
        cast_row = QHBoxLayout()
        cast_row.addWidget(self.cast)
        cast_row.addWidget(QLabel("for"))
        cast_row.addWidget(self._cast_scope(), 1)
        form = QFormLayout()
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        form.addRow("Top-level key", self.key)
        form.addRow("Cast floats to", cast_row)
        return form

    def _cast_scope(self) -> QToolButton:
        """A menu of module kinds to limit the cast to; none checked casts every float tensor."""
        self.scope = QToolButton()
        self.scope.setObjectName("castScope")
        self.scope.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.scope.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.scope.setToolTip("Cast every float tensor, or only those in modules of the checked types")
        self.scope_menu = QMenu(self.scope)
        for kind in (k for k in KINDS if k != ENUM_VARIANT):  # an enum variant holds no tensors to cast
            action = self.scope_menu.addAction(kind)
            action.setCheckable(True)
            action.toggled.connect(lambda _: self._cast_changed())
            self.scope_actions[kind] = action
        self.scope.setMenu(self.scope_menu)
        return self.scope

    def _module_table(self) -> QTableView:
        """Each module's guessed type; double-clicking the type picks another."""
        self.modules = ModulesModel(self, self)
        self.table = QTableView()
        self.table.setObjectName("moduleTypes")
        self.table.setModel(self.modules)
        self.table.setItemDelegateForColumn(KIND, KindDelegate(self.table))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.SelectedClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(PATH, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(KIND, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(REASON, QHeaderView.ResizeMode.Stretch)
        return self.table

    # --- edits -------------------------------------------------------------------------------------------
    def _toggled(self, name: str, on: bool) -> None:
        if self._showing or self.state is None:
            return
        adapters = [a for a in self.state.recipe.adapters if a != name]
        if on:
            opposite = {PYTORCH_TO_BURN: BURN_TO_PYTORCH, BURN_TO_PYTORCH: PYTORCH_TO_BURN}.get(name)
            adapters = [a for a in adapters if a != opposite] + [name]  # the two directions undo each other
        label = ADAPTER_LABELS[name][0]
        self.push(lambda recipe: recipe.with_changes(adapters=tuple(adapters)), f"{'Use' if on else 'Stop using'} {label}")

    def _key_chosen(self) -> None:
        key = self.key.currentText()
        key = None if key == WHOLE_FILE else key
        self.push(lambda recipe: recipe.with_changes(top_level_key=key), f"Top-level key {key or 'none'}")

    def _cast_changed(self) -> None:
        if self._showing or self.state is None:
            return
        kinds = tuple(k for k, a in self.scope_actions.items() if a.isChecked())
        target = self.cast.currentText()
        casts = () if target == NO_CAST else (CastRule(target, kinds),)
        self.push(lambda recipe: recipe.with_changes(casts=casts), "Cast " + (target if casts else "none"))

    def override(self, path: str, kind: str) -> bool:
        return self.push(lambda recipe: recipe.with_changes(module_overrides={**recipe.module_overrides, path: kind}),
                         f"Treat {path or 'top level'} as {kind}")

    # --- showing -----------------------------------------------------------------------------------------
    def recipe_changed(self) -> None:
        self._showing = True
        try:
            recipe = self.state.recipe if self.state is not None else None
            for name, check in self.checks.items():
                check.setChecked(recipe is not None and name in recipe.adapters)
            self.key.clear()
            self.key.addItem(WHOLE_FILE)
            if self.state is not None:
                self.key.addItems(top_level_keys(self.state.home))
                if recipe is not None and recipe.top_level_key:
                    if self.key.findText(recipe.top_level_key) < 0:
                        self.key.addItem(recipe.top_level_key)
                    self.key.setCurrentText(recipe.top_level_key)
            self.key.setEnabled(self.key.count() > 1)
            cast = recipe.casts[0] if recipe is not None and recipe.casts else None
            self.cast.setCurrentText(cast.to if cast else NO_CAST)
            for kind, action in self.scope_actions.items():
                action.setChecked(cast is not None and kind in cast.modules)
            self.scope.setText(", ".join(cast.modules) if cast and cast.modules else "all float tensors")
            self.scope.setEnabled(cast is not None)
        finally:
            self._showing = False

    def plan_ready(self, plan: Plan) -> None:
        guesses = sorted(plan.modules.values(), key=lambda g: natural_key(g.path))
        unsettled = {g.module for g in plan.guesses}
        self.modules.reset(guesses, unsettled)
        overridden = sum(1 for g in guesses if g.overridden)
        self.modules_title.setText(f"Module types: {len(guesses):,} inferred"
                                   + (f", {len(unsettled):,} guessed from a name alone" if unsettled else "")
                                   + (f", {overridden} set by you" if overridden else "")
                                   + " (double-click a type to change it)")

    def settle(self, path: str) -> bool:
        """Select ``path``'s row and open its type for editing (the preview's way to settle a guess)."""
        row = self.modules.row_of(path)
        if row < 0:
            return False
        index = self.modules.index(row, KIND)
        self.table.setCurrentIndex(index)
        self.table.scrollTo(index)
        self.table.edit(index)
        return True
