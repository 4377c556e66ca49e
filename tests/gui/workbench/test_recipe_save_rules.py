"""The window saves a recipe as ``--save-recipe`` does (else saving could destroy the model being edited):
never over a file the tab reads, written
beside the name and renamed over it (a symlink there is replaced, its target kept). The file dialog has asked
before replacing any other file, so an existing recipe is replaced.

Promise -> test (README, "Recipes"):
- never over the tab's model, another source or the template -> test_the_recipe_is_never_saved_over_a_file_the_tab_reads
- replaced by rename, a symlink replaced -> test_saving_again_replaces_the_file_and_a_symlink_by_rename
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QThreadPool

from engine import ExportError, open_store
from tests.helpers.samples import SAMPLES
from gui.workbench.document import RecipeDocument


@pytest.fixture
def document(qapp, tmp_path: Path):
    shutil.copy(SAMPLES / "sample_cnn.bpk", tmp_path / "model.bpk")
    shutil.copy(SAMPLES / "sample_cnn.safetensors", tmp_path / "template.safetensors")
    with open_store(tmp_path / "model.bpk") as store:
        doc = RecipeDocument(store)
        yield doc
        doc.close()
        QThreadPool.globalInstance().waitForDone(60_000)


@pytest.mark.parametrize("name", ["model.bpk", "template.safetensors", "link.json"])
def test_the_recipe_is_never_saved_over_a_file_the_tab_reads(document: RecipeDocument, tmp_path: Path,
                                                             name: str) -> None:
    document.set_template(open_store(tmp_path / "template.safetensors"))  # the document owns and closes it
    (tmp_path / "link.json").symlink_to("model.bpk")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    document.add_remap("fc", "head")
    clash = "model.bpk" if name == "link.json" else name
    with pytest.raises(ExportError) as refused:
        document.save(tmp_path / name)
    assert str(refused.value) == (f"{name}: the recipe would be saved over {tmp_path / clash}, which this command "
                                  "reads or writes; nothing was written")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert document.is_modified and document.path is None


def test_saving_again_replaces_the_file_and_a_symlink_by_rename(document: RecipeDocument, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "r.recipe.json").symlink_to("notes.txt")
    document.add_remap("fc", "head")
    assert document.save(tmp_path / "r.recipe.json") == tmp_path / "r.recipe.json"
    assert not (tmp_path / "r.recipe.json").is_symlink() and (tmp_path / "notes.txt").read_text() == "mine"
    os.link(tmp_path / "r.recipe.json", tmp_path / "first.json")
    document.add_remap("conv", "c")
    document.save(tmp_path / "r.recipe.json")  # Ctrl+S: the same name again
    assert json.loads((tmp_path / "r.recipe.json").read_text())["remaps"] == [["fc", "head"], ["conv", "c"]]
    assert json.loads((tmp_path / "first.json").read_text())["remaps"] == [["fc", "head"]]
    assert not document.is_modified and not list(tmp_path.glob(".*.partial"))
