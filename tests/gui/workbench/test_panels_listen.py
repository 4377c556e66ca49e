"""One result, many listeners: panels render what the document's signals hand them, never read it back.

Read from the source (the rule is about where panels get their data, which no rendering test can see):
in every workbench panel, the diff view and the export dialog, the document is only where edits go and
signals come from. Its state (``recipe``, ``stores``, ``plan``, ``template``, ``planned_stores()``…) may be
read once, when a panel starts to follow the document (``set_document`` / ``__init__``), never later.
Panels never name another panel.
"""

from __future__ import annotations

import ast
from pathlib import Path

GUI = Path(__file__).parents[3] / "gui" / "workbench"
LISTENERS = [*sorted((GUI / "panels").glob("*.py")), GUI / "diff_panel.py", GUI / "export_dialog.py"]
EDITS_AND_SIGNALS = {"push", "add_remap", "add_source", "remove_source", "move_source", "set_template", "replan",
                     "recipeChanged", "resultReady", "planReady", "planFailed", "busyChanged"}
HANDSHAKE = {"set_document", "__init__"}  # where a listener takes the document's state once
PANEL_CLASSES = {"FiltersPanel", "RemapPanel", "AdaptersPanel", "SourcesPanel", "PreviewPanel", "DiffPanel"}


def _document_reads(path: Path) -> list[str]:
    """``function: document.attr`` for each read of the document's state outside the handshake."""
    found = []
    tree = ast.parse(path.read_text())
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        if function.name in HANDSHAKE:
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Attribute) or node.attr in EDITS_AND_SIGNALS:
                continue
            owner = node.value
            named = isinstance(owner, ast.Name) and owner.id == "document"
            own = (isinstance(owner, ast.Attribute) and owner.attr == "document" and isinstance(owner.value, ast.Name)
                   and owner.value.id == "self")
            if named or own:
                found.append(f"{path.name}:{node.lineno} {function.name}: document.{node.attr}")
    return found


def test_no_listener_reads_the_document_back_after_a_signal():
    assert [read for path in LISTENERS for read in _document_reads(path)] == []


def test_the_rule_sees_a_read_back_when_there_is_one(tmp_path):
    offender = tmp_path / "offender.py"
    offender.write_text("class P:\n    def recipe_changed(self):\n        return self.document.recipe.remaps\n")
    assert _document_reads(offender) == ["offender.py:3 recipe_changed: document.recipe"]


def test_no_panel_names_another():
    for path in LISTENERS:
        tree = ast.parse(path.read_text())
        own = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            alias.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for alias in n.names}
        assert (named & PANEL_CLASSES) - own == set(), path.name
