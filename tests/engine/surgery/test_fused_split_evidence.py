"""PyTorch to Burn: which nn.LSTM/nn.GRU/nn.MultiheadAttention tensors a split reads as one module, from their
names and shapes alone, and where each promise of README "Fused modules" is tested.

Promises of README "Fused modules" -> tests (``fm`` = ``test_fused_modules.py``, ``bp`` =
``test_fused_back_placement.py``, ``bs`` = ``test_fused_back_steps.py``, here = this module):
- split and fused back "exactly (slices and transposes, bit for bit both ways)" -> fm
  ``test_every_burn_tensor_is_the_torch_slice_transposed``, fm ``test_fused_back_bit_for_bit``
- nn.LSTM's rows i, f, g, o are Burn's input, forget, cell and output gates, weights ``[in, out]`` -> fm
  ``test_one_lstm_step_from_the_burn_tensors_matches_torch`` (one step computed from the Burn tensors is torch's)
- nn.GRU's rows r, z, n, Burn's default ``reset_after = true`` -> fm ``test_one_gru_step_from_the_burn_tensors_matches_torch``
- ``bidirectional=True`` is a BiLstm/BiGru's ``forward`` and ``reverse`` -> fm
  ``test_every_burn_tensor_is_the_torch_slice_transposed`` (a two-layer bidirectional nn.LSTM), bp
  ``test_cells_land_where_their_names_place_them``
- ``num_layers=N``: layer ``k`` goes to ``MODULE.k``, reported as a guess that a ``--template`` settles ->
  fm ``test_a_stacked_layer_is_a_guess_saying_where_it_went``, fm ``test_a_template_settles_the_stack_placement``; back, bs
  ``test_a_stack_fused_back_is_a_guess_naming_the_module_or_the_top_level``
- nn.MultiheadAttention's ``in_proj_weight``/``in_proj_bias`` (rows q, k, v) and ``out_proj`` are ``query``,
  ``key``, ``value``, ``output`` -> fm ``test_fused_back_bit_for_bit``, bp ``test_an_attention_fuses_back_saying_each_step``
- "the gate count is ``weight_hh``'s rows over its columns (4 an LSTM, 3 a GRU)" -> fm
  ``test_shapes_that_do_not_add_up_are_left_as_they_are`` (2 gates), here
  ``test_a_one_unit_lstm_splits_into_one_column_gates`` (a hidden size of 1 is a cell like any other)
- "every other tensor of the module must agree; anything that does not add up ... is left as it is": a projection
  ``weight_hr_l0`` -> here ``test_a_module_whose_tensors_do_not_agree_is_left_as_it_is`` (with six other
  layouts: no ``weight_hh_l0``, a 1-D or columnless one, a 2-D bias, a reverse of another hidden size, a
  second layer of other rows; each beside an LSTM that splits); ``kdim``/``vdim`` attention's separate
  ``q_proj_weight`` -> here ``test_a_kdim_vdim_attention_is_left_unsplit``; 7 rows of ``in_proj_weight`` -> fm
  ``test_shapes_that_do_not_add_up_are_left_as_they_are``
- back to PyTorch, "a Burn module fuses only when it holds exactly one cell's gates, each two Linears of one shape"
  -> bp ``test_a_module_that_is_not_one_cells_gates_is_left_as_it_is``, bs
  ``test_a_cell_missing_a_bias_is_left_as_it_is_even_beside_a_tensor_named_empty``
- "``MODULE.0``, ``MODULE.1``... fuse into a stack only when both layers 0 and 1 are there (both directions of
  each, for BiLstms)" -> bp ``test_cells_land_where_their_names_place_them``
- "A split is one operation with one input and all its outputs ..., followed by the Linear's transpose" -> fm
  ``test_a_split_is_one_operation_with_its_input_and_outputs``, here ``test_a_one_unit_lstm_splits_into_one_column_gates``;
  back, bs ``test_an_lstm_fuses_back_saying_each_step``
- "the Preview reads ``◆ split, transposed``" -> ``tests/gui/workbench/test_fused_preview.py``
- a printed Rust chain says "// left to do: split LSTM gates (...)" -> fm
  ``test_the_rust_chain_says_burn_store_cannot_split_fused_gates``
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


def test_a_kdim_vdim_attention_is_left_unsplit(tmp_path):
    # kdim/vdim: separate q/k/v_proj_weight of three shapes, no in_proj_weight to split
    torch.manual_seed(0)
    state = {f"attn.{k}": v.detach().numpy() for k, v in torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=5).state_dict().items()}
    result = planned(tmp_path, state)
    assert set(result) == set(state)
    assert [step for _, steps in result.values() for step in steps if not step.startswith("transpose")] == []


def torch_state(module: str, layer: torch.nn.Module) -> dict[str, np.ndarray]:
    torch.manual_seed(0)
    return {f"{module}.{k}": v.detach().numpy() for k, v in layer.state_dict().items()}


def test_an_attention_and_a_gru_split_saying_each_step_with_their_linears_proven(tmp_path):
    # 6 heads' worth of rows (18: three projections, not four) and a GRU, each under a module two deep
    tensors = torch_state("enc.attn", torch.nn.MultiheadAttention(6, 2)) | torch_state("enc.rnn", torch.nn.GRU(2, 3))
    path = tmp_path / "torch.safetensors"
    save_file(tensors, str(path))
    with open_store(path) as store:
        result = plan([store], TO_BURN)
    steps = {t.name: (tuple(t.shape), [op.describe() for op in t.ops]) for t in result.tensors}
    qkv = "enc.attn.query.{0}, enc.attn.key.{0}, enc.attn.value.{0}"
    assert steps["enc.attn.key.weight"] == ((6, 6), [
        f"split attention q/k/v: enc.attn.in_proj_weight rows 6:12 -> {qkv.format('weight')}", "transpose [6, 6] -> [6, 6]"])
    assert steps["enc.attn.value.bias"] == ((6,), [
        f"split attention q/k/v: enc.attn.in_proj_bias rows 12:18 -> {qkv.format('bias')}"])
    assert steps["enc.attn.output.weight"] == ((6, 6), [
        "rename enc.attn.out_proj.weight -> enc.attn.output.weight (nn.MultiheadAttention out_proj)",
        "transpose [6, 6] -> [6, 6]"])
    assert steps["enc.attn.output.bias"] == ((6,), [
        "rename enc.attn.out_proj.bias -> enc.attn.output.bias (nn.MultiheadAttention out_proj)"])
    gru_gates = ("reset_gate", "update_gate", "new_gate")
    assert {path: (g.kind, g.reason, g.guessed) for path, g in result.modules.items()} == {
        **{f"enc.attn.{p}": ("Linear", "a projection of nn.MultiheadAttention's in_proj_weight", False)
           for p in ("query", "key", "value")},
        "enc.attn.output": ("Linear", "nn.MultiheadAttention's out_proj", False),
        **{f"enc.rnn.{gate}.{transform}": ("Linear", f"a gate of nn.GRU's weight_{side}_l0", False)
           for side, transform in (("ih", "input_transform"), ("hh", "hidden_transform")) for gate in gru_gates}}


def test_an_attention_without_biases_splits_its_weight_alone(tmp_path):
    result = planned(tmp_path, torch_state("attn", torch.nn.MultiheadAttention(4, 2, bias=False)))
    assert {name: shape for name, (shape, _) in result.items()} == {
        "attn.query.weight": (4, 4), "attn.key.weight": (4, 4), "attn.value.weight": (4, 4), "attn.output.weight": (4, 4)}


def attention(module: str, rows: int = 12, columns: int = 4, bias: int | None = 12) -> dict[str, np.ndarray]:
    """nn.MultiheadAttention's fused tensors of the shapes given (``bias=None``: none)."""
    out = {f"{module}.in_proj_weight": np.ones((rows, columns), np.float32),
           f"{module}.out_proj.weight": np.ones((columns, columns), np.float32)}
    return out | ({f"{module}.in_proj_bias": np.ones(bias, np.float32)} if bias is not None else {})


ATTENTION_NOT_ADDING_UP = {
    # each sorts (and so is read) before "z", the attention beside it that splits
    "an in_proj_weight without rows": attention("a", rows=0, bias=None),
    "an in_proj_bias of another length": attention("a", bias=9),
}


@pytest.mark.parametrize("layout", ATTENTION_NOT_ADDING_UP, ids=list(ATTENTION_NOT_ADDING_UP))
def test_an_attention_that_does_not_add_up_is_left_unsplit(tmp_path, layout):
    odd = ATTENTION_NOT_ADDING_UP[layout]
    result = planned(tmp_path, odd | attention("z"))
    assert set(result) == set(odd) | {f"z.{p}.{leaf}" for p in ("query", "key", "value") for leaf in ("weight", "bias")} | {
        "z.output.weight"}
    assert [step for name in odd for step in result[name][1] if not step.startswith("transpose")] == []
