"""Choosing the recipe's template: a file saved from the target model, opened in a worker, set as one undo step.

The Surgery menu and the diff view's "Template" button both come here, so they behave alike.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from engine import Location
from engine import open_template as open_template_file  # this module's open_template opens it in a worker
from gui.dialogs import show_error
from gui.model_picker import choose_model
from gui.workbench.document import RecipeDocument
from gui.workers import Failure, Task, TaskRunner

TEMPLATE_TITLE = "Choose a template: a file saved from the target model, or its Rust source"


def choose_template(parent: QWidget, document: RecipeDocument, runner: TaskRunner, near: Location) -> bool:
    """Ask for a template file or address (Browse… opens in ``near``'s folder) and open it; False when cancelled."""
    path = choose_model(parent, TEMPLATE_TITLE, near, template=True)
    if not path:
        return False
    open_template(parent, document, runner, path)
    return True


def open_template(parent: QWidget, document: RecipeDocument, runner: TaskRunner, path: Location) -> Task:
    """Open ``path`` in a worker and make it the document's template (Edit › Undo takes it back)."""

    def failed(failure: Failure) -> None:
        show_error(parent, f"Store Studio could not open the template {path.name}.", failure.message, failure.details)

    version = document.recipe.burn_version  # a Rust source's nn modules are read as that release saves them
    return runner.run(lambda cancelled: open_template_file(path, version), document.set_template, failed)
