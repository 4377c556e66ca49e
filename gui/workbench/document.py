"""One tab's recipe as a Qt document: the sources, the recipe, its undo stack and the latest plan.

Everything the workbench panels show or edit goes through here, so every edit is undoable and every
panel sees the same plan. The recipe and plan are engine data; this class only adds signals, undo, a
debounce and a worker, so the UI thread never plans.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from engine import Store, open_store
from engine.formats.pytorch import NAME as PYTORCH
from engine.surgery import AlignmentReport, Plan, PlannedTensor, Recipe, RemapRule, SourceSpec, align, plan
from engine.surgery.ops import Cast, FuseSplit, FuseWeightNorm, Rename, SplitFused, Transpose
from gui.workers import Failure, Task, TaskRunner

PLAN_DELAY_MS = 60  # edits pause this long before the plan is recomputed
_MERGE_ID = 6061  # QUndoCommand id shared by edits that may merge (typing into one field)


@dataclass(frozen=True)
class _State:
    """What an undo step restores: the sources (in precedence order), the recipe over them, and its template."""

    stores: tuple[Store, ...]
    recipe: Recipe
    template: Store | None = None


class _Edit(QUndoCommand):
    """Swap the document between two states; consecutive edits with one ``merge_key`` merge into one step."""

    def __init__(self, document: "RecipeDocument", before: _State, after: _State, text: str,
                 merge_key: str | None) -> None:
        super().__init__(text)
        self._document = document
        self.before = before
        self.after = after
        self.merge_key = merge_key

    def id(self) -> int:
        return _MERGE_ID if self.merge_key else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, _Edit) or other.merge_key != self.merge_key:
            return False
        self.after = other.after
        self.setObsolete(self.after == self.before)  # typed and deleted again: no step at all
        return True

    def redo(self) -> None:
        self._document._apply(self.after)

    def undo(self) -> None:
        self._document._apply(self.before)


TRANSFORMED, DROPPED, CONFLICT = "transformed", "dropped", "conflict"
MISMATCH, UNUSED = "mismatch", "unused"  # against the template: the shape differs / the template has no such name
_OP_WORDS = ((SplitFused, "split"), (Rename, "renamed"), (Transpose, "transposed"), (Cast, "cast"),
             (FuseWeightNorm, "fused"), (FuseSplit, "fused"))


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
                                        f"{list(mismatch.template_shape)}{hint}")
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
        source, _, name = override.replaced.rpartition(":")
        if source == label:
            marks[prefix + name] = Mark(DROPPED, "replaced", f"replaced by {override.kept}")
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


def synced(recipe: Recipe, stores: Sequence[Store]) -> Recipe:
    """``recipe`` with one SourceSpec per store, each naming its store's file (specs keep their filters)."""
    specs = list(recipe.sources)
    sources = tuple(replace(specs[i], path=str(store.path)) if i < len(specs) else SourceSpec(str(store.path))
                    for i, store in enumerate(stores))
    return recipe if sources == recipe.sources else recipe.with_changes(sources=sources)


def keys(stores: Sequence[Store], recipe: Recipe) -> list[str | None]:
    """Each source's top-level key (its own, else the recipe's); only PyTorch files have branches."""
    out = []
    for i, store in enumerate(stores):
        spec = recipe.source_spec(i)
        key = (spec.top_level_key if spec else None) or recipe.top_level_key
        out.append(key if key and store.format == PYTORCH else None)
    return out


class _KeyedStores:
    """PyTorch stores reopened at a top-level key, cached per (path, key): the key changes what the file holds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stores: dict[tuple[Path, str], Store] = {}

    def resolve(self, stores: Sequence[Store], recipe: Recipe) -> list[Store]:
        return [self._keyed(store, key) if key else store for store, key in zip(stores, keys(stores, recipe))]

    def _keyed(self, store: Store, key: str) -> Store:
        with self._lock:
            found = self._stores.get((store.path, key))
        if found is None:
            found = open_store(store.path, top_level_key=key)
            with self._lock:
                found = self._stores.setdefault((store.path, key), found)
        return found

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()


class RecipeDocument(QObject):
    """The recipe being built over ``stores``; ``stores[0]`` is the tab's own file, later ones override it.

    ``recipeChanged`` after every edit, undo or redo; ``planReady(Plan)`` / ``planFailed(str)`` once the
    debounced plan for the newest recipe is done (results for older recipes are dropped).
    """

    recipeChanged = Signal()
    modifiedChanged = Signal(bool)
    planReady = Signal(object)
    planFailed = Signal(str)
    busyChanged = Signal(bool)

    def __init__(self, store: Store, runner: TaskRunner | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._home = store
        self._state = _State((store,), synced(Recipe(), (store,)))
        self._owned: set[Store] = set()  # sources this document opened (the tab owns stores[0])
        self._keyed = _KeyedStores()
        self.plan: Plan | None = None
        self.alignment: AlignmentReport | None = None  # the latest plan against the template, when there is one
        self.marks: dict[str, Mark] = {}  # the tab's tensors (by name in the file) the latest plan touches
        self.error: str | None = None
        self.path: Path | None = None  # where the recipe was last saved or opened from
        self.undo_stack = QUndoStack(self)
        self.undo_stack.cleanChanged.connect(self._clean_changed)
        self._runner = runner or TaskRunner(self)
        self._generation = 0
        self._task: Task | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PLAN_DELAY_MS)
        self._timer.timeout.connect(self.replan)
        self.replan()

    # --- state ----------------------------------------------------------------------------------------
    @property
    def stores(self) -> list[Store]:
        return list(self._state.stores)

    @property
    def store(self) -> Store:
        """The tab's own store: the first source unless the user moved it; it cannot be removed."""
        return self._home

    @property
    def recipe(self) -> Recipe:
        return self._state.recipe

    @property
    def template(self) -> Store | None:
        """A file saved from the target model: lends module kinds and enum variants, and is what the result must fit."""
        return self._state.template

    @property
    def is_modified(self) -> bool:
        """Unsaved edits: the stack left its clean point (an untouched, unsaved recipe is not modified)."""
        return not self.undo_stack.isClean()

    def planned_stores(self) -> list[Store]:
        """The sources as the plan reads them: PyTorch files opened at their top-level key (what dropped names name)."""
        return self._keyed.resolve(self._state.stores, self.recipe)

    @property
    def busy(self) -> bool:
        return self._timer.isActive() or self._task is not None

    def _clean_changed(self, clean: bool) -> None:
        self.modifiedChanged.emit(not clean)

    def _apply(self, state: _State) -> None:
        self._state = state
        self.recipeChanged.emit()
        self.request_plan()

    def _push(self, after: _State, text: str, merge_key: str | None = None) -> bool:
        if after == self._state:
            return False
        self.undo_stack.push(_Edit(self, self._state, after, text, merge_key))
        return True

    # --- edits (all undoable) ----------------------------------------------------------------------------
    def push(self, new_recipe: Recipe, text: str, merge_key: str | None = None) -> bool:
        """Make ``new_recipe`` current as one undo step ("Add remap rule"); False when nothing changed.

        Pushes sharing ``merge_key`` back to back (keystrokes in one field) merge into one step.
        """
        return self._push(_State(self._state.stores, synced(new_recipe, self._state.stores), self.template), text,
                          merge_key)

    def add_remap(self, pattern: str, replacement: str) -> bool:
        return self.push(self.recipe.with_changes(remaps=self.recipe.remaps + (RemapRule(pattern, replacement),)),
                         f"Add remap rule {pattern} → {replacement}")

    def add_source(self, store: Store) -> bool:
        """Merge another file in, with the highest precedence (its tensors override earlier ones)."""
        self._owned.add(store)
        stores = self._state.stores + (store,)
        recipe = self.recipe.with_changes(sources=self.recipe.sources + (SourceSpec(str(store.path)),))
        return self._push(_State(stores, recipe, self.template), f"Add source {store.path.name}")

    def remove_source(self, index: int) -> bool:
        """Drop a merged source; the tab's own store stays."""
        if not 0 <= index < len(self._state.stores) or self._state.stores[index] is self._home:
            return False
        stores = list(self._state.stores)
        sources = list(self.recipe.sources)
        removed = stores.pop(index)
        sources.pop(index)
        return self._push(_State(tuple(stores), self.recipe.with_changes(sources=tuple(sources)), self.template),
                          f"Remove source {removed.path.name}")

    def move_source(self, index: int, new_index: int) -> bool:
        """Change precedence: a source later in the list overrides those before it."""
        count = len(self._state.stores)
        if not (0 <= index < count and 0 <= new_index < count) or index == new_index:
            return False
        stores = list(self._state.stores)
        sources = list(self.recipe.sources)
        stores.insert(new_index, stores.pop(index))
        sources.insert(new_index, sources.pop(index))
        return self._push(_State(tuple(stores), self.recipe.with_changes(sources=tuple(sources)), self.template),
                          f"Move source {stores[new_index].path.name}")

    def set_template(self, store: Store | None) -> bool:
        """Compare with a target file (or stop), as one undo step; the document closes a template it was given."""
        if store is not None:
            self._owned.add(store)
        text = f"Set template {store.path.name}" if store is not None else "Clear template"
        recipe = self.recipe.with_changes(template=str(store.path) if store is not None else None)
        return self._push(_State(self._state.stores, recipe, store), text)

    # --- not undoable: where the recipe lives -----------------------------------------------------------
    def replace(self, recipe: Recipe, extra_stores: Sequence[Store] = (), path: Path | None = None,
                template: Store | None = None) -> None:
        """Start over from an opened recipe: sources are the tab's store plus ``extra_stores``; history is cleared."""
        self._owned.update(extra_stores)
        if template is not None:
            self._owned.add(template)
        stores = (self._home, *extra_stores)
        self.undo_stack.clear()
        self._apply(_State(stores, synced(recipe, stores), template))
        self.path = path
        self.undo_stack.setClean()
        self.modifiedChanged.emit(False)

    def save(self, path: str | Path) -> Path:
        """Write the recipe as JSON; the current state becomes the clean (saved) one."""
        self.path = self.recipe.save(path)
        self.undo_stack.setClean()
        self.modifiedChanged.emit(False)
        return self.path

    def open_recipe(self, path: str | Path) -> None:
        """Load a recipe file here and now (the window does the loading in a worker, then ``replace``)."""
        self.replace(*load_recipe(Path(path)))

    # --- planning --------------------------------------------------------------------------------------
    def request_plan(self) -> None:
        """Re-plan after a short pause (typing does not plan per keystroke)."""
        was_busy = self.busy
        self._timer.start()
        if not was_busy:
            self.busyChanged.emit(True)

    def replan(self) -> None:
        """Plan the current recipe now, in a worker; any plan still running is for an older recipe."""
        self._timer.stop()
        was_busy = self.busy
        if self._task is not None:
            self._task.cancel()
        self._generation += 1
        generation = self._generation
        stores, recipe, template, keyed, home = self._state.stores, self.recipe, self.template, self._keyed, self._home

        def work(cancelled: Callable[[], bool]) -> tuple[Plan, dict[str, Mark], AlignmentReport | None]:
            result = plan(keyed.resolve(stores, recipe), recipe, template=template)
            report = align(result, template) if template is not None else None
            key = keys(stores, recipe)[stores.index(home)]
            return result, plan_marks(result, home, f"{key}." if key else "", report), report

        self._task = self._runner.run(work, lambda result: self._planned(generation, result),
                                      lambda failure: self._plan_failed(generation, failure),
                                      lambda: None)
        if not was_busy:
            self.busyChanged.emit(True)

    def _planned(self, generation: int, outcome: tuple[Plan, dict[str, Mark], AlignmentReport | None]) -> None:
        if generation != self._generation:
            return
        self._task = None
        (self.plan, self.marks, self.alignment), self.error = outcome, None
        self.planReady.emit(self.plan)
        self._settle()

    def _plan_failed(self, generation: int, failure: Failure) -> None:
        if generation != self._generation:
            return
        self._task = None
        self.error = failure.message
        self.planFailed.emit(failure.message)
        self._settle()

    def _settle(self) -> None:
        if not self.busy:
            self.busyChanged.emit(False)

    def close(self) -> None:
        """Stop planning and close the files this document opened."""
        self._timer.stop()
        if self._task is not None:
            self._task.cancel()
        self._generation += 1
        for store in self._owned:
            store.close()
        self._owned.clear()
        self._keyed.close()


def load_recipe(path: Path) -> tuple[Recipe, list[Store], Path, Store | None]:
    """A recipe file, its sources after the first opened (relative paths from the recipe's folder), its path,
    and its template opened (or None).

    The first source is always the tab's own file, so a recipe made on one file applies to another.
    """
    recipe = Recipe.load(path)
    opened: list[Store] = []
    try:
        for spec in recipe.sources[1:]:  # Recipe.load resolved relative paths from the recipe's folder
            opened.append(open_store(spec.path))  # a path or a URL, as the recipe spells it
        template = open_store(recipe.template) if recipe.template else None
    except BaseException:
        for store in opened:
            store.close()
        raise
    return recipe, opened, path.absolute(), template
