"""What about the selected tensor (or group): where it lives, what module it belongs to, and its statistics.

Statistics run in a worker through ``engine.stats``; a new selection cancels the running computation, and
a late result for an older selection is never shown.
"""

from __future__ import annotations

# np.percentile (the statistics' percentiles) imports numpy.ma on its first call (np.unique asks
# np.ma.is_masked): 0.05-0.1 s of importing, holding the GIL in the statistics worker while the window paints
# its first selection. Imported with the panel instead, before the window shows.
import numpy.ma  # noqa: F401
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine import TensorStats, TreeNode, humanize, is_buffer, scheme_description, stats_for
from engine.surgery import ModuleGuess
from gui.numbers import DEFAULT_DIGITS, digits_for, format_number, format_percent
from gui.panels.histogram import HistogramWidget
from gui.resources import monospace
from gui.widgets import ElidedLabel
from gui.workers import Failure, Task, TaskRunner

RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
PAIRS_PER_ROW = 2  # two caption/value pairs a row: room for values like -1.60887e-05


def stat_rows(stats: TensorStats, digits: int) -> list[tuple[str, str, str, str]]:
    """(key, caption, value, tooltip) for the statistics that mean something for the tensor's dtype.

    Bools: count and share true. Integers: range, mean, percentiles, zeros; never NaN or Inf. Floats add
    abs-max, L2 norm and +Inf/-Inf counts. Every number goes through the one ``format_number``.
    """
    number = lambda v: format_number(v, digits) if v is not None else "–"  # noqa: E731
    zeros = (f"{format_percent(stats.zero_share)}", f"{stats.zeros:,} of {stats.count:,} values are zero")
    if stats.kind == "bool":
        share = stats.true_count / stats.count if stats.count else 0.0
        return [("count", "Count", f"{stats.count:,}", ""),
                ("true", "True", f"{stats.true_count:,} ({format_percent(share)})", f"{stats.zeros:,} false")]
    rows = [("min", "Min", number(stats.min), repr(stats.min)), ("max", "Max", number(stats.max), repr(stats.max)),
            ("mean", "Mean", number(stats.mean), repr(stats.mean)), ("std", "Std", number(stats.std), repr(stats.std))]
    if stats.kind == "float":
        rows += [("abs_max", "Abs max", number(stats.abs_max), "largest magnitude of the finite values"),
                 ("l2", "L2 norm", number(stats.l2), "square root of the sum of squares of the finite values")]
    sampled = f" (of a sample of {stats.sampled:,} values)" if stats.sampled else ""
    rows += [(f"p{p}", f"P{p}", number(v), f"{p}th percentile of the finite values{sampled}")
             for p, v in stats.percentiles]
    rows.append(("zeros", "Zeros", *zeros))
    if stats.kind == "float":
        rows += [("nan", "NaN", f"{stats.nan:,}", ""), ("pos_inf", "+Inf", f"{stats.pos_inf:,}", ""),
                 ("neg_inf", "-Inf", f"{stats.neg_inf:,}", "")]
    return rows


def _value_label(mono: bool = False) -> QLabel:
    label = QLabel()
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if mono:
        label.setFont(monospace())
    return label


class DetailsPanel(QWidget):
    """Facts about the selection; ``stats`` holds the numbers on show once computed.

    Each fact appears once: the title is the full name, one summary line has dtype, shape, values and size,
    and the form below only adds what the line does not say (offset, param id, module).
    """

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self._task: Task | None = None
        self._digits = DEFAULT_DIGITS
        self._quantized = False
        self.stats: TensorStats | None = None  # the statistics on show, for the current tensor

        self.title = ElidedLabel()
        self.title.setObjectName("detailsTitle")
        font = monospace()
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
        for key, caption, mono in (("tensors", "Tensors", False), ("scheme", "Scheme", False), ("offset", "Offset", False),
                                   ("param_id", "Param ID", True), ("module", "Module", False)):
            label = _value_label(mono)
            label.setWordWrap(key in ("module", "scheme"))
            self._fact_labels[key] = label
            self.facts.addRow(caption, label)

        self.stats_box = QGroupBox("Statistics")
        self.stats_grid = QGridLayout()
        self.stats_grid.setHorizontalSpacing(10)
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
        self.log_counts = QCheckBox("Log count")
        self.log_counts.setObjectName("logCounts")
        self.log_counts.setToolTip("Bar heights on a log scale: rare values next to common ones stay visible")
        self.log_counts.toggled.connect(self.histogram.set_log_counts)
        status_row.addWidget(self.log_counts)  # on the status line: the histogram below keeps its height
        box_layout = QVBoxLayout(self.stats_box)
        box_layout.addLayout(self.stats_grid)
        box_layout.addLayout(status_row)
        box_layout.addWidget(self.histogram, 1)

        layout = QVBoxLayout(self)
        layout.setSpacing(4)  # the statistics and histogram fit the default window whole
        layout.addWidget(self.title)
        layout.addWidget(self.summary)
        layout.addWidget(self.hint)
        layout.addLayout(self.facts)
        layout.addWidget(self.stats_box)
        layout.addStretch(1)
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
        entry = node.entry
        self.summary.setToolTip(f"{node.nbytes:,} bytes")
        if entry is None:
            buffers = f" + {humanize.count(node.buffer_values)} buffer values" if node.buffer_values else ""
            self.summary.setText(f"group · {node.tensors:,} tensors · {humanize.count(node.parameters)} parameters"
                                 f"{buffers} · {humanize.size(node.nbytes)}")
            self.stats_box.hide()
            return
        kind = " · buffer" if is_buffer(entry) else ""
        self.summary.setText(f"{entry.dtype} · {humanize.shape(entry.shape)} · {entry.numel:,} values · "
                             f"{humanize.size(entry.nbytes)}{kind}")
        if node.has_children:
            self._set_fact(facts["tensors"], f"{node.tensors:,} (this one and those below it)")
        self._set_fact(facts["scheme"], scheme_description(entry.dtype),
                       "How Burn quantized this tensor; statistics and values are of its dequantized values")
        self._set_fact(facts["offset"], f"{entry.offset:,}" if entry.offset is not None else None,
                       "Absolute byte offset of the tensor's data in the file")
        self._set_fact(facts["param_id"], str(entry.param_id) if entry.param_id is not None else None)
        self._digits = digits_for(entry.dtype)
        self._quantized = entry.dtype.kind == "quantized"
        self.stats_box.show()
        self._start_stats(node)

    def set_module(self, module: ModuleGuess | None) -> None:
        """The inferred module type of the selection's module (guessed from that module's tensors)."""
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
        self.histogram.set_stats(stats, self._digits)
        self.histogram.setVisible(bool(stats and stats.histogram))
        self.log_counts.setVisible(bool(stats and stats.histogram) and not self.histogram.is_constant())
        self._fill_grid(stat_rows(stats, self._digits) if stats is not None else [])
        if stats is None:
            return
        problems = stats.nan + stats.inf
        self.stats_status.setProperty("role", "problem" if problems else "")
        self.stats_status.style().polish(self.stats_status)
        if problems:
            self.stats_status.setText(f"Warning: {problems:,} values are NaN or infinite.")
        elif self._quantized:
            self.stats_status.setText("Of the dequantized values.")
        elif stats.kind == "float":
            self.stats_status.setText("Over the finite values.")
        else:
            self.stats_status.setText("")

    def _fill_grid(self, rows: list[tuple[str, str, str, str]]) -> None:
        """Rebuild the caption/value grid for this dtype's statistics (a bool has two rows, a float many)."""
        while self.stats_grid.count():
            widget = self.stats_grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        for i, (key, caption, text, tooltip) in enumerate(rows):
            value = _value_label(mono=True)
            value.setAlignment(RIGHT)
            value.setObjectName(f"stat_{key}")
            value.setText(text)
            value.setToolTip(tooltip)
            row, col = divmod(i, PAIRS_PER_ROW)
            self.stats_grid.addWidget(QLabel(caption), row, col * 3)
            self.stats_grid.addWidget(value, row, col * 3 + 1)
        self.stats_grid.setColumnMinimumWidth(2, 24)  # a gap between the two pairs
        for col in (1, 4):
            self.stats_grid.setColumnStretch(col, 1)
