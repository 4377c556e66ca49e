"""The File panel on Burn's legacy records: the record's metadata, its values, and positional names said."""

from __future__ import annotations


from PySide6.QtWidgets import QLabel

from tests.helpers.formats_burn_record_writers import Settings, model_item, write_record


def _texts(view) -> list[str]:
    return [label.text() for label in view.file_info.findChildren(QLabel)]


def test_bin_record_panel_says_names_are_positional(open_view, tmp_path):
    item, _ = model_item()
    view = open_view(write_record(tmp_path, "model", item, Settings(recorder="Bin", version="0.21.0")))
    texts = _texts(view)
    assert "Burn record Bin · Burn 0.21.0" in texts
    assert any(t.startswith("Tensor names are positional (param.0, param.1, ...)") for t in texts)
    assert "BinFileRecorder" in texts and "FullPrecisionSettings" in texts


def test_named_record_panel_shows_metadata_and_values_without_a_note(open_view, tmp_path):
    item, _ = model_item()
    view = open_view(write_record(tmp_path, "model", item, Settings(recorder="NamedMpk", version="0.17.0", half=True)))
    texts = _texts(view)
    assert "Burn record NamedMpk · Burn 0.17.0" in texts and "0.17.0" in texts and "HalfPrecisionSettings" in texts
    assert not any(t.startswith("Tensor names are positional") for t in texts)
    tree = view.file_info.values_tree
    top = {tree.topLevelItem(i).text(0): tree.topLevelItem(i).text(1) for i in range(tree.topLevelItemCount())}
    assert top["activation"] == '"Relu"' and top["hidden_size"] == "null"
