"""A PyTorch model with fused modules and the file its Burn twin saves: each gate (or q/k/v projection) its own
Linear, weights ``[in, out]`` (burn-nn gate_controller.rs, linear.rs; see engine/surgery/fused.py)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

LSTM_GATES = ("input_gate", "forget_gate", "cell_gate", "output_gate")  # nn.LSTM's row order i, f, g, o
GRU_GATES = ("reset_gate", "update_gate", "new_gate")  # nn.GRU's r, z, n
PROJECTIONS = ("query", "key", "value")


class Recurrent(nn.Module):
    """An LSTM, a GRU and a multi-head attention beside a plain Linear head."""

    def __init__(self, hidden: int = 4) -> None:
        super().__init__()
        self.lstm = nn.LSTM(3, hidden)
        self.gru = nn.GRU(2, 3)
        self.attn = nn.MultiheadAttention(4, 2)
        self.head = nn.Linear(hidden, 2)


def torch_state(hidden: int = 4) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {k: v.detach().contiguous() for k, v in Recurrent(hidden).state_dict().items()}


def burn_named(sd: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """What the Burn model (Lstm, Gru, MultiHeadAttention, Linear) saves for ``sd``'s values."""
    out: dict[str, np.ndarray] = {}
    for name, tensor in sd.items():
        array = tensor.numpy()
        module, _, leaf = name.rpartition(".")
        if module in ("lstm", "gru"):
            kind, side, _ = leaf.split("_")  # weight_ih_l0 -> weight, ih
            gates = LSTM_GATES if module == "lstm" else GRU_GATES
            rows = array.shape[0] // len(gates)
            for k, gate in enumerate(gates):
                part = array[k * rows:(k + 1) * rows]
                transform = "input_transform" if side == "ih" else "hidden_transform"
                out[f"{module}.{gate}.{transform}.{kind}"] = part.T.copy() if kind == "weight" else part.copy()
        elif leaf.startswith("in_proj_"):
            rows = array.shape[0] // 3
            for k, projection in enumerate(PROJECTIONS):
                part = array[k * rows:(k + 1) * rows]
                out[f"{module}.{projection}.{leaf.removeprefix('in_proj_')}"] = part.T.copy() if part.ndim == 2 else part.copy()
        else:
            module = module.replace("out_proj", "output")
            out[f"{module}.{leaf}"] = array.T.copy() if array.ndim == 2 else array
    return out
