"""An ONNX model in the window: its initializers are the tree's tensors, and the File panel names the graph node
and operator that read each one, what maps an ONNX weight to its Burn module. Without it a user comparing a
burn-onnx import with its source model could not tell which weight feeds which node."""

from __future__ import annotations

from PySide6.QtWidgets import QGroupBox, QTreeWidget

from tests.helpers.onnx_files import write_model


def test_the_file_panel_says_which_node_reads_each_initializer(window, open_view, tmp_path):
    view = open_view(write_model(tmp_path / "m.onnx"))
    box = view.file_info.findChild(QGroupBox, "onnxUsers")
    tree = box.findChild(QTreeWidget, "onnxUsersTree")
    rows = {tree.topLevelItem(i).text(0): tree.topLevelItem(i).text(1) for i in range(tree.topLevelItemCount())}
    assert rows["conv.weight"] == "/conv/Conv (Conv, input 1)"
    assert box.title() == f"Used by ({len(view.store.users):,} initializers)"
    assert view.store.description.startswith("ONNX IR v")
