"""Surgery › Make It Load Into…: a template chosen, the recipe fitted to it (engine ``fit``), as one undoable step.

The template opens and the search over chains of changes runs in a worker, over the sources as the plan reads
them; then the document takes the fitted recipe and the template in one edit (Edit › Undo takes both back),
and the window shows the diff view against the template, with what the fit did and what still does not load,
with the closest names. ``convert --template T --fit`` does the same on the command line.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QWidget

from engine import Location, Store, humanize, open_template
from engine.surgery import Fit, fit, reopen_at_key
from gui.dialogs import show_error
from gui.model_picker import choose_model
from gui.workbench.document import RecipeDocument
from gui.workers import Failure, Task, TaskRunner

FIT_TITLE = "Make it load into: a file saved from the target model, or its Rust source"
NAMED = 3  # tensors that still do not load, named in the note; the diff view lists them all
Fitted = Callable[[Fit, Store], None]  # what the fit made, and the template it was made for


def choose_fit_target(parent: QWidget, document: RecipeDocument, runner: TaskRunner, near: Location,
                      fitted: Fitted) -> bool:
    """Ask for the target model's file or address (Browse… opens in ``near``'s folder), then fit the recipe to it;
    False when cancelled."""
    path = choose_model(parent, FIT_TITLE, near, template=True)
    if not path:
        return False
    fit_into(parent, document, runner, path, fitted)
    return True


def fit_into(parent: QWidget, document: RecipeDocument, runner: TaskRunner, path: Location, fitted: Fitted) -> Task:
    """Open ``path`` and fit the document's recipe to it in a worker; the document then takes both as one step,
    and ``fitted`` hears what was made."""
    recipe = document.state.recipe

    def work(cancelled: Callable[[], bool]) -> tuple[Fit, Store]:
        template = open_template(path, recipe.burn_version)  # a Rust source's modules as that release saves them
        try:
            made = fit(document.planned_stores(), recipe, template, template=template, reopen=reopen_at_key,
                       cancelled=cancelled)
            if cancelled():
                raise InterruptedError("Make It Load cancelled")
        except BaseException:
            template.close()
            raise
        return made, template

    def done(result: tuple[Fit, Store]) -> None:
        made, template = result
        document.fit_to(template, made.recipe, f"Make It Load Into {template.path.name}")
        fitted(made, template)

    def failed(failure: Failure) -> None:
        show_error(parent, f"Store Studio could not make the recipe load into {path.name}.", failure.message,
                   failure.details)

    return runner.run(work, done, failed)


def fit_note(made: Fit, template: str) -> str:
    """What Make It Load did, and what still does not load with its closest names: the diff view's note."""
    if made.steps:
        changes = "; ".join(step.change.description for step in made.steps)
        done = (f"Make It Load Into {template} made {humanize.plural(len(made.steps), 'change')} as one step "
                f"(Ctrl+Z undoes it): {changes}.")
    else:
        done = f"Make It Load Into {template}: no change makes more of its tensors load."
    report = made.report
    left = [name + (f" (closest: {', '.join(report.suggestions[name])})" if name in report.suggestions else "")
            for name in report.missing]
    left += [f"{m.name}: here {list(m.source_shape)}, template {humanize.shape(m.template_shape)}"
             for m in report.shape_mismatches]
    if not left:
        return f"{done} Every tensor it wants loads."
    more = f"; and {len(left) - NAMED:,} more" if len(left) > NAMED else ""
    return f"{done} Still not loading ({len(left):,}): {'; '.join(left[:NAMED])}{more}."
