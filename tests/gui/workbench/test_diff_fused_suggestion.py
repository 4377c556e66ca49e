"""The diff view offers the fused-gate split, with the pairs it makes, and Apply makes the checkpoint load.

The source is a checkpoint torch saved (an nn.LSTM, nn.GRU and nn.MultiheadAttention beside a Linear);
the other file is what the Burn model saves (each gate its own Linear, weights [in, out]).
"""

from __future__ import annotations

import numpy as np
import torch

from engine import ArrayStore, export
from gui.workbench.diff_panel import show_diff_dock
from tests.helpers.gui_workbench import settle


def _state() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Module()
    model.lstm = torch.nn.LSTM(3, 4)
    model.attn = torch.nn.MultiheadAttention(4, 2)
    return {k: v.detach().contiguous() for k, v in model.state_dict().items()}


def _burn(sd: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    gates = ("input_gate", "forget_gate", "cell_gate", "output_gate")
    out = {}
    for side, transform in (("ih", "input_transform"), ("hh", "hidden_transform")):
        for k, gate in enumerate(gates):
            out[f"lstm.{gate}.{transform}.weight"] = sd[f"lstm.weight_{side}_l0"].numpy()[4 * k:4 * k + 4].T.copy()
            out[f"lstm.{gate}.{transform}.bias"] = sd[f"lstm.bias_{side}_l0"].numpy()[4 * k:4 * k + 4].copy()
    for k, projection in enumerate(("query", "key", "value")):
        out[f"attn.{projection}.weight"] = sd["attn.in_proj_weight"].numpy()[4 * k:4 * k + 4].T.copy()
        out[f"attn.{projection}.bias"] = sd["attn.in_proj_bias"].numpy()[4 * k:4 * k + 4].copy()
    out["attn.output.weight"] = sd["attn.out_proj.weight"].numpy().T.copy()
    out["attn.output.bias"] = sd["attn.out_proj.bias"].numpy()
    return out


def test_the_split_is_offered_with_its_pairs_and_applying_it_makes_every_tensor_identical(window, surgery, qtbot,
                                                                                         tmp_path):
    sd = _state()
    torch.save(sd, tmp_path / "rnn.pt")
    burn = export(ArrayStore(_burn(sd)).entries, tmp_path / "rnn.bpk")
    document = surgery(tmp_path / "rnn.pt")
    panel = show_diff_dock(window, document)
    panel.compare_with_file(burn)
    qtbot.waitUntil(lambda: panel.is_idle() and bool(panel.bulk_box.suggestions), timeout=30_000)
    (row,) = panel.bulk_box.rows()
    assert [c.adapter for c in row.suggestion.changes] == ["pytorch-to-burn"]
    assert row.title.full_text == ("split the fused LSTM gates of lstm, attention q/k/v of attn (the "
                                   "pytorch-to-burn adapter): fixes 24 of 24 missing or mismatched")
    assert "lstm.weight_ih_l0 → lstm.input_gate.input_transform.weight [3, 4]" in row.title.toolTip().splitlines()
    assert "attn.in_proj_bias → attn.value.bias [4]" in row.title.toolTip()  # every pair, before applying

    row.apply_button.click()
    assert document.recipe.adapters == ("pytorch-to-burn",)
    settle(qtbot, document)
    qtbot.waitUntil(lambda: panel.is_idle() and len(panel.model.rows) == 24
                    and all(r.status == "identical" for r in panel.model.rows), timeout=30_000)
    assert not panel.bulk_box.isVisible()
