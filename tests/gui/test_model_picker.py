"""The workbench's model picker: a file on disk or an address, with the recent addresses of File › Open URL…."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialogButtonBox

from engine import RemoteLocation
from gui import settings
from gui.model_picker import ModelPicker


def _open_enabled(picker: ModelPicker) -> bool:
    return picker.buttons.button(QDialogButtonBox.StandardButton.Open).isEnabled()


def test_open_takes_an_existing_file_or_an_address_and_gives_it_back_as_a_location(qtbot, tmp_path):
    model = tmp_path / "model.safetensors"
    model.write_bytes(b"{}")
    picker = ModelPicker(None, "Compare with", str(tmp_path))
    qtbot.addWidget(picker)
    assert picker.windowTitle() == "Compare with" and not _open_enabled(picker)
    picker.box.setEditText(str(tmp_path / "missing.safetensors"))
    assert not _open_enabled(picker)
    picker.box.setEditText(str(model))
    assert _open_enabled(picker) and picker.choice() == model
    picker.box.setEditText(" hf://org/repo@v1/model.safetensors ")
    assert _open_enabled(picker) and picker.choice() == RemoteLocation("hf://org/repo@v1/model.safetensors")


def test_the_recent_addresses_are_offered(qtbot):
    settings.remember_url("https://example.org/a.safetensors")
    settings.remember_url("hf://org/repo/b.bpk")
    picker = ModelPicker(None, "Add a source to merge", "")
    qtbot.addWidget(picker)
    assert [picker.box.itemText(i) for i in range(picker.box.count())] == ["hf://org/repo/b.bpk",
                                                                          "https://example.org/a.safetensors"]
    assert picker.box.currentText() == ""


def test_browse_chooses_a_file_in_the_given_folder_and_accepts_at_once(qtbot, tmp_path, monkeypatch):
    asked: list[str] = []

    def file_dialog(parent, title, folder, filters):
        asked.append(folder)
        return [str(tmp_path / "net.pt")]

    monkeypatch.setattr("gui.model_picker.choose_paths", file_dialog)
    picker = ModelPicker(None, "Choose a template", str(tmp_path))
    qtbot.addWidget(picker)
    with qtbot.waitSignal(picker.accepted, timeout=5_000):
        picker.browse.click()
    assert asked == [str(tmp_path)] and picker.choice() == Path(tmp_path / "net.pt")
