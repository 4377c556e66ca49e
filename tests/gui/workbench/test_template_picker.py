"""Surgery › Set Template… and the diff view's Template button: the preview and tree show the CLI's alignment."""

from __future__ import annotations

from pathlib import Path

from engine import open_store
from engine.surgery import align
from gui.main_window import MainWindow
from gui.models.tree_model import MARK_ROLE, NODE_ROLE
from gui.workbench.marks import MISMATCH, UNUSED
from gui.workbench.panels.preview import NAME, STATUS, TEMPLATE

from tests.helpers.gui_workbench import model_and_template, settle


def pick(monkeypatch, path: Path) -> None:
    monkeypatch.setattr("gui.workbench.template_picker.choose_model", lambda *a, **k: path)


def preview_rows(window: MainWindow) -> dict[str, tuple[str, str]]:
    model = window.panels["preview"].model
    return {model.index(r, NAME).data(): (model.index(r, STATUS).data(), model.index(r, TEMPLATE).data())
            for r in range(model.rowCount())}


def tree_marks(window: MainWindow) -> dict[str, object]:
    view = window.current_view()
    model, out = view.model, {}
    for r in range(model.rowCount()):
        group = model.index(r, 0)
        for c in range(model.rowCount(group)):
            index = model.index(c, 0, group)
            out[index.data(NODE_ROLE).path] = index.data(MARK_ROLE)
    return out


def test_set_template_shows_applied_missing_unused_and_mismatch_like_the_cli(window: MainWindow, surgery, qtbot,
                                                                              monkeypatch, tmp_path: Path):
    source, template = model_and_template(tmp_path)
    document = surgery(source)
    panel = window.panels["preview"]
    assert panel.table.isColumnHidden(TEMPLATE) and not window.actions.clear_template.isEnabled()
    pick(monkeypatch, template)
    window.actions.set_template.trigger()
    qtbot.waitUntil(lambda: document.template is not None, timeout=30_000)
    settle(qtbot, document)
    with open_store(template) as again:
        cli = align(document.plan, again)  # what `convert --template` reports
    assert (len(cli.applied), len(cli.shape_mismatches), len(cli.missing), len(cli.unused)) == (2, 1, 1, 1)
    rows = preview_rows(window)
    assert rows["0.weight"] == ("✓ unchanged", "applied") and rows["0.bias"] == ("✓ unchanged", "applied")
    assert rows["2.weight"] == ("✓ unchanged", "shape mismatch")
    assert rows["2.bias"] == ("✓ unchanged", "unused")
    assert rows["3.weight"] == ("✕ missing", "missing")
    assert not panel.table.isColumnHidden(TEMPLATE)
    assert panel.notes.text() == "Template target.safetensors: 2 applied · 1 shape mismatch · 1 missing · 1 unused"
    mismatch = next(panel.model.index(r, TEMPLATE) for r in range(panel.model.rowCount())
                    if panel.model.index(r, NAME).data() == "2.weight")
    assert "here [2, 4], template [5, 4]" in mismatch.data(3)  # the tooltip names both shapes

    marks = tree_marks(window)
    assert marks["2.weight"].state == MISMATCH and marks["2.weight"].word == "shape mismatch"
    assert marks["2.bias"].state == UNUSED and marks["0.weight"].word == "applied"
    assert "template [5, 4]" in marks["2.weight"].detail
    assert window.actions.clear_template.isEnabled()

    window.actions.undo.trigger()  # choosing a template is one undo step
    settle(qtbot, document)
    assert document.template is None and panel.table.isColumnHidden(TEMPLATE) and not panel.notes.isVisible()
    assert "3.weight" not in preview_rows(window) and tree_marks(window)["2.weight"] is None
    assert not window.actions.clear_template.isEnabled()


def test_the_diff_views_template_button_chooses_a_template_when_there_is_none(window: MainWindow, surgery, qtbot,
                                                                               monkeypatch, tmp_path: Path):
    source, template = model_and_template(tmp_path)
    document = surgery(source)
    window.actions.diff.trigger()
    panel = window.diff_dock.widget()
    assert panel.template_button.isEnabled() and panel.template_button.text() == "Template…"
    pick(monkeypatch, template)
    panel.template_button.click()
    qtbot.waitUntil(lambda: panel.other is not None and panel.is_idle() and panel.model.rowCount() > 0,
                    timeout=30_000)
    assert document.template is panel.other and "target.safetensors (template)" in panel.against.text()
    statuses = {row.name: row.status for row in panel.model.rows}
    assert statuses["2.weight"] == "shape_mismatch" and statuses["3.weight"] == "missing"
    assert panel.template_button.text() == "Template"


def test_the_template_is_saved_with_the_recipe_and_opened_with_it(window: MainWindow, surgery, qtbot, monkeypatch,
                                                                  tmp_path: Path):
    source, template = model_and_template(tmp_path)
    document = surgery(source)
    pick(monkeypatch, template)
    window.actions.set_template.trigger()
    qtbot.waitUntil(lambda: document.template is not None, timeout=30_000)
    settle(qtbot, document)
    assert document.recipe.template == str(template) and document.is_modified
    saved = document.save(tmp_path / "r.recipe.json")
    assert '"template": "target.safetensors"' in saved.read_text()  # relative: it lies beside the recipe

    window.actions.clear_template.trigger()
    settle(qtbot, document)
    assert document.template is None and document.recipe.template is None
    window.open_recipe(saved)
    qtbot.waitUntil(lambda: document.template is not None and not document.busy, timeout=30_000)
    settle(qtbot, document)
    assert document.template.path == template and not document.is_modified
    assert preview_rows(window)["3.weight"] == ("✕ missing", "missing")
    assert window.panels["preview"].notes.text().startswith("Template target.safetensors: 2 applied")
