"""What every workbench panel shares: following one document at a time (the current tab's)."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from engine.surgery import Plan
from gui.workbench.document import RecipeDocument


class DocumentPanel(QWidget):
    """Subclasses redraw in ``recipe_changed`` / ``plan_ready`` / ``plan_failed``; the base does the wiring."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document: RecipeDocument | None = None

    def set_document(self, document: RecipeDocument | None) -> None:
        if document is self.document:
            return
        if self.document is not None:
            self.document.recipeChanged.disconnect(self.recipe_changed)
            self.document.planReady.disconnect(self.plan_ready)
            self.document.planFailed.disconnect(self.plan_failed)
        self.document = document
        self.setEnabled(document is not None)
        if document is not None:
            document.recipeChanged.connect(self.recipe_changed)
            document.planReady.connect(self.plan_ready)
            document.planFailed.connect(self.plan_failed)
        self.recipe_changed()
        if document is not None and document.plan is not None:
            self.plan_ready(document.plan)

    def recipe_changed(self) -> None:
        """The recipe (or the document) changed: show its rules."""

    def plan_ready(self, plan: Plan) -> None:
        """A plan for the current recipe arrived: show counts and results."""

    def plan_failed(self, message: str) -> None:
        """The current recipe cannot be planned: say why."""
