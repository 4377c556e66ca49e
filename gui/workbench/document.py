"""One tab's recipe as a Qt document: the sources, the recipe, its undo stack and the latest plan.

Everything the workbench panels show or edit goes through here, so every edit is undoable and every
panel sees the same plan. The recipe and plan are engine data; this class only adds signals, undo, a
debounce and a worker, so the UI thread never plans.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping, Sequence

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from engine import Store, open_store, open_template, takes_top_level_key, with_adapters
from engine.surgery import AlignmentReport, Plan, Recipe, RemapRule, SourceSpec, align, plan
from gui.workbench.marks import Mark, plan_marks, template_fit
from gui.workbench.plan_result import PlanResult
from gui.workers import Failure, Task, TaskRunner

PLAN_DELAY_MS = 60  # edits pause this long before the plan is recomputed
_MERGE_ID = 6061  # QUndoCommand id shared by edits that may merge (typing into one field)


@dataclass(frozen=True)
class RecipeState:
    """What an undo step restores, and what ``recipeChanged`` hands every panel: the sources (in precedence
    order), the recipe over them, its template, and ``home``, the tab's own store (always one of ``stores``).

    Panels keep the state they were handed and edit from it; they never read the document back.
    """

    stores: tuple[Store, ...]
    recipe: Recipe
    template: Store | None
    home: Store


class _Edit(QUndoCommand):
    """Swap the document between two states; consecutive edits with one ``merge_key`` merge into one step."""

    def __init__(self, document: "RecipeDocument", before: RecipeState, after: RecipeState, text: str,
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
        out.append(key if key and takes_top_level_key(store) else None)
    return out


class _KeyedStores:
    """PyTorch stores reopened at a top-level key, cached per (path, key): the key changes what the file holds;
    and any store with its recipe's LoRA adapters merged in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stores: dict[tuple[Path, str], Store] = {}
        self._adapted: dict[tuple[int, tuple], Store] = {}  # LoRA-merged views of the stores above or the tab's

    def resolve(self, stores: Sequence[Store], recipe: Recipe) -> list[Store]:
        resolved = [self._keyed(store, key) if key else store for store, key in zip(stores, keys(stores, recipe))]
        for i, store in enumerate(resolved):
            spec = recipe.source_spec(i)
            if spec is not None and spec.lora:
                resolved[i] = self._merged(store, spec.lora)
        return resolved

    def _merged(self, store: Store, lora: tuple) -> Store:
        """``store`` with its LoRA adapters merged, cached per (store, adapters and scales); the store stays the
        tab's (or the keyed cache's) to close."""
        with self._lock:
            found = self._adapted.get((id(store), lora))
        if found is None:
            found = with_adapters(store, [(spec.path, spec.scale) for spec in lora], own_base=False)
            with self._lock:
                found = self._adapted.setdefault((id(store), lora), found)
        return found

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
            for store in [*self._adapted.values(), *self._stores.values()]:
                store.close()
            self._adapted.clear()
            self._stores.clear()


class RecipeDocument(QObject):
    """The recipe being built over ``stores``; ``stores[0]`` is the tab's own file, later ones override it.

    ``recipeChanged(RecipeState)`` after every edit, undo or redo; ``resultReady(PlanResult)`` (then ``planReady(Plan)``)
    / ``planFailed(str)`` once the debounced plan for the newest recipe is done (results for older recipes
    are dropped). Panels render from the PlanResult they receive.
    """

    recipeChanged = Signal(object)  # the new RecipeState
    modifiedChanged = Signal(bool)
    resultReady = Signal(object)
    planReady = Signal(object)
    planFailed = Signal(str)
    busyChanged = Signal(bool)

    def __init__(self, store: Store, runner: TaskRunner | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._home = store
        self._state = RecipeState((store,), synced(Recipe(), (store,)), None, store)
        self._owned: set[Store] = set()  # sources this document opened (the tab owns stores[0])
        self._keyed = _KeyedStores()
        self.result: PlanResult | None = None  # the latest plan's whole outcome, as every panel received it
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
    def plan(self) -> Plan | None:
        return self.result.plan if self.result is not None else None

    @property
    def alignment(self) -> AlignmentReport | None:
        """The latest plan against the template, when there is one."""
        return self.result.alignment if self.result is not None else None

    @property
    def marks(self) -> Mapping[str, Mark]:
        """The tab's tensors (by name in the file) the latest plan touches."""
        return self.result.marks if self.result is not None else {}

    @property
    def state(self) -> RecipeState:
        """The current sources, recipe and template: what a panel starts from when it begins to follow this."""
        return self._state

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

    def _apply(self, state: RecipeState) -> None:
        self._state = state
        self.recipeChanged.emit(state)
        self.request_plan()

    def _push(self, after: RecipeState, text: str, merge_key: str | None = None) -> bool:
        if after == self._state:
            return False
        self.undo_stack.push(_Edit(self, self._state, after, text, merge_key))
        return True

    # --- edits (all undoable) ----------------------------------------------------------------------------
    def push(self, new_recipe: Recipe, text: str, merge_key: str | None = None) -> bool:
        """Make ``new_recipe`` current as one undo step ("Add remap rule"); False when nothing changed.

        Pushes sharing ``merge_key`` back to back (keystrokes in one field) merge into one step.
        """
        return self._push(replace(self._state, recipe=synced(new_recipe, self._state.stores)), text,
                          merge_key)

    def apply_operations(self, recipe: Recipe, text: str) -> bool:
        """Take ``recipe``'s operations (filter, remaps, adapters, casts, rotary rows, module types) in place of the
        current ones, sources and template kept, as one undo step: how a bundled recipe applies."""
        return self.push(self.recipe.with_changes(filter=recipe.filter, remaps=recipe.remaps, adapters=recipe.adapters,
                                                  casts=recipe.casts, rotary_rows=recipe.rotary_rows,
                                                  module_overrides=dict(recipe.module_overrides)), text)

    def set_top_level_key(self, key: str | None) -> bool:
        """Read only the checkpoint's branch ``key`` (None: the whole file), as one undo step."""
        return self.push(self.recipe.with_changes(top_level_key=key), f"Top-level key {key or 'none'}")

    def add_remap(self, pattern: str, replacement: str) -> bool:
        return self.push(self.recipe.with_changes(remaps=self.recipe.remaps + (RemapRule(pattern, replacement),)),
                         f"Add remap rule {pattern} → {replacement}")

    def add_source(self, store: Store) -> bool:
        """Merge another file in, with the highest precedence (its tensors override earlier ones)."""
        self._owned.add(store)
        stores = self._state.stores + (store,)
        recipe = self.recipe.with_changes(sources=self.recipe.sources + (SourceSpec(str(store.path)),))
        return self._push(replace(self._state, stores=stores, recipe=recipe), f"Add source {store.path.name}")

    def remove_source(self, index: int) -> bool:
        """Drop a merged source; the tab's own store stays."""
        if not 0 <= index < len(self._state.stores) or self._state.stores[index] is self._home:
            return False
        stores = list(self._state.stores)
        sources = list(self.recipe.sources)
        removed = stores.pop(index)
        sources.pop(index)
        recipe = self.recipe.with_changes(sources=tuple(sources))
        return self._push(replace(self._state, stores=tuple(stores), recipe=recipe),
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
        recipe = self.recipe.with_changes(sources=tuple(sources))
        return self._push(replace(self._state, stores=tuple(stores), recipe=recipe),
                          f"Move source {stores[new_index].path.name}")

    def set_template(self, store: Store | None) -> bool:
        """Compare with a target file (or stop), as one undo step; the document closes a template it was given."""
        text = f"Set template {store.path.name}" if store is not None else "Clear template"
        return self.fit_to(store, self.recipe, text)

    def fit_to(self, store: Store | None, recipe: Recipe, text: str) -> bool:
        """Make ``recipe`` current with ``store`` as its template, as one undo step (Make It Load Into… sets both
        at once); the document closes a template it was given."""
        if store is not None:
            self._owned.add(store)
        recipe = synced(recipe.with_changes(template=str(store.path) if store is not None else None), self._state.stores)
        return self._push(replace(self._state, recipe=recipe, template=store), text)

    # --- not undoable: where the recipe lives -----------------------------------------------------------
    def replace(self, recipe: Recipe, extra_stores: Sequence[Store] = (), path: Path | None = None,
                template: Store | None = None) -> None:
        """Start over from an opened recipe: sources are the tab's store plus ``extra_stores``; history is cleared."""
        self._owned.update(extra_stores)
        if template is not None:
            self._owned.add(template)
        stores = (self._home, *extra_stores)
        self.undo_stack.clear()
        self._apply(RecipeState(stores, synced(recipe, stores), template, self._home))
        self.path = path
        self.undo_stack.setClean()
        self.modifiedChanged.emit(False)

    def save(self, path: str | Path) -> Path:
        """Write the recipe as JSON, atomically and never over a file the tab reads (the file dialog asked before
        replacing any other); the current state becomes the clean (saved) one."""
        read = (*self._state.stores, *([self.template] if self.template else []))
        self.path = self.recipe.save(path, overwrite=True, keep=[file for store in read for file in store.files])
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

        def work(cancelled: Callable[[], bool]) -> PlanResult:
            planned = tuple(keyed.resolve(stores, recipe))
            result = plan(planned, recipe, template=template)
            report = align(result, template) if template is not None else None
            key = keys(stores, recipe)[stores.index(home)]
            marks = plan_marks(result, home, f"{key}." if key else "", report)
            return PlanResult(result, recipe, planned, MappingProxyType(marks), template, report,
                              MappingProxyType(template_fit(report) if report is not None else {}))

        self._task = self._runner.run(work, lambda result: self._planned(generation, result),
                                      lambda failure: self._plan_failed(generation, failure),
                                      lambda: None)
        if not was_busy:
            self.busyChanged.emit(True)

    def _planned(self, generation: int, result: PlanResult) -> None:
        if generation != self._generation:
            return
        self._task = None
        self.result, self.error = result, None
        self.resultReady.emit(result)
        self.planReady.emit(result.plan)
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
        template = open_template(recipe.template, recipe.burn_version) if recipe.template else None
    except BaseException:
        for store in opened:
            store.close()
        raise
    return recipe, opened, path.absolute(), template
