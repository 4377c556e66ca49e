"""What about the selected tensor (or group): where it lives, what module it belongs to, and its statistics.

Statistics run in a worker through ``engine.stats``; a new selection cancels the running computation, and
a late result for an older selection is never shown.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QProgressBar, QPushButton,
                               QSizePolicy, QVBoxLayout, QWidget)

from engine import humanize
from engine.stats import TensorStats, stats_for
from engine.surgery.modules import ModuleGuess
from engine.tree import TreeNode
from gui.panels.histogram import HistogramWidget, format_number
from gui.resources import monospace
from gui.workers import Failure, Task, TaskRunner

RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
STAT_FIELDS = (("min", "Min"), ("max", "Max"), ("mean", "Mean"), ("std", "Std"),
               ("nan", "NaN"), ("inf", "Inf"), ("zeros", "Zeros"))


def _value_label(mono: bool = False) -> QLabel:
    label = QLabel()
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if mono:
        label.setFont(monospace())
    return label


class DetailsPanel(QWidget):
    """Facts about the selection; ``stats_ready`` tells tests and screenshots when numbers are shown."""

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self._task: Task | None = None
        self.stats: TensorStats | None = None  # the statistics on show, for the current tensor

        self.title = _value_label(mono=True)
        self.title.setObjectName("detailsTitle")
        self.title.setWordWrap(True)
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title.setFont(font)
        self.summary = _value_label(mono=True)
        self.summary.setWordWrap(True)
        self.hint = QLabel("Select a tensor or a group in the tree.")
        self.hint.setProperty("role", "hint")

        self.facts = QFormLayout()
        self.facts.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
        self._fact_labels: dict[str, QLabel] = {}
        for key, caption, mono in (("path", "Path", True), ("dtype", "DType", True), ("shape", "Shape", True),
                                   ("elements", "Elements", False), ("size", "Size", False),
                                   ("tensors", "Tensors", False), ("offset", "Offset", False),
                                   ("param_id", "Param ID", True), ("module", "Module", False)):
            label = _value_label(mono)
            label.setWordWrap(key in ("path", "module"))
            self._fact_labels[key] = label
            self.facts.addRow(caption, label)

        self.stats_box = QGroupBox("Statistics")
        grid = QGridLayout()
        self._stat_labels: dict[str, QLabel] = {}
        for i, (key, caption) in enumerate(STAT_FIELDS):
            value = _value_label(mono=True)
            value.setAlignment(RIGHT)
            value.setObjectName(f"stat_{key}")
            self._stat_labels[key] = value
            row, col = divmod(i, 2)  # two pairs a row: room for values like -1.60887e-05
            grid.addWidget(QLabel(caption), row, col * 3)
            grid.addWidget(value, row, col * 3 + 1)
        grid.setHorizontalSpacing(10)
        grid.setColumnMinimumWidth(2, 24)  # a gap between the two pairs
        for col in (1, 4):
            grid.setColumnStretch(col, 1)
        self.stats_status = QLabel()
        self.stats_status.setObjectName("statsStatus")
        self.stats_status.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumHeight(10)
        self.progress.setTextVisible(False)
        self.stop = QPushButton("Stop")
        self.stop.setToolTip("Stop computing statistics for this tensor")
        self.stop.clicked.connect(self.cancel)
        status_row = QHBoxLayout()
        status_row.addWidget(self.stats_status, 1)
        status_row.addWidget(self.progress)
        status_row.addWidget(self.stop)
        self.histogram = HistogramWidget()
        box_layout = QVBoxLayout(self.stats_box)
        box_layout.addLayout(grid)
        box_layout.addLayout(status_row)
        box_layout.addWidget(self.histogram, 1)

        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.summary)
        layout.addWidget(self.hint)
        layout.addLayout(self.facts)
        layout.addWidget(self.stats_box)
        layout.addStretch(1)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.show_node(None, None)

    # --- showing a selection ----------------------------------------------------------------------
    def show_node(self, node: TreeNode | None, module: ModuleGuess | None) -> None:
        self.cancel()
        self.stats = None
        self.hint.setVisible(node is None)
        self.title.setText(node.path if node is not None else "")
        self.title.setVisible(node is not None)
        self.summary.setVisible(node is not None)
        for label in self._fact_labels.values():
            self._set_fact(label, None)
        self.set_module(module)
        if node is None:
            self.stats_box.hide()
            return
        facts = self._fact_labels
        self._set_fact(facts["path"], node.path)
        self._set_fact(facts["size"], humanize.size(node.nbytes), f"{node.nbytes:,} bytes")
        entry = node.entry
        if entry is None:
            self.summary.setText(f"group · {node.tensors:,} tensors · {node.params:,} parameters · "
                                 f"{humanize.size(node.nbytes)}")
            self._set_fact(facts["tensors"], f"{node.tensors:,}")
            self._set_fact(facts["elements"], f"{node.params:,}")
            self.stats_box.hide()
            return
        self.summary.setText(f"{entry.dtype} · {humanize.shape(entry.shape)} · {entry.numel:,} values · "
                             f"{humanize.size(entry.nbytes)}")
        self.summary.setToolTip(f"{entry.nbytes:,} bytes")
        self._set_fact(facts["dtype"], str(entry.dtype))
        self._set_fact(facts["shape"], humanize.shape(entry.shape))
        self._set_fact(facts["elements"], f"{entry.numel:,}")
        if node.has_children:
            self._set_fact(facts["tensors"], f"{node.tensors:,} (this one and those below it)")
        self._set_fact(facts["offset"], f"{entry.offset:,}" if entry.offset is not None else None,
                       "Absolute byte offset of the tensor's data in the file")
        self._set_fact(facts["param_id"], str(entry.param_id) if entry.param_id is not None else None)
        self.stats_box.show()
        self._start_stats(node)

    def set_module(self, module: ModuleGuess | None) -> None:
        """The inferred module type of the selection's module, once inference has run."""
        if module is None:
            self._set_fact(self._fact_labels["module"], None)
            return
        how = "set by user" if module.overridden else f"inferred: {module.reason}"
        self._set_fact(self._fact_labels["module"], f"{module.kind} ({how})",
                       f"Module {module.path or '(top level)'}")

    def _set_fact(self, label: QLabel, text: str | None, tooltip: str = "") -> None:
        label.setText(text or "")
        label.setToolTip(tooltip)
        label.setVisible(text is not None)
        self.facts.labelForField(label).setVisible(text is not None)

    # --- statistics -------------------------------------------------------------------------------
    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
            self.stats_status.setText("Statistics stopped.")
        self._set_busy(False)

    def _start_stats(self, node: TreeNode) -> None:
        entry = node.entry
        assert entry is not None
        self._show_stats(None)
        self.stats_status.setText(f"Computing statistics of {entry.numel:,} values…")
        self.stats_status.setProperty("role", "")
        self._set_busy(True)
        task: Task | None = None

        def done(stats: TensorStats) -> None:
            if self._task is task:  # not a late answer for an earlier selection
                self._task = None
                self._set_busy(False)
                self.stats = stats
                self._show_stats(stats)

        def failed(failure: Failure) -> None:
            if self._task is task:
                self._task = None
                self._set_busy(False)
                self.stats_status.setText(failure.message[:1].upper() + failure.message[1:])
                self.stats_status.setToolTip(failure.details)

        task = self._task = self._runner.run(lambda cancelled: stats_for(entry, cancel=cancelled), done, failed)

    def _set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.stop.setVisible(busy)

    def _show_stats(self, stats: TensorStats | None) -> None:
        labels = self._stat_labels
        self.histogram.set_stats(stats)
        self.histogram.setVisible(bool(stats and stats.histogram))
        if stats is None:
            for label in labels.values():
                label.setText("–")
            return
        for key in ("min", "max", "mean", "std"):
            value = getattr(stats, key)
            labels[key].setText(format_number(value) if value is not None else "–")
            labels[key].setToolTip(repr(value) if value is not None else "no finite values")
        labels["nan"].setText(f"{stats.nan:,}")
        labels["inf"].setText(f"{stats.inf:,}")
        labels["zeros"].setText(f"{stats.zero_share:.1%}")
        labels["zeros"].setToolTip(f"{stats.zeros:,} of {stats.count:,} values are zero")
        problems = stats.nan + stats.inf
        self.stats_status.setProperty("role", "problem" if problems else "")
        self.stats_status.style().polish(self.stats_status)
        self.stats_status.setText(f"Warning: {problems:,} values are NaN or infinite." if problems else
                                  f"{stats.count:,} values; min, max, mean and std over the finite ones.")
