"""What does not add up to a fused module Burn keeps apart is left as it is (README "### Surgery", Fused modules:
"anything that does not add up (a projection `weight_hr_l0`, `kdim`/`vdim` attention's separate `q_proj_weight`,
7 rows of `in_proj_weight`) is left as it is"). The tensors are real torch modules'
state_dict(), saved by the official safetensors library.

Promise -> test:
- an nn.LSTM with `proj_size` and an nn.MultiheadAttention with `kdim`/`vdim` keep their names and bytes under
  pytorch-to-burn, while a plain nn.LSTM beside them is split ->
  test_a_projected_lstm_and_a_kdim_attention_are_left_as_they_are; a `weight_hr_l0` beside gates that add up ->
  test_a_projection_beside_gates_that_add_up_still_keeps_the_lstm_whole (checked: without fused.py's projection
  check it fails; torch's own projected LSTM is already stopped by the gate count); the 7 rows: engine/surgery/test_fused_modules.py::test_shapes_that_do_not_add_up_are_left_as_they_are
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from engine import open_store
from engine.surgery import Recipe, plan


class Mixed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.LSTM(3, 6, proj_size=2)
        self.cross = torch.nn.MultiheadAttention(8, 2, kdim=5, vdim=6)
        self.plain = torch.nn.LSTM(3, 5)


def test_a_projected_lstm_and_a_kdim_attention_are_left_as_they_are(tmp_path: Path) -> None:
    torch.manual_seed(5)
    state = {name: tensor.contiguous() for name, tensor in Mixed().state_dict().items()}
    assert "proj.weight_hr_l0" in state and "cross.q_proj_weight" in state and "cross.in_proj_weight" not in state
    save_file(state, str(tmp_path / "mixed.safetensors"))
    with open_store(tmp_path / "mixed.safetensors") as store:
        result = plan([store], Recipe(adapters=("pytorch-to-burn",)))
        out = {t.name: t for t in result.tensors}
        kept = [name for name in state if name.startswith(("proj.", "cross.")) and ".out_proj." not in name]
        assert len(kept) == 9
        for name in kept:
            assert name in out and not out[name].ops, name
            np.testing.assert_array_equal(out[name].read(), state[name].numpy())
        assert "plain.weight_ih_l0" not in out and "plain.input_gate.input_transform.weight" in out  # split as usual


def test_a_projection_beside_gates_that_add_up_still_keeps_the_lstm_whole(tmp_path: Path) -> None:
    """torch's own projected LSTM already fails the gate count (weight_hh is [4 x hidden, proj]); a `weight_hr_l0`
    beside gates that do add up is a projection all the same, which Burn's Lstm cannot hold."""
    torch.manual_seed(6)
    state = {f"rnn.{name}": tensor for name, tensor in torch.nn.LSTM(3, 5).state_dict().items()}
    state["rnn.weight_hr_l0"] = torch.randn(2, 5)
    save_file(state, str(tmp_path / "projected.safetensors"))
    with open_store(tmp_path / "projected.safetensors") as store:
        result = plan([store], Recipe(adapters=("pytorch-to-burn",)))
        assert sorted(result.names) == sorted(state) and not any(t.ops for t in result.tensors)
