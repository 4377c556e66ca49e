"""The files merged into one output, in precedence order (later ones override), each with its own filter, and the
PEFT LoRA adapters merged into each (a row under its source, with its scale).

Like successive burn-store ``load_from`` calls: a tensor in a later file replaces the same name from an earlier
one. Added files open in a worker; the tab's own file is always the first source.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine import Location, RecipeError, Store, adapter_name, open_store
from engine.surgery import Filter, LoraSpec, Plan, compile_pattern
from gui.dialogs import choose_paths, show_error
from gui.model_picker import choose_model
from gui.resources import monospace
from gui.visual import ERROR_TEXT_STYLE, INVALID_STYLE
from gui.widgets import FlowLayout, breakable
from gui.workbench.checkpoint_keys import WHOLE_FILE, top_level_keys
from gui.workbench.panels.base import DocumentPanel
from gui.workers import Failure, TaskRunner


ROW_ROLE = Qt.ItemDataRole.UserRole + 1  # a row's (source index, adapter index or None)
ADAPTER_FILES = "PEFT LoRA adapters (adapter_model.safetensors adapter_model.bin);;All files (*)"


class SourcesPanel(DocumentPanel):
    """``source_added`` fires with the opened Store once it is part of the recipe."""

    source_added = Signal(object)

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        hint = QLabel("Sources are merged top to bottom: a tensor in a later file replaces the same name from "
                      "an earlier one.")
        hint.setWordWrap(True)
        hint.setProperty("role", "hint")
        self.list = QListWidget()
        self.list.setObjectName("sources")
        self.list.setWordWrap(True)  # a long file name wraps: the dock never scrolls sideways
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.currentRowChanged.connect(lambda _: self._show_filter())
        self.add = QPushButton("Add file…")
        self.add.clicked.connect(self.add_dialog)
        self.remove = QPushButton("Remove")
        self.up = QPushButton("↑ Up")
        self.down = QPushButton("↓ Down")
        self.add_lora = QPushButton("Add LoRA adapter…")
        self.add_lora.setObjectName("addLora")
        self.add_lora.setToolTip("Merge a PEFT LoRA adapter (its adapter_model.safetensors, with adapter_config.json "
                                 "beside it) into the selected source, as convert --lora does")
        self.add_lora.clicked.connect(self.add_lora_dialog)
        self.remove.clicked.connect(self._remove)
        self.up.clicked.connect(lambda: self._move(-1))
        self.down.clicked.connect(lambda: self._move(1))
        buttons = FlowLayout()  # wraps in a narrow dock
        for button in (self.add, self.add_lora, self.remove, self.up, self.down):
            buttons.addWidget(button)

        self.include = QLineEdit()
        self.include.setObjectName("sourceInclude")
        self.exclude = QLineEdit()
        self.exclude.setObjectName("sourceExclude")
        for edit, what in ((self.include, "keep only names matching this regex"),
                           (self.exclude, "drop names matching this regex")):
            edit.setFont(monospace())
            edit.setPlaceholderText(what)
            edit.textEdited.connect(lambda _, e=edit: self._filter_edited(e))
        self.key = QComboBox()
        self.key.setObjectName("sourceTopLevelKey")
        self.key.setToolTip("Read only this branch of the selected PyTorch checkpoint (e.g. its state_dict), "
                            "without its prefix; this source's own key wins over the recipe's (Adapters)")
        self.key.activated.connect(lambda _: self._key_chosen())
        self.filter_box = QGroupBox("Selected source")  # a group box is at least as wide as its title
        self.filter_box.setToolTip("The selected source's key and filter, on this file's own names, before the recipe")
        form = QFormLayout(self.filter_box)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        box_hint = QLabel("Key and filter on this file's own names, before the recipe.")
        box_hint.setWordWrap(True)
        box_hint.setProperty("role", "hint")
        form.addRow(box_hint)
        form.addRow("Top-level key", self.key)
        form.addRow("Include", self.include)
        form.addRow("Exclude", self.exclude)
        self.scale = QDoubleSpinBox()
        self.scale.setObjectName("loraScale")
        self.scale.setRange(-100.0, 100.0)
        self.scale.setDecimals(3)
        self.scale.setSingleStep(0.1)
        self.scale.setToolTip("The selected LoRA adapter's scale S: W + S · scaling · B @ A (1 merges it as trained)")
        self.scale.valueChanged.connect(self._scale_changed)
        form.addRow("LoRA scale", self.scale)
        self.message = QLabel()
        self.message.setStyleSheet(ERROR_TEXT_STYLE)
        self.message.setWordWrap(True)
        self.message.hide()
        form.addRow(self.message)

        layout = QVBoxLayout(self)
        layout.addWidget(hint)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.filter_box)
        self.setEnabled(False)

    # --- adding (a file opens in a worker) -------------------------------------------------------------------
    def add_dialog(self) -> None:
        path = choose_model(self, "Add a source to merge", self.state.home.path if self.state is not None else None)
        if path:
            self.add_file(path)

    def add_file(self, path: Location) -> None:
        document = self.document
        if document is None:
            return

        def opened(store: Store) -> None:
            document.add_source(store)
            self.source_added.emit(store)

        def failed(failure: Failure) -> None:
            show_error(self, f"Store Studio could not add {path.name}.", failure.message, failure.details)

        self._runner.run(lambda cancelled: open_store(path), opened, failed)

    def add_lora_dialog(self) -> None:
        source, _ = self._selected()
        start = str(Path(self.state.home.path).parent) if self.state is not None else ""
        path = next(iter(choose_paths(self, "Merge a LoRA adapter", start, ADAPTER_FILES)), "")
        if path:
            self.add_adapter(max(source, 0), Path(path))

    def add_adapter(self, source: int, path: Path) -> None:
        """Merge the adapter at ``path`` into source ``source`` (scale 1), as one undo step; the plan opens it."""
        if self.state is None or not 0 <= source < len(self.state.recipe.sources):
            return
        self._edit_lora(source, lambda lora: (*lora, LoraSpec(str(path))), f"Merge LoRA adapter {adapter_name(path)}")

    def _edit_lora(self, source: int, change, text: str, merge_key: str | None = None) -> None:
        sources = list(self.state.recipe.sources)
        sources[source] = replace(sources[source], lora=tuple(change(sources[source].lora)))
        self.push(lambda recipe: recipe.with_changes(sources=tuple(sources)), text, merge_key)

    def _scale_changed(self, value: float) -> None:
        source, adapter = self._selected()
        if self.state is None or adapter is None or self.scale.signalsBlocked():
            return
        lora = self.state.recipe.sources[source].lora
        self._edit_lora(source, lambda lora: tuple(replace(a, scale=value) if i == adapter else a
                                                   for i, a in enumerate(lora)),
                        f"Scale of {adapter_name(lora[adapter].path)}: {value:g}", f"lora-scale-{source}-{adapter}")

    def _remove(self) -> None:
        source, adapter = self._selected()
        if self.document is None or source < 0:
            return
        if adapter is None:
            self.document.remove_source(source)
        else:
            name = adapter_name(self.state.recipe.sources[source].lora[adapter].path)
            self._edit_lora(source, lambda lora: lora[:adapter] + lora[adapter + 1:], f"Remove LoRA adapter {name}")

    def _move(self, step: int) -> None:
        row, adapter = self._selected()
        if self.document is not None and adapter is None and self.document.move_source(row, row + step):
            self._select(row + step)

    def _selected(self) -> tuple[int, int | None]:
        """The selected row's source, and its adapter when an adapter row is selected ((-1, None): no row)."""
        item = self.list.currentItem()
        return item.data(ROW_ROLE) if item is not None else (-1, None)

    def _select(self, source: int, adapter: int | None = None) -> None:
        for row in range(self.list.count()):
            if self.list.item(row).data(ROW_ROLE) == (source, adapter):
                self.list.setCurrentRow(row)
                return

    # --- the selected source's filter ----------------------------------------------------------------------
    def _filter_edited(self, edit: QLineEdit) -> None:
        row, adapter = self._selected()
        if self.state is None or row < 0 or adapter is not None:
            return
        problems = []
        for field in (self.include, self.exclude):
            try:
                if field.text():
                    compile_pattern(field.text(), f"source {row + 1} {'include' if field is self.include else 'exclude'}")
                field.setStyleSheet("")
            except RecipeError as exc:
                field.setStyleSheet(INVALID_STYLE)
                problems.append(str(exc))
        self.message.setText(breakable("⚠ " + "\n⚠ ".join(problems)) if problems else "")
        self.message.setVisible(bool(problems))
        if problems:
            return
        own = Filter(include=(self.include.text(),) if self.include.text() else (),
                     exclude=(self.exclude.text(),) if self.exclude.text() else ())
        sources = list(self.state.recipe.sources)
        sources[row] = replace(sources[row], filter=own)
        self.push(lambda recipe: recipe.with_changes(sources=tuple(sources)),
                  f"Filter source {row + 1}", f"source-filter-{row}-{'inc' if edit is self.include else 'exc'}")

    def _key_chosen(self) -> None:
        row, adapter = self._selected()
        if self.state is None or row < 0 or adapter is not None:
            return
        key = self.key.currentData()
        sources = list(self.state.recipe.sources)
        sources[row] = replace(sources[row], top_level_key=key)
        self.push(lambda recipe: recipe.with_changes(sources=tuple(sources)),
                  f"Top-level key of source {row + 1}: {key or 'none'}")

    def _show_key(self, row: int) -> None:
        """The selected source's key choices: its own, or (first item) none of its own, the recipe's then."""
        self.key.clear()
        state = self.state
        if state is None or not 0 <= row < len(state.stores):
            self.key.setEnabled(False)
            return
        spec = state.recipe.source_spec(row)
        inherited = state.recipe.top_level_key
        self.key.addItem(f"(as the recipe: {inherited})" if inherited else WHOLE_FILE, None)
        found = top_level_keys(state.stores[row])
        own = spec.top_level_key if spec is not None else None
        for key in found + ([own] if own and own not in found else []):
            self.key.addItem(key, key)
        self.key.setCurrentIndex(max(self.key.findData(own), 0) if own else 0)
        self.key.setEnabled(bool(found) or own is not None)
        if not self.key.isEnabled():
            self.key.setItemText(0, "(only PyTorch checkpoints have keys)")

    def _show_filter(self) -> None:
        row, adapter = self._selected()
        spec = self.state.recipe.source_spec(row) if self.state is not None and row >= 0 else None
        self.filter_box.setEnabled(spec is not None)
        for widget in (self.include, self.exclude, self.key):
            widget.setEnabled(adapter is None and spec is not None)
        self.scale.setEnabled(adapter is not None)
        self.scale.blockSignals(True)
        self.scale.setValue(spec.lora[adapter].scale if spec is not None and adapter is not None else 1.0)
        self.scale.blockSignals(False)
        self._show_key(row)
        self.key.setEnabled(self.key.isEnabled() and adapter is None)
        own = spec.filter if spec is not None else Filter()
        for edit, values in ((self.include, own.include), (self.exclude, own.exclude)):
            if not edit.hasFocus():
                edit.setText(values[0] if values else "")
                edit.setStyleSheet("")
        home = self.state is not None and 0 <= row < len(self.state.stores) and self.state.stores[row] is self.state.home
        sources = len(self.state.stores) if self.state is not None else 0
        self.remove.setEnabled(row >= 0 and (adapter is not None or not home))
        self.up.setEnabled(adapter is None and row > 0)
        self.down.setEnabled(adapter is None and 0 <= row < sources - 1)
        self.add_lora.setEnabled(spec is not None)

    # --- showing ---------------------------------------------------------------------------------------------
    def recipe_changed(self) -> None:
        selected = self._selected() if self.list.currentItem() is not None else (0, None)
        self.list.blockSignals(True)
        self.list.clear()
        if self.state is not None:
            for i, store in enumerate(self.state.stores):
                spec = self.state.recipe.source_spec(i)
                role = "this tab's file" if store is self.state.home else "overrides the sources above"
                text = f"{i + 1}. {Path(store.path).name}  ·  {len(store.entries):,} tensors  ·  {role}"
                if spec is not None and spec.top_level_key:
                    text += f"  ·  key {spec.top_level_key}"
                if spec is not None and not spec.filter.is_empty:
                    text += "  ·  filtered"
                self._add_row(text, str(store.path), (i, None))
                for j, adapter in enumerate(spec.lora if spec is not None else ()):
                    self._add_row(f"      ↳ LoRA {adapter_name(adapter.path)}  ·  scale {adapter.scale:g}", adapter.path,
                                  (i, j))
            self._select(*selected)
            if self.list.currentItem() is None and self.list.count():
                self.list.setCurrentRow(0)
        self.list.blockSignals(False)
        self._show_filter()

    def _add_row(self, text: str, tip: str, place: tuple[int, int | None]) -> None:
        self.list.addItem(text)
        item = self.list.item(self.list.count() - 1)
        item.setToolTip(tip)
        item.setData(ROW_ROLE, place)

    def plan_ready(self, plan: Plan) -> None:
        replaced = len(plan.overrides)
        self.list.setToolTip(f"{replaced:,} tensor{'s' if replaced != 1 else ''} of earlier sources replaced "
                             "by later ones" if replaced else "")
