"""What the recipe does to each tensor of the tab's file, and how the result fits the template: marks.

The tree, the preview and the diff speak one visual language (DESIGN.md): transformed, dropped, conflict,
shape mismatch, unused, each with a word. These functions turn an engine plan and its alignment into that
language, once per plan, in the planning worker; the document hands the result to every panel.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from engine import Store, humanize
from engine.surgery import (
    AlignmentReport,
    Cast,
    FuseSplit,
    FuseWeightNorm,
    MergedLora,
    Plan,
    PlannedTensor,
    Rename,
    SplitFused,
    Transpose,
    UnpermuteRotary,
)

TRANSFORMED, DROPPED, CONFLICT = "transformed", "dropped", "conflict"
MISMATCH, UNUSED = "mismatch", "unused"  # against the template: the shape differs / the template has no such name
_OP_WORDS = ((SplitFused, "split"), (Rename, "renamed"), (Transpose, "transposed"), (Cast, "cast"),
             (FuseWeightNorm, "fused"), (FuseSplit, "fused"), (UnpermuteRotary, "rows reordered"),
             (MergedLora, "LoRA merged"))


@dataclass(frozen=True)
class Mark:
    """What the recipe does to one tensor of the tab's file: a state of the visual language and its word."""

    state: str  # TRANSFORMED, DROPPED, CONFLICT, MISMATCH, UNUSED, or "" (kept as it is, applied to the template)
    word: str  # "renamed, transposed", "dropped", "replaced", "conflict", "applied": never colour alone
    reason: str = ""  # why it is dropped or in conflict; how it fits the template, when there is one
    tensor: PlannedTensor | None = None  # what it becomes, when it is kept

    @property
    def detail(self) -> str:
        """A sentence for tooltips, made on demand (10,000 of them on every plan would be slow)."""
        if self.tensor is None or self.state == CONFLICT:
            return self.reason
        text = f"→ {self.tensor.name}: " + ("; ".join(self.tensor.operations) or "as it is")
        return f"{text}\n{self.reason}" if self.reason else text


@lru_cache(maxsize=64)
def _words(kinds: tuple[type, ...]) -> str:
    return ", ".join(word for kind, word in _OP_WORDS if kind in kinds)


def op_words(tensor: PlannedTensor) -> str:
    """``renamed, transposed``: the kinds of operation a planned tensor goes through, in a word each."""
    return _words(tuple(type(op) for op in tensor.ops))


def template_fit(report: AlignmentReport) -> dict[str, tuple[str, str, str]]:
    """Planned name -> (state, word, sentence): how each tensor of the result fits the template (engine ``align``)."""
    fit: dict[str, tuple[str, str, str]] = {}
    variants = report.through_variants
    for name in report.applied:
        source = variants.get(name, name)
        how = f"the template wants it as {name} (enum variant)" if source != name else "the template wants it as it is"
        fit[source] = ("", "applied", how)
    for mismatch in report.shape_mismatches:
        hint = " (matches if transposed)" if mismatch.matches_if_transposed else ""
        fit[variants.get(mismatch.name, mismatch.name)] = (
            MISMATCH, "shape mismatch", f"shape mismatch: here {list(mismatch.source_shape)}, template "
                                        f"{humanize.shape(mismatch.template_shape)}{hint}")
    for name in report.unused:
        fit[name] = (UNUSED, "unused", f"the template has no tensor named {name}")
    return fit


def plan_marks(result: Plan, store: Store, prefix: str = "", report: AlignmentReport | None = None) -> dict[str, Mark]:
    """Marks for ``store``'s tensors by their names in the file (``prefix``: the top-level key's, when one is set).

    With a template ``report``, every kept tensor also says how it fits the template (applied, unused, mismatch).
    """
    label = str(store.path)
    marks: dict[str, Mark] = {}
    if prefix:
        outside = Mark(DROPPED, "dropped", f"outside the top-level key {prefix[:-1]!r}")
        marks = {e.name: outside for e in store.entries if not e.name.startswith(prefix)}
    for dropped in result.dropped:
        if dropped.source == label:
            marks[prefix + dropped.name] = Mark(DROPPED, "dropped", dropped.reason)
    for override in result.overrides:
        if override.replaced_source == label:
            marks[prefix + override.replaced_name] = Mark(DROPPED, "replaced", f"replaced by {override.kept}")
    conflicted = {c.name for c in result.conflicts}
    made: dict[str, list[str]] = {}  # entry -> the tensors made from it (several for a split fused module)
    for tensor in result.tensors:
        if tensor.source != label or not (tensor.ops or tensor.name in conflicted):
            continue
        if tensor.name in conflicted:
            mark = Mark(CONFLICT, "conflict", f"another tensor would also be named {tensor.name}", tensor)
        else:
            mark = Mark(TRANSFORMED, op_words(tensor), "", tensor)
        for entry in tensor.inputs:
            made.setdefault(entry.name, []).append(tensor.name)
            if len(made[entry.name]) > 1 and mark.state != CONFLICT:
                mark = Mark(TRANSFORMED, mark.word, f"split into {len(made[entry.name])}: "
                                                    + ", ".join(made[entry.name]))
            marks[prefix + entry.name] = mark
    if report is not None:
        _mark_fit(marks, result, label, prefix, template_fit(report))
    return marks


def _mark_fit(marks: dict[str, Mark], result: Plan, label: str, prefix: str,
              fit: dict[str, tuple[str, str, str]]) -> None:
    """Add the template's verdict to each kept tensor's mark: a mismatch or an unused name outranks a transform."""
    for tensor in result.tensors:
        found = fit.get(tensor.name)
        if tensor.source != label or found is None:
            continue
        state, word, sentence = found
        for entry in tensor.inputs:
            old = marks.get(prefix + entry.name)
            if old is not None and old.state == CONFLICT:
                continue
            words = f"{old.word} · {word}" if old is not None else word
            marks[prefix + entry.name] = Mark(state or (old.state if old is not None else ""), words, sentence, tensor)
