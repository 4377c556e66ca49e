"""What is in this file: format, sizes, counts, parameters by dtype, metadata, Burnpack scalars and,
for PyTorch checkpoints, the non-tensor values (``store.values``) as a tree that copies as JSON, and a training
checkpoint's top-level branches, each with a button that reads it alone (the recipe's top-level key)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine import CheckpointBranches, Store, burn_compatibility, dtypes_of, humanize, scheme_description
from gui.loaded_store import LoadedStore
from gui.resources import icon, monospace
from gui.widgets import clipped

MAX_CHILDREN = 1000  # a values tree lists this many items of a container, then says how many more
CLASS_KEY = "__class__"  # how the engine marks an object of a class it did not import (a placeholder)
KEY_PROPERTY = "topLevelKey"  # the branch a "Use this key" button reads alone
REFERENCE_KEY = "$ref"  # how the engine shows a pointer back to a container holding it (a loop, never followed)


def _selectable(text: str, mono: bool = False, tooltip: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setToolTip(tooltip)
    label.setWordWrap(True)
    if mono:
        label.setFont(monospace())
    return label


def _leaf_text(value: Any) -> str:
    """Strings quoted and true/false/null as JSON writes them, so the tree reads like the copied JSON."""
    if isinstance(value, (str, bool, type(None))):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def fill_items(parent: QTreeWidgetItem | QTreeWidget, value: Any) -> None:
    """Add ``value``'s children under ``parent``: keys of dicts, ``[i]`` of lists, then leaves as text."""
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, (list, tuple)):
        children = [(f"[{i}]", v) for i, v in enumerate(value)]
    else:
        return
    add = parent.addTopLevelItem if isinstance(parent, QTreeWidget) else parent.addChild
    for key, child in children[:MAX_CHILDREN]:
        if isinstance(child, dict):
            text = f"{{{len(child):,} key{'s' if len(child) != 1 else ''}}}"
            if isinstance(child.get(CLASS_KEY), str):  # an object of a class the file names: say which
                text = f"{child[CLASS_KEY]} {text}"
            elif len(child) == 1 and isinstance(child.get(REFERENCE_KEY), str):  # a loop: say where it points back
                text = f"→ {child[REFERENCE_KEY] or '(the whole checkpoint)'}"
        elif isinstance(child, (list, tuple)):
            text = f"[{len(child):,} item{'s' if len(child) != 1 else ''}]"
        else:
            text = _leaf_text(child)
        item = QTreeWidgetItem([str(key), text])
        item.setToolTip(1, text)
        add(item)
        fill_items(item, child)
    if len(children) > MAX_CHILDREN:
        add(QTreeWidgetItem([f"… {len(children) - MAX_CHILDREN:,} more", ""]))


def _value_tree(value: Any) -> QTreeWidget:
    tree = QTreeWidget()
    tree.setHeaderLabels(["Key", "Value"])
    tree.setFont(monospace())
    tree.setUniformRowHeights(True)
    tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
    fill_items(tree, value)
    tree.expandToDepth(1)
    tree.setMinimumHeight(160)
    return tree


def _summary(loaded: LoadedStore) -> tuple[QFormLayout, QLabel | None]:
    """The file's facts, one row each; also the "Loads in" label (None when Burn's releases do not apply)."""
    store, totals, size = loaded.store, loaded.tree, loaded.file_size
    summary = QFormLayout()
    summary.addRow("File", _selectable(str(store.path), mono=True))
    if len(store.files) > 1:
        summary.addRow("Shards", _selectable(f"{len(store.files):,} files"))
    summary.addRow("Format", _selectable(store.description))
    if store.note:
        summary.addRow("Note", _selectable(store.note))
    burn_label = _burn_rows(summary, store)
    quantized = any(dtype.kind == "quantized" for dtype in dtypes_of(totals))  # else no pass over every entry
    schemes = Counter(scheme_description(e.dtype) for e in store.entries if e.dtype.kind == "quantized") \
        if quantized else Counter()
    for scheme, count in schemes.items():
        summary.addRow("Quantized", _selectable(f"{scheme} ({humanize.plural(count, 'tensor')})"))
    summary.addRow("File size", _selectable(humanize.size(size), tooltip=f"{size:,} bytes"))
    summary.addRow("Tensors", _selectable(humanize.count(totals.tensors)))
    summary.addRow("Parameters", _selectable(humanize.count(totals.parameters)))
    if totals.buffer_values:
        summary.addRow("Buffer values", _selectable(humanize.count(totals.buffer_values),
                                                    tooltip="running_mean, running_var, num_batches_tracked "
                                                    "and other non-float tensors: state, not trained weights"))
    summary.addRow("Tensor data", _selectable(humanize.size(totals.nbytes), tooltip=f"{totals.nbytes:,} bytes"))
    return summary, burn_label


def _burn_rows(summary: QFormLayout, store: Store) -> QLabel | None:
    """Which Burn releases load the file, and why each other one does not."""
    burn = burn_compatibility(store)
    if burn is None:
        return None
    label = _selectable(burn.describe(), tooltip="Read from the file's own dtype spellings "
                        "(Bool, quantization scheme) and its Burnpack version")
    label.setObjectName("burnLoads")
    summary.addRow("Loads in", label)
    for version, reason in burn.reasons:
        summary.addRow(f"Not {version.value}", _selectable(reason))
    return label


def _dtype_box(loaded: LoadedStore) -> QGroupBox:
    """Values by dtype, parameters and buffers alike, with each one's share."""
    box = QGroupBox("Values by dtype")
    form = QFormLayout(box)
    total = loaded.tree.params
    for dtype, params in loaded.params_by_dtype:
        share = params / total if total else 0.0
        percent = "<0.1%" if 0 < share < 0.001 else f"{share:.1%}"
        value = _selectable(f"{params:,}  ({percent})")
        value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        form.addRow(_selectable(dtype, mono=True), value)
    return box


def _users_box(users: dict[str, list[tuple[str, str, int]]]) -> QGroupBox:
    """Each initializer with the graph nodes that read it (node, operator, input slot): what maps an ONNX weight to
    the Burn module it becomes. At most MAX_CHILDREN rows, then how many more."""
    box = QGroupBox(f"Used by ({len(users):,} initializers)")
    box.setObjectName("onnxUsers")
    tree = QTreeWidget()
    tree.setObjectName("onnxUsersTree")
    tree.setHeaderLabels(["Initializer", "Read by"])
    tree.setRootIsDecorated(False)
    tree.setUniformRowHeights(True)
    for name, readers in list(users.items())[:MAX_CHILDREN]:
        text = clipped(", ".join(f"{node or '(unnamed)'} ({op}, input {index})" for node, op, index in readers[:100])
                       + (f", … {len(readers) - 100:,} more" if len(readers) > 100 else "")) or "no node"
        item = QTreeWidgetItem([clipped(name), text])
        item.setToolTip(0, name)
        item.setToolTip(1, text)
        tree.addTopLevelItem(item)
    if len(users) > MAX_CHILDREN:
        tree.addTopLevelItem(QTreeWidgetItem([f"… {len(users) - MAX_CHILDREN:,} more", ""]))
    tree.resizeColumnToContents(0)
    tree.setMinimumHeight(min(12, len(users) + 2) * tree.fontMetrics().height())
    layout = QVBoxLayout(box)
    layout.addWidget(tree)
    return box


def _metadata_box(metadata: dict[str, str]) -> QGroupBox:
    """The metadata's first MAX_CHILDREN keys, each value within LINE_CHARS characters (a GGUF header may hold
    100,000 keys and 16 MiB texts: Qt lays out every label it is given)."""
    box = QGroupBox(f"Metadata ({len(metadata):,})")
    form = QFormLayout(box)
    for key, value in list(metadata.items())[:MAX_CHILDREN]:
        form.addRow(_selectable(clipped(key), mono=True), _selectable(clipped(value), mono=True))
    if len(metadata) > MAX_CHILDREN:
        form.addRow(_selectable(f"… {len(metadata) - MAX_CHILDREN:,} more (store-studio inspect --json lists them)"))
    return box


def _foreign_box(foreign: Sequence[str]) -> QGroupBox:
    box = QGroupBox(f"Classes torch.load(weights_only=True) refuses ({len(foreign):,})")
    box.setObjectName("foreignClasses")
    box.setToolTip("Named by the file, never imported here: shown as their saved state")
    QVBoxLayout(box).addWidget(_selectable("\n".join(foreign[:MAX_CHILDREN]), mono=True))
    return box


def _scalars_box(scalars: dict[str, Any]) -> QGroupBox:
    box = QGroupBox(f"Scalars ({len(scalars):,})")
    QVBoxLayout(box).addWidget(_value_tree(scalars))
    return box


def _values_box(values: Any, copy_json: Callable[[], None]) -> tuple[QGroupBox, QTreeWidget]:
    """The checkpoint's non-tensor values as a tree, with a button that copies them as JSON."""
    box = QGroupBox("Other values in the checkpoint")
    box_layout = QVBoxLayout(box)
    tree = _value_tree(values)
    tree.setObjectName("valuesTree")
    copy = QPushButton(icon("copy"), "Copy as JSON")
    copy.setObjectName("copyJson")
    copy.setToolTip("Copy these values to the clipboard as JSON")
    copy.clicked.connect(copy_json)
    row = QHBoxLayout()
    row.addWidget(QLabel("Non-tensor values saved alongside the weights."), 1)
    row.addWidget(copy)
    box_layout.addLayout(row)
    box_layout.addWidget(tree)
    return box, tree


def _branches_box(found: CheckpointBranches, choose: Callable[[str], None]) -> QGroupBox:
    """A training checkpoint's top-level branches, one row each (key, what it looks like, tensors and bytes),
    each with a button that makes it the recipe's top-level key. Keys come from the file: shown as plain text,
    hidden characters escaped."""
    box = QGroupBox(f"Checkpoint branches ({len(found.branches):,})")
    box.setObjectName("checkpointBranches")
    layout = QVBoxLayout(box)
    weights = found.weights
    advice = (f"Converted whole, the file writes every branch. The model weights are under "
              f"{humanize.printable(weights.key)}." if weights else "Converted whole, the file writes every branch.")
    layout.addWidget(_plain(advice))
    grid = QGridLayout()
    grid.setColumnStretch(1, 1)
    for row, branch in enumerate(found.branches):
        grid.addWidget(_plain(humanize.printable(branch.key), mono=True), row, 0)
        grid.addWidget(_plain(f"{branch.describe()} · {humanize.plural(branch.tensors, 'tensor')} · "
                              f"{humanize.size(branch.nbytes)}"), row, 1)
        grid.addWidget(_key_button(branch.key, choose), row, 2)
    layout.addLayout(grid)
    return box


def _plain(text: str, mono: bool = False) -> QLabel:
    """A selectable label that never reads its text as rich text (a key named ``<img src=...>`` stays text)."""
    label = _selectable(text, mono)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def _key_button(key: str, choose: Callable[[str], None]) -> QPushButton:
    button = QPushButton("Use this key")
    button.setProperty(KEY_PROPERTY, key)
    button.setToolTip(f"Set the recipe's top-level key to {humanize.printable(key)}: only this branch is converted "
                      "(Undo brings the whole file back)")
    button.clicked.connect(lambda: choose(key))
    return button


class FileInfoPanel(QWidget):
    """A read-only page about one store; sections with nothing to show are left out, not shown empty.

    ``topLevelKeyChosen(key)`` when a branch's button asks to read that branch alone: the window makes it the
    recipe's top-level key, as one undo step."""

    topLevelKeyChosen = Signal(str)

    def __init__(self, loaded: LoadedStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        store = self.store = loaded.store
        content = QWidget()
        layout = QVBoxLayout(content)
        summary, self.burn_label = _summary(loaded)
        layout.addLayout(summary)
        if loaded.branches is not None:
            layout.addWidget(_branches_box(loaded.branches, self.topLevelKeyChosen.emit))
        if loaded.params_by_dtype:
            layout.addWidget(_dtype_box(loaded))
        if store.metadata:
            layout.addWidget(_metadata_box(store.metadata))
        foreign = getattr(store, "foreign_classes", ())
        if foreign:
            layout.addWidget(_foreign_box(foreign))
        if store.scalars:
            layout.addWidget(_scalars_box(store.scalars))
        users = getattr(store, "users", None)  # ONNX: which node reads each initializer
        if users:
            layout.addWidget(_users_box(users))
        self.values_tree: QTreeWidget | None = None
        if store.values:
            box, self.values_tree = _values_box(store.values, self.copy_values_json)
            layout.addWidget(box, 1)
        layout.addStretch(0)

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(content)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

    def values_json(self) -> str:
        return json.dumps(self.store.values, indent=2, ensure_ascii=False, default=str)

    def copy_values_json(self) -> None:
        QGuiApplication.clipboard().setText(self.values_json())
