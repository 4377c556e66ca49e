"""Adapter from an alignment (and optionally a value diff) to a side-by-side table: source | status | other.

``build_rows`` joins the engine's ``AlignmentReport`` and ``DiffReport`` into one row per pair (or lone
tensor) with no Qt; ``DiffModel`` shows those rows and ``DiffFilterModel`` hides statuses and names.
Every status has a word, an icon and a colour (DESIGN.md's visual language), so grey screenshots and
colour-blind users lose nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import Any, Sequence

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPointF,
    QRectF,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QColor, QIcon, QPainter, QPainterPath, QPen, QPixmap

from engine import Store, TensorEntry, humanize, natural_key
from engine.surgery import AlignmentReport, DiffReport, Plan, Rename
from gui.numbers import format_number
from gui.resources import monospace
from gui.visual import TONE_COLOURS

Index = QModelIndex | QPersistentModelIndex
ROW_ROLE = Qt.ItemDataRole.UserRole  # data(index, ROW_ROLE) is the DiffRow behind a row
SHARE_ROLE = Qt.ItemDataRole.UserRole + 1  # data(index, SHARE_ROLE): a pair's max |Δ| as a share of the largest
# The summary bar's groups: what a glance at a comparison asks, in the statuses' colours.
SUMMARY_GROUPS = (("identical", ("identical", "applied"), "ok"),
                  ("transposed", ("transposed", "renamed"), "transformed"),
                  ("changed", ("dtype", "different", "shape_mismatch"), "transformed"),
                  ("missing", ("missing",), "problem"), ("unused", ("unused",), "unused"))


@dataclass(frozen=True)
class Status:
    """How a pair reads: the word shown, its tone (colour) and the glyph drawn in its icon."""

    key: str
    word: str
    tone: str  # "ok", "transformed", "problem", "unused"
    glyph: str  # "tick", "swap", "arrow", "approx", "cross", "minus", "plus"
    meaning: str


STATUSES: dict[str, Status] = {s.key: s for s in (
    Status("identical", "identical", "ok", "tick", "same name, shape, dtype and values"),
    Status("applied", "applied", "ok", "tick", "same name and shape: loads as it is"),
    Status("renamed", "renamed", "transformed", "arrow", "matched under another name (recipe or enum variant)"),
    Status("transposed", "transposed", "transformed", "swap", "the shapes match if the source is transposed"),
    Status("dtype", "dtype differs", "transformed", "approx", "same shape, another dtype: loads with a cast"),
    Status("different", "values differ", "transformed", "approx", "same name and shape, other values"),
    Status("shape_mismatch", "shape mismatch", "problem", "cross", "the shapes differ"),
    Status("missing", "missing", "problem", "minus", "the other file has it; the recipe's result does not"),
    Status("unused", "unused", "unused", "plus", "the recipe's result has it; the other file does not"),
    Status("dropped", "dropped", "dropped", "slash", "the recipe drops it from its source, for the reason shown"),
)}


@dataclass(frozen=True)
class DroppedTensor:
    """The left side of a ``dropped`` row: a source tensor the recipe leaves out (shape unknown if not found)."""

    name: str
    shape: tuple[int, ...] | None
    dtype: str
    reason: str


def dropped_tensors(plan: Plan, sources: Sequence[Store]) -> list[DroppedTensor]:
    """The plan's dropped tensors with their shapes and dtypes read from ``sources`` (the stores as planned)."""
    by_path = {str(store.path): store for store in sources}
    out = []
    for dropped in plan.dropped:
        store = by_path.get(dropped.source)
        entry = store.entry(dropped.name) if store is not None and dropped.name in store else None
        out.append(DroppedTensor(dropped.name, tuple(entry.shape) if entry else None,
                                 str(entry.dtype) if entry else "", dropped.reason))
    return out


@dataclass(frozen=True)
class DiffRow:
    """One pair: ``source`` is a planned tensor (left), ``other`` an entry of the compared file (right)."""

    status: str
    source: Any | None
    other: TensorEntry | None
    note: str = ""
    suggestions: tuple[str, ...] = ()  # for a missing tensor: the closest unused source names
    max_abs: float | None = None  # the largest |source - other| when values were compared
    relative_change: float | None = None  # ||source - other|| / ||source|| of a pair whose values differ

    @property
    def name(self) -> str:
        """The name rows sort and filter by: the other file's where there is one (what the model wants)."""
        return self.other.name if self.other is not None else self.source.name

    def matches(self, text: str) -> bool:
        text = text.lower()
        return any(text in item.name.lower() for item in (self.source, self.other) if item is not None)


def build_rows(plan: Plan, other: Store, report: AlignmentReport, values: DiffReport | None = None,
               dropped: Sequence[DroppedTensor] = ()) -> list[DiffRow]:
    """Rows in natural order of name: pairs the alignment matched, what each side lacks, what the recipe dropped."""
    ours = {t.name: t for t in plan.tensors}
    theirs = {e.name: e for e in other.expected(ours)}  # as the alignment saw them (a Rust source's Vec elements)
    compared = {t.name: t for t in values.tensors} if values is not None else {}
    cast = {d.name: d for d in report.dtype_differences}
    runtime = set(report.runtime_shapes)
    rows = []
    for name in report.applied:
        source_name = report.through_variants.get(name, name)
        tensor = ours[source_name]
        renames = [op.why for op in tensor.ops if isinstance(op, Rename)]
        status, notes = "applied", []
        if name in report.through_variants:
            status = "renamed"
            notes.append(f"{source_name} loads into {name} (enum variant)")
        elif renames:
            status = "renamed"
            notes.append(f"renamed from {tensor.source_name} ({', '.join(renames)})")
        if name in runtime:
            notes.append(f"the model sets its shape {humanize.shape(theirs[name].shape)} at run time")
        if name in cast:  # a cast matters more than a name: it changes what the model computes with
            status = "dtype"
            notes.append(f"the source is {cast[name].source_dtype}, the other file {cast[name].template_dtype}")
        if name in compared:  # values were compared: they decide, what the recipe did stays in the note
            status, value_note = _value_status(compared[name].status, compared[name].max_abs)
            notes.insert(0, value_note)
        note = "; ".join(text for text in notes if text)
        max_abs = compared[name].max_abs if name in compared else None
        change = compared[name].relative_change if name in compared else None
        rows.append(DiffRow(status, tensor, theirs[name], note, max_abs=max_abs, relative_change=change))
    for mismatch in report.shape_mismatches:
        source_name = report.through_variants.get(mismatch.name, mismatch.name)
        shapes = f"source {humanize.shape(mismatch.source_shape)}, other {humanize.shape(mismatch.template_shape)}"
        status = "transposed" if mismatch.matches_if_transposed else "shape_mismatch"
        note = f"matches if transposed: {shapes}" if mismatch.matches_if_transposed else f"shapes differ: {shapes}"
        rows.append(DiffRow(status, ours[source_name], theirs[mismatch.name], note))
    dropped_by_name = {item.name: item for item in dropped}
    for name in report.missing:
        close = tuple(report.suggestions.get(name, ()))
        note = "closest in the source: " + ", ".join(close) if close else "nothing in the source is close"
        if name in dropped_by_name:  # the likeliest cause first: the recipe itself left it out
            note = f"the recipe drops {name} ({dropped_by_name[name].reason}); {note}"
        rows.append(DiffRow("missing", None, theirs[name], note, close))
    rows += [DiffRow("unused", ours[name], None, STATUSES["unused"].meaning) for name in report.unused]
    rows += [DiffRow("dropped", item, None, item.reason) for item in dropped]
    return sorted(rows, key=lambda row: natural_key(row.name))


def _value_status(status: str, max_abs: float | None) -> tuple[str, str]:
    if status == "identical":
        return "identical", ""
    if status == "dtype_mismatch":
        return "dtype", "same shape, another dtype"
    return "different", f"largest difference {max_abs:.6g}" if max_abs is not None else "the bytes differ"


class Column(IntEnum):
    SOURCE_NAME = 0
    SOURCE_SHAPE = 1
    SOURCE_DTYPE = 2
    STATUS = 3
    OTHER_NAME = 4
    OTHER_SHAPE = 5
    OTHER_DTYPE = 6
    DELTA = 7  # max |source - other|, with a bar so the worst pairs stand out
    CHANGE = 8  # ||source - other|| / ||source||: how much a merge or a fine-tune moved the whole tensor


HEADERS = {Column.SOURCE_NAME: "Source (after recipe)", Column.SOURCE_SHAPE: "Shape", Column.SOURCE_DTYPE: "DType",
           Column.STATUS: "Status", Column.OTHER_NAME: "Other file", Column.OTHER_SHAPE: "Shape",
           Column.OTHER_DTYPE: "DType", Column.DELTA: "max |Δ|", Column.CHANGE: "‖Δ‖/‖W‖"}
SOURCE_COLUMNS = (Column.SOURCE_NAME, Column.SOURCE_SHAPE, Column.SOURCE_DTYPE)


@cache
def status_icon(key: str) -> QIcon:
    """A filled disc in the status colour with a white glyph; drawn, so it needs no image file."""
    status = STATUSES[key]
    pixmap = QPixmap(32, 32)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(TONE_COLOURS[status.tone]))
    painter.drawEllipse(QRectF(1, 1, 30, 30))
    pen = QPen(QColor("white"), 3.6, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap, Qt.PenJoinStyle.RoundJoin)
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawPath(_glyph(status.glyph))
    painter.end()
    return QIcon(pixmap)


def _glyph(name: str) -> QPainterPath:
    path = QPainterPath()

    def line(*points: tuple[float, float]) -> None:
        path.moveTo(QPointF(*points[0]))
        for point in points[1:]:
            path.lineTo(QPointF(*point))

    if name == "tick":
        line((9, 16.5), (14, 21.5), (23, 11))
    elif name == "cross":
        line((10.5, 10.5), (21.5, 21.5))
        line((21.5, 10.5), (10.5, 21.5))
    elif name == "minus":
        line((9, 16), (23, 16))
    elif name == "plus":
        line((9, 16), (23, 16))
        line((16, 9), (16, 23))
    elif name == "arrow":
        line((8, 16), (23, 16))
        line((18, 11), (23, 16), (18, 21))
    elif name == "swap":
        line((9, 12), (23, 12))
        line((19, 8), (23, 12), (19, 16))
        line((23, 20), (9, 20))
        line((13, 16), (9, 20), (13, 24))
    elif name == "slash":
        line((10, 22), (22, 10))
    elif name == "approx":
        for y in (12.5, 19.5):
            path.moveTo(8.5, y)
            path.cubicTo(12, y - 4, 16, y + 4, 23.5, y - 1)
    return path


def relative_text(change: float | None) -> str:
    """A relative change as a percentage to three significant digits (``0.377%``), ``∞`` against a zero tensor."""
    if change is None:
        return ""
    return "∞" if not math.isfinite(change) else f"{change * 100:.3g}%"


class DiffModel(QAbstractTableModel):
    """Shows ``DiffRow``s; names, shapes and dtypes in monospace, the status as word, icon and colour."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[DiffRow] = []
        self._font = monospace()
        self._largest = 0.0  # the largest finite max |Δ| of the rows, for the bars

    @property
    def rows(self) -> list[DiffRow]:
        return self._rows

    def set_rows(self, rows: Sequence[DiffRow]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        deltas = [r.max_abs for r in self._rows if r.max_abs is not None and math.isfinite(r.max_abs)]
        self._largest = max(deltas, default=0.0)
        self.endResetModel()

    def summary(self) -> list[tuple[str, int, str]]:
        """(word, count, tone) for each SUMMARY_GROUPS group, in order: what the summary bar draws."""
        counts = self.counts()
        return [(word, sum(counts[k] for k in keys), tone) for word, keys, tone in SUMMARY_GROUPS]

    def counts(self) -> dict[str, int]:
        found = {key: 0 for key in STATUSES}
        for row in self._rows:
            found[row.status] += 1
        return found

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(Column)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[Column(section)]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.InitialSortOrderRole:
            return Qt.SortOrder.DescendingOrder if section == Column.DELTA else Qt.SortOrder.AscendingOrder
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        column = Column(index.column())
        status = STATUSES[row.status]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(row, column)
        if role == ROW_ROLE:
            return row
        if role == SHARE_ROLE and column == Column.DELTA:
            if row.max_abs is None:
                return None
            return 1.0 if not math.isfinite(row.max_abs) else row.max_abs / self._largest if self._largest else 0.0
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (Column.DELTA, Column.CHANGE):
            return Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        if role == Qt.ItemDataRole.DecorationRole and column == Column.STATUS:
            return status_icon(row.status)
        if role == Qt.ItemDataRole.ForegroundRole and status.tone != "ok":
            return QBrush(QColor(TONE_COLOURS[status.tone]))
        if role == Qt.ItemDataRole.FontRole and column != Column.STATUS:
            return self._font
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{status.word}: {row.note or status.meaning}"
        return None

    @staticmethod
    def _text(row: DiffRow, column: Column) -> str:
        if column == Column.STATUS:
            return STATUSES[row.status].word
        if column == Column.DELTA:
            return format_number(row.max_abs, 3) if row.max_abs is not None else ""
        if column == Column.CHANGE:
            return relative_text(row.relative_change)
        item = row.source if column in SOURCE_COLUMNS else row.other
        if item is None:
            return "—" if column in (Column.SOURCE_NAME, Column.OTHER_NAME) else ""
        if column in (Column.SOURCE_NAME, Column.OTHER_NAME):
            return item.name
        if column in (Column.SOURCE_SHAPE, Column.OTHER_SHAPE):
            return humanize.shape(tuple(item.shape)) if item.shape is not None else ""
        return str(item.dtype)


class DiffFilterModel(QSortFilterProxyModel):
    """Hides rows whose status is unchecked or whose names do not contain the filter text; sorts names naturally."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._hidden: set[str] = set()
        self._text = ""

    def set_status_visible(self, key: str, visible: bool) -> None:
        self.beginFilterChange()
        if visible:
            self._hidden.discard(key)
        else:
            self._hidden.add(key)
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_text(self, text: str) -> None:
        self.beginFilterChange()
        self._text = text.strip()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        row: DiffRow = self.sourceModel().index(source_row, 0, source_parent).data(ROW_ROLE)
        return row.status not in self._hidden and (not self._text or row.matches(self._text))

    def lessThan(self, left: Index, right: Index) -> bool:
        if left.column() in (Column.DELTA, Column.CHANGE):  # by size: sorted descending, the worst pairs come first
            field = "max_abs" if left.column() == Column.DELTA else "relative_change"
            a, b = (getattr(index.data(ROW_ROLE), field) for index in (left, right))
            return (-1.0 if a is None else math.inf if math.isnan(a) else a) < \
                (-1.0 if b is None else math.inf if math.isnan(b) else b)
        a, b = left.data() or "", right.data() or ""
        return natural_key(a) < natural_key(b)
