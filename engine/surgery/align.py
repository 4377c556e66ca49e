"""burn-store's ``LoadResult``, offline: what a plan (or store) would do when loaded into a template model.

The template is a file saved from the target model, or the model's Rust source: its names and shapes
are what the model expects. Names match exactly, or through enum variants the template carries and the
source does not (template ``feature.BaseConv.weight`` takes source ``feature.weight``), as burn-store's
``skip_enum_variants`` does. For each missing name the closest unused ones are suggested.

A template read from source may not know everything: a dimension set at run time takes any size (the
tensor loads, and is counted apart as ``runtime_shapes``: its shape could not be checked in full), and a
tensor the model may or may not have (an ``Option``, a bias flag set at run time) is not missing when the
source lacks it (``runtime_absent``). Neither is ever counted as a mismatch.
"""

from __future__ import annotations

import difflib
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .. import humanize
from ..formats.rust_model.shapes import fits, is_runtime
from ..store import Store
from .adapters import strip_enum_variants
from .plan import Plan

SUGGESTIONS = 3
_COMMON_SEGMENT = 64  # a segment shared by more names than this says little about which one is meant


@dataclass(frozen=True)
class ShapeMismatch:
    name: str
    source_shape: tuple[int, ...]
    template_shape: tuple[int, ...]

    @property
    def matches_if_transposed(self) -> bool:
        return len(self.source_shape) == 2 and fits(self.template_shape, self.source_shape[::-1])


@dataclass(frozen=True)
class DtypeDifference:
    name: str
    source_dtype: str
    template_dtype: str


@dataclass
class AlignmentReport:
    """``applied`` loads as is; ``missing`` the model wants but won't get; ``unused`` the source has spare."""

    applied: list[str] = field(default_factory=list)
    shape_mismatches: list[ShapeMismatch] = field(default_factory=list)
    dtype_differences: list[DtypeDifference] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    suggestions: dict[str, list[str]] = field(default_factory=dict)
    through_variants: dict[str, str] = field(default_factory=dict)  # template name -> source name
    runtime_shapes: list[str] = field(default_factory=list)  # of ``applied``: a dimension the template sets at run time
    runtime_absent: list[str] = field(default_factory=list)  # the model has these or not at run time; the source has not

    @property
    def ok(self) -> bool:
        return not self.missing and not self.shape_mismatches

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "shape_mismatches": [{"name": m.name, "source_shape": list(m.source_shape),
                                  "template_shape": list(m.template_shape),
                                  "matches_if_transposed": m.matches_if_transposed} for m in self.shape_mismatches],
            "dtype_differences": [vars(d) for d in self.dtype_differences],
            "missing": self.missing, "unused": self.unused, "suggestions": self.suggestions,
            "through_variants": self.through_variants,
            "runtime_shapes": self.runtime_shapes, "runtime_absent": self.runtime_absent,
        }

    def lines(self) -> list[str]:
        """The report as a user reads it in a terminal."""
        out = [f"applied {len(self.applied)}, missing {len(self.missing)}, unused {len(self.unused)}, "
               f"shape mismatches {len(self.shape_mismatches)}, dtype differences {len(self.dtype_differences)}"
               + (f", shapes set at run time {len(self.runtime_shapes)}" if self.runtime_shapes else "")
               + (f", present at run time or not {len(self.runtime_absent)}" if self.runtime_absent else "")]
        for m in self.shape_mismatches:
            hint = " (matches if transposed)" if m.matches_if_transposed else ""
            out.append(f"  shape mismatch {m.name}: source {list(m.source_shape)}, template "
                       f"{humanize.shape(m.template_shape)}{hint}")
        out += [f"  shape set at run time {name}" for name in self.runtime_shapes]
        out += [f"  present at run time or not {name}" for name in self.runtime_absent]
        for d in self.dtype_differences:
            out.append(f"  dtype {d.name}: source {d.source_dtype}, template {d.template_dtype}")
        for name in self.missing:
            close = self.suggestions.get(name)
            out.append(f"  missing {name}" + (f" (closest: {', '.join(close)})" if close else ""))
        out += [f"  unused {name}" for name in self.unused]
        return out


def align(source: Plan | Store, template: Store, *, closest: bool = True) -> AlignmentReport:
    """Compare what ``source`` would provide with what ``template``'s model expects.

    ``closest=False`` leaves out the closest names of each missing one: the suggestion search aligns dozens
    of plans and reads none of them, and at 10,000 missing names they are nearly all of the cost."""
    items = source.tensors if isinstance(source, Plan) else source.entries
    provided = {t.name: t for t in items}
    report = AlignmentReport()
    matched: set[str] = set()
    unmatched_template = []
    for entry in template.expected(provided):
        item = provided.get(entry.name)
        if item is None:
            unmatched_template.append(entry)
            continue
        matched.add(entry.name)
        _compare(report, entry.name, item, entry)
    by_stripped: dict[str, str] = {}
    for name in provided:
        if name not in matched:
            by_stripped.setdefault(strip_enum_variants(name), name)
    for entry in unmatched_template:
        candidate = by_stripped.get(strip_enum_variants(entry.name))
        if candidate is not None and candidate not in matched:
            matched.add(candidate)
            report.through_variants[entry.name] = candidate
            _compare(report, entry.name, provided[candidate], entry)
        else:
            (report.runtime_absent if template.is_optional(entry.name) else report.missing).append(entry.name)
    report.unused = [name for name in provided if name not in matched]
    report.suggestions = closest_names(report.missing, report.unused) if closest else {}
    return report


def validate(source: Plan | Store, template: Store) -> list[ShapeMismatch]:
    """burn-store's ``validate``: every tensor the template also has (exactly or through enum variants)
    must have its shape. The CLI and the GUI export both refuse to write while this is not empty."""
    return align(source, template).shape_mismatches


def _compare(report: AlignmentReport, name: str, item: Any, entry: Any) -> None:
    if not fits(entry.shape, tuple(item.shape)):
        report.shape_mismatches.append(ShapeMismatch(name, tuple(item.shape), tuple(entry.shape)))
        return
    report.applied.append(name)
    if is_runtime(entry.shape):
        report.runtime_shapes.append(name)
    if item.dtype != entry.dtype:
        report.dtype_differences.append(DtypeDifference(name, str(item.dtype), str(entry.dtype)))


def _shared_prefixes(a: list[str], b: list[str]) -> int:
    """Characters segment pairs share at their start: breaks ties between equally close names (q vs q_proj)."""
    return sum(len(os.path.commonprefix([x, y])) for x, y in zip(a, b))


def closest_names(wanted: Sequence[str], available: Iterable[str], limit: int = SUGGESTIONS) -> dict[str, list[str]]:
    """For each wanted name, the available names most alike segment by segment.

    An inverted index of segments keeps this near-linear: only names sharing a telling segment
    (or, failing that, the leaf) are scored with difflib.
    """
    available = list(available)
    if not wanted or not available:
        return {}
    split = [name.split(".") for name in available]
    index: dict[str, list[int]] = {}
    for i, parts in enumerate(split):
        for part in set(parts):
            index.setdefault(part, []).append(i)
    result = {}
    for name in wanted:
        parts = name.split(".")
        votes: Counter[int] = Counter()
        for part in set(parts):
            postings = index.get(part, ())
            if len(postings) <= _COMMON_SEGMENT:
                votes.update(postings)
        if not votes:
            votes.update(index.get(parts[-1], ())[:_COMMON_SEGMENT])
        matcher = difflib.SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(parts)  # analysed once, compared with each candidate
        scored = []
        for i, _ in votes.most_common(3 * limit):
            matcher.set_seq1(split[i])
            scored.append((-matcher.ratio(), -_shared_prefixes(parts, split[i]), available[i]))
        close = [n for r, _, n in sorted(scored) if -r >= 0.5][:limit]
        if close:
            result[name] = close
    return result
