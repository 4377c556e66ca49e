"""PyTorch to Burn: which nn.LSTM/nn.GRU tensors a split reads as one cell, from their names and shapes alone
(issue 25: the survivors of ``fused._rnn_shape``). README "Fused modules":

- "the gate count is ``weight_hh``'s rows over its columns (4 an LSTM, 3 a GRU)" ->
  ``test_a_one_unit_lstm_splits_into_one_column_gates`` (a hidden size of 1 is a cell like any other)
- "every other tensor of the module must agree; anything that does not add up (a projection ``weight_hr_l0``
  ...) is left as it is" -> ``test_a_module_whose_tensors_do_not_agree_is_left_as_it_is`` (a projection whose
  other shapes would split, no ``weight_hh_l0``, a 1-D or columnless ``weight_hh_l0``, a 2-D bias, a reverse
  direction of another hidden size, a second layer of other rows), each beside an LSTM that splits
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

from engine import open_store
from engine.surgery import Recipe, plan

TO_BURN = Recipe(adapters=("pytorch-to-burn",))
LSTM_GATES = ("input_gate", "forget_gate", "cell_gate", "output_gate")


def lstm(module: str, hidden: int = 4, inputs: int = 3, suffix: str = "_l0") -> dict[str, np.ndarray]:
    """One direction of one layer of an nn.LSTM as it saves it: gates i, f, g, o row after row."""
    rows = 4 * hidden
    return {f"{module}.weight_ih{suffix}": np.ones((rows, inputs), np.float32),
            f"{module}.weight_hh{suffix}": np.ones((rows, hidden), np.float32),
            f"{module}.bias_ih{suffix}": np.ones(rows, np.float32),
            f"{module}.bias_hh{suffix}": np.ones(rows, np.float32)}


def planned(tmp_path, tensors: dict[str, np.ndarray]) -> dict[str, tuple[tuple[int, ...], list[str]]]:
    """Each planned tensor's shape and steps, for ``tensors`` saved as a real SafeTensors file."""
    path = tmp_path / "torch.safetensors"
    save_file(tensors, str(path))
    with open_store(path) as store:
        return {t.name: (tuple(t.shape), [op.describe() for op in t.ops]) for t in plan([store], TO_BURN).tensors}


def split_names(module: str) -> set[str]:
    return {f"{module}.{gate}.{transform}.{leaf}" for gate in LSTM_GATES
            for transform in ("input_transform", "hidden_transform") for leaf in ("weight", "bias")}


def gates(transform: str, leaf: str) -> str:
    return ", ".join(f"rnn.{gate}.{transform}.{leaf}" for gate in LSTM_GATES)


def test_a_one_unit_lstm_splits_into_one_column_gates(tmp_path):
    torch.manual_seed(0)
    state = {k: v.detach().numpy() for k, v in torch.nn.LSTM(2, 1).state_dict().items()}
    tensors = {f"rnn.{k}": v for k, v in state.items()}
    result = planned(tmp_path, tensors)
    assert set(result) == split_names("rnn")
    assert result["rnn.forget_gate.input_transform.weight"] == ((2, 1), [
        f"split LSTM gates: rnn.weight_ih_l0 rows 1:2 -> {gates('input_transform', 'weight')}",
        "transpose [1, 2] -> [2, 1]"])
    assert result["rnn.output_gate.hidden_transform.weight"][0] == (1, 1)
    assert result["rnn.cell_gate.hidden_transform.bias"] == ((1,), [
        f"split LSTM gates: rnn.bias_hh_l0 rows 2:3 -> {gates('hidden_transform', 'bias')}"])


def _with(tensors: dict[str, np.ndarray], **changed: tuple[int, ...]) -> dict[str, np.ndarray]:
    """``tensors`` with the named ones (``__`` for ``.``) replaced by tensors of other shapes."""
    return tensors | {name.replace("__", "."): np.ones(shape, np.float32) for name, shape in changed.items()}


DISAGREEING = {
    # a projection (proj_size): torch's own makes weight_hh [4H, P], P < H; this one's other shapes would split
    "a projection weight_hr_l0": lstm("m") | {"m.weight_hr_l0": np.ones((4, 4), np.float32)},
    "no weight_hh_l0": {"m.weight_ih_l0": np.ones((16, 3), np.float32)},
    "a one-dimensional weight_hh_l0": _with(lstm("m"), m__weight_hh_l0=(16,)),
    "a weight_hh_l0 without columns": _with(lstm("m"), m__weight_hh_l0=(16, 0)),
    "a two-dimensional bias": _with(lstm("m"), m__bias_ih_l0=(16, 1)),
    "a reverse direction of another hidden size": lstm("m") | _with(lstm("m", suffix="_l0_reverse"),
                                                                    m__weight_hh_l0_reverse=(16, 5)),
    "a second layer of other rows": lstm("m") | _with(lstm("m", suffix="_l1"), m__weight_ih_l1=(12, 4)),
}


@pytest.mark.parametrize("layout", DISAGREEING, ids=list(DISAGREEING))
def test_a_module_whose_tensors_do_not_agree_is_left_as_it_is(tmp_path, layout):
    odd = DISAGREEING[layout]
    result = planned(tmp_path, odd | lstm("ok"))
    assert set(result) == set(odd) | split_names("ok")
    assert {name: result[name] for name in odd} == {name: (array.shape, []) for name, array in odd.items()}
