"""What every workbench panel shares: following one document at a time (the current tab's).

A panel renders each PlanResult the document hands it (``show_result``); it does not read the document's
latest plan back, and it never calls another panel.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from engine.surgery import Plan
from gui.workbench.document import RecipeDocument
from gui.workbench.plan_result import PlanResult


class DocumentPanel(QWidget):
    """Subclasses redraw in ``recipe_changed`` / ``show_result`` (or ``plan_ready``) / ``plan_failed``."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document: RecipeDocument | None = None

    def set_document(self, document: RecipeDocument | None) -> None:
        if document is self.document:
            return
        if self.document is not None:
            self.document.recipeChanged.disconnect(self.recipe_changed)
            self.document.resultReady.disconnect(self.show_result)
            self.document.planFailed.disconnect(self.plan_failed)
        self.document = document
        self.setEnabled(document is not None)
        if document is not None:
            document.recipeChanged.connect(self.recipe_changed)
            document.resultReady.connect(self.show_result)
            document.planFailed.connect(self.plan_failed)
        self.recipe_changed()
        if document is not None and document.result is not None:
            self.show_result(document.result)

    def recipe_changed(self) -> None:
        """The recipe (or the document) changed: show its rules."""

    def show_result(self, result: PlanResult) -> None:
        """A plan for the current recipe arrived, with all it implies; panels needing only the plan use plan_ready."""
        self.plan_ready(result.plan)

    def plan_ready(self, plan: Plan) -> None:
        """A plan for the current recipe arrived: show counts and results."""

    def plan_failed(self, message: str) -> None:
        """The current recipe cannot be planned: say why."""
