"""The workbench Preview shows a fused PyTorch module's split as one operation, with its input and outputs."""

from __future__ import annotations

import torch

from gui.main_window import MainWindow
from gui.workbench.panels.preview import NAME, OPERATIONS, STATUS

from tests.helpers.gui_workbench import settle


def test_lstm_gates_show_as_one_split_operation(window: MainWindow, surgery, qtbot, tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "lstm.pt"
    torch.save(torch.nn.LSTM(3, 4).state_dict(), path)
    document = surgery(path)
    window.panels["adapters"].checks["pytorch-to-burn"].click()
    settle(qtbot, document)
    preview = window.panels["preview"]
    rows = {preview.model.index(r, NAME).data(): r for r in range(preview.model.rowCount())}
    assert "weight_ih_l0" not in rows and len(rows) == 16  # 4 gates x 2 Linears x weight and bias
    row = rows["forget_gate.input_transform.weight"]
    assert preview.model.index(row, STATUS).data() == "◆ split, transposed"
    operations = preview.model.index(row, OPERATIONS).data()
    assert operations.startswith("split LSTM gates: weight_ih_l0 rows 4:8 -> input_gate.input_transform.weight, "
                                 "forget_gate.input_transform.weight, cell_gate.input_transform.weight, "
                                 "output_gate.input_transform.weight; transpose [4, 3] -> [3, 4]")
    tensor = next(t for t in document.plan.tensors if t.name == "forget_gate.input_transform.weight")
    assert [e.name for e in tensor.inputs] == ["weight_ih_l0"]
