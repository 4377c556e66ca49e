"""What every workbench panel shares: following one document at a time (the current tab's).

A panel renders what the document's signals hand it: the RecipeState of ``recipeChanged`` (kept as
``state``, which edits start from), the PlanResult of ``resultReady`` (kept as ``result``) and the busy flag
of ``busyChanged``. It never reads the document back (the document is only where edits go), and it never
calls another panel.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QWidget

from engine.surgery import Plan, Recipe
from gui.workbench.document import RecipeDocument, RecipeState
from gui.workbench.plan_result import PlanResult


class DocumentPanel(QWidget):
    """Subclasses redraw in ``recipe_changed`` / ``show_result`` (or ``plan_ready``) / ``plan_failed`` /
    ``busy_changed``; ``state`` and ``result`` are the latest each signal delivered (None without a document)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document: RecipeDocument | None = None
        self.state: RecipeState | None = None
        self.result: PlanResult | None = None

    def set_document(self, document: RecipeDocument | None) -> None:
        """Follow ``document``: it hands over its current state, latest result and busy flag once, then signals."""
        if document is self.document:
            return
        if self.document is not None:
            self.document.recipeChanged.disconnect(self._state_arrived)
            self.document.resultReady.disconnect(self._result_arrived)
            self.document.planFailed.disconnect(self.plan_failed)
            self.document.busyChanged.disconnect(self.busy_changed)
        self.document = document
        self.setEnabled(document is not None)
        self.result = None
        if document is not None:
            document.recipeChanged.connect(self._state_arrived)
            document.resultReady.connect(self._result_arrived)
            document.planFailed.connect(self.plan_failed)
            document.busyChanged.connect(self.busy_changed)
        self._state_arrived(document.state if document is not None else None)
        if document is not None:
            self.busy_changed(document.busy)
            if document.result is not None:
                self._result_arrived(document.result)

    def _state_arrived(self, state: RecipeState | None) -> None:
        self.state = state
        self.recipe_changed()

    def _result_arrived(self, result: PlanResult) -> None:
        self.result = result
        self.show_result(result)

    def push(self, recipe_edit: Callable[[Recipe], Recipe], text: str, merge_key: str | None = None) -> bool:
        """Make the recipe ``recipe_edit(state.recipe)`` current as one undo step; False without a document."""
        if self.document is None or self.state is None:
            return False
        return self.document.push(recipe_edit(self.state.recipe), text, merge_key)

    def recipe_changed(self) -> None:
        """The recipe (or the document) changed: show ``state``'s rules."""

    def show_result(self, result: PlanResult) -> None:
        """A plan for the current recipe arrived, with all it implies; panels needing only the plan use plan_ready."""
        self.plan_ready(result.plan)

    def plan_ready(self, plan: Plan) -> None:
        """A plan for the current recipe arrived: show counts and results."""

    def plan_failed(self, message: str) -> None:
        """The current recipe cannot be planned: say why."""

    def busy_changed(self, busy: bool) -> None:
        """A plan is pending (an edit was just made) or every plan is done."""
