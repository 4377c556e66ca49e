"""The export dialog's metadata is what ``store-studio convert`` writes for the same source, recipe and format.

A SafeTensors file saved by ``safetensors.torch.save_file`` records ``format: pt``: a SafeTensors export
keeps it as ``format``, a Burnpack export as ``safetensors.format`` (Burnpack's own ``format`` is
``burnpack``). The dialog derives its table again when the format changes, keeping the user's edits.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from engine import open_store
from engine.cli import main as cli
from gui.workbench.document import RecipeDocument
from gui.workbench.export_dialog import run_export


@pytest.fixture
def torch_safetensors(tmp_path: Path) -> Path:
    path = tmp_path / "model.safetensors"
    save_file({"fc.weight": torch.arange(6, dtype=torch.float32).reshape(2, 3), "fc.bias": torch.zeros(2)}, str(path),
              metadata={"format": "pt", "author": "Ada"})
    return path


@pytest.fixture
def document(window, torch_safetensors, qtbot):
    store = open_store(torch_safetensors)
    document = RecipeDocument(store, window.work)
    qtbot.waitUntil(lambda: not document.busy and document.result is not None, timeout=30_000)
    yield document
    document.close()
    store.close()


def _cli_metadata(source: Path, out: Path) -> dict[str, str]:
    assert cli(["convert", str(source), str(out)]) == 0
    with open_store(out) as written:
        return dict(written.metadata)


@pytest.mark.parametrize("suffix, fmt, format_key", [(".bpk", "burnpack", "safetensors.format"),
                                                       (".safetensors", "safetensors", "format")])
def test_the_dialog_shows_what_convert_writes_for_the_chosen_format(window, document, torch_safetensors, tmp_path,
                                                                    qtbot, suffix, fmt, format_key):
    dialog = run_export(window, document)
    dialog.format_combo.setCurrentIndex(dialog.format_combo.findData(fmt))  # chosen after the dialog filled in
    dialog.path_edit.setText(str(tmp_path / f"dialog{suffix}"))
    expected = _cli_metadata(torch_safetensors, tmp_path / f"cli{suffix}")
    assert expected[format_key] == "pt" and expected["author"] == "Ada"
    assert dialog.metadata() == expected

    dialog.export_button.click()
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)
    with open_store(tmp_path / f"dialog{suffix}") as written:
        assert dict(written.metadata) == expected
    dialog.close()


def test_changing_the_format_derives_the_metadata_again_and_keeps_the_users_edits(window, document, tmp_path):
    dialog = run_export(window, document)
    dialog.path_edit.setText(str(tmp_path / "out.bpk"))
    assert dialog.metadata()["safetensors.format"] == "pt" and dialog.metadata()["format"] == "burnpack"
    table = dialog.metadata_table
    keys = [table.item(r, 0).text() for r in range(table.rowCount())]
    table.item(keys.index("author"), 1).setText("Grace")  # the user's value for a derived key
    dialog.add_metadata_row("license", "MIT")  # and a key of the user's own

    dialog.path_edit.setText(str(tmp_path / "out.safetensors"))  # the format follows the extension
    shown = dialog.metadata()
    assert dialog.format() == "safetensors"
    assert shown["format"] == "pt" and "safetensors.format" not in shown and "version" not in shown
    assert shown["author"] == "Grace" and shown["license"] == "MIT"

    dialog.format_combo.setCurrentIndex(dialog.format_combo.findData("burnpack"))
    shown = dialog.metadata()
    assert shown["format"] == "burnpack" and shown["safetensors.format"] == "pt" and "version" in shown
    assert shown["author"] == "Grace" and shown["license"] == "MIT"
    dialog.close()
