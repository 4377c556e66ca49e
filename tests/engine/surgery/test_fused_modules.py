"""nn.LSTM, nn.GRU and nn.MultiheadAttention split into Burn's layout and fused back, checked against torch itself.

A stacked nn.LSTM/nn.GRU's layers rest on a guess, word for word (README "Fused modules": layer ``k`` goes to
``MODULE.k``, **reported as a guess**) -> ``test_a_stacked_layer_is_a_guess_saying_where_it_went``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from engine import ArrayStore, RecipeError, export, open_store
from engine.cli import main
from engine.surgery import Recipe, SourceSpec, plan
from engine.surgery.ops import FuseSplit, SplitFused, Transpose
from engine.surgery.printers import as_rust

TO_BURN = Recipe(adapters=("pytorch-to-burn",))
TO_TORCH = Recipe(adapters=("burn-to-pytorch",))
LSTM = ("input_gate", "forget_gate", "cell_gate", "output_gate")
GRU = ("reset_gate", "update_gate", "new_gate")


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lstm = torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True)
        self.gru = torch.nn.GRU(4, 6)
        self.single = torch.nn.LSTM(2, 3, bias=False)
        self.attn = torch.nn.MultiheadAttention(8, 2)
        self.head = torch.nn.Linear(6, 2)


def state():
    return {k: v.detach().contiguous() for k, v in Model().state_dict().items()}


@pytest.fixture
def torch_file(tmp_path):
    path = tmp_path / "rnn.safetensors"
    save_file(state(), str(path))
    return path


def converted(source, recipe, dest):
    with open_store(source) as store:
        result = plan([store], recipe)
        assert not result.conflicts
        result.export(dest)
    return result


def values(path):
    with open_store(path) as store:
        return {e.name: np.array(store.read(e.name)) for e in store.entries}


def test_every_burn_tensor_is_the_torch_slice_transposed(torch_file, tmp_path, capsys):
    # a .pt saved by torch, converted by the CLI as a user would (the stack's placement is a guess, so not --strict)
    source = tmp_path / "rnn.pt"
    torch.save(Model().state_dict(), source)
    assert main(["convert", str(source), str(tmp_path / "burn.bpk"), "--adapter", "pytorch-to-burn", "-v"]) == 0
    assert "guessed lstm.1.reverse.cell_gate.hidden_transform.bias: placed at" in capsys.readouterr().err
    with open_store(source) as store:
        result = plan([store], TO_BURN)
    burn, torch_state = values(tmp_path / "burn.bpk"), {k: v.numpy() for k, v in state().items()}
    for layer in (0, 1):
        for direction, suffix in (("forward", ""), ("reverse", "_reverse")):
            for side, transform in (("ih", "input_transform"), ("hh", "hidden_transform")):
                for k, gate in enumerate(LSTM):
                    base = f"lstm.{layer}.{direction}.{gate}.{transform}"
                    rows = slice(5 * k, 5 * (k + 1))
                    np.testing.assert_array_equal(burn[f"{base}.weight"], torch_state[f"lstm.weight_{side}_l{layer}{suffix}"][rows].T)
                    np.testing.assert_array_equal(burn[f"{base}.bias"], torch_state[f"lstm.bias_{side}_l{layer}{suffix}"][rows])
    for k, gate in enumerate(GRU):
        assert burn[f"gru.{gate}.input_transform.weight"].shape == (4, 6)
        np.testing.assert_array_equal(burn[f"gru.{gate}.hidden_transform.weight"], torch_state["gru.weight_hh_l0"][6 * k:6 * (k + 1)].T)
        np.testing.assert_array_equal(burn[f"gru.{gate}.hidden_transform.bias"], torch_state["gru.bias_hh_l0"][6 * k:6 * (k + 1)])
    assert {f"single.{g}.{t}.weight" for g in LSTM for t in ("input_transform", "hidden_transform")} == \
        {n for n in burn if n.startswith("single.")}  # one layer, one direction, no bias: a plain Lstm
    for k, proj in enumerate(("query", "key", "value")):
        np.testing.assert_array_equal(burn[f"attn.{proj}.weight"], torch_state["attn.in_proj_weight"][8 * k:8 * (k + 1)].T)
        np.testing.assert_array_equal(burn[f"attn.{proj}.bias"], torch_state["attn.in_proj_bias"][8 * k:8 * (k + 1)])
    np.testing.assert_array_equal(burn["attn.output.weight"], torch_state["attn.out_proj.weight"].T)
    np.testing.assert_array_equal(burn["head.weight"], torch_state["head.weight"].T)
    assert not any("weight_ih" in n or "in_proj" in n or "out_proj" in n for n in burn)
    # the kinds are evidence (the gate Linears), and only a stack's layer placement is a guess
    assert result.modules["gru.reset_gate.input_transform"].kind == "Linear"
    assert {g.module for g in result.guesses} == {"lstm.0", "lstm.1"}
    assert all(g.kind == "LSTM" for g in result.guesses)


def test_a_split_is_one_operation_with_its_input_and_outputs(torch_file):
    with open_store(torch_file) as store:
        result = plan([store], TO_BURN)
    by_name = {t.name: t for t in result.tensors}
    gate = by_name["gru.update_gate.input_transform.weight"]
    split, transpose = gate.ops
    assert isinstance(split, SplitFused) and isinstance(transpose, Transpose)
    assert split.what == "GRU gates" and split.source == "gru.weight_ih_l0" and (split.start, split.stop) == (6, 12)
    assert split.outputs == tuple(f"gru.{g}.input_transform.weight" for g in GRU)
    assert [e.name for e in gate.inputs] == ["gru.weight_ih_l0"] and gate.nbytes == 6 * 4 * 4
    assert gate.operations[0].startswith("split GRU gates: gru.weight_ih_l0 rows 6:12 -> ")


def test_fused_back_bit_for_bit(torch_file, tmp_path):
    converted(torch_file, TO_BURN, tmp_path / "burn.bpk")
    back = converted(tmp_path / "burn.bpk", TO_TORCH, tmp_path / "back.safetensors")
    original, again = values(torch_file), values(tmp_path / "back.safetensors")
    assert set(again) == set(original)
    for name, array in original.items():
        assert again[name].tobytes() == array.tobytes() and again[name].shape == array.shape, name
    fused = next(t for t in back.tensors if t.name == "attn.in_proj_weight")
    (op,) = fused.ops
    assert isinstance(op, FuseSplit) and op.inputs == tuple(f"attn.{p}.weight" for p in ("query", "key", "value"))
    assert {g.module for g in back.guesses} == {"lstm"}  # reading lstm.0/lstm.1 as one stack is a guess


def test_a_template_settles_the_stack_placement(torch_file, tmp_path):
    converted(torch_file, TO_BURN, tmp_path / "burn.bpk")
    with open_store(torch_file) as store, open_store(tmp_path / "burn.bpk") as template:
        assert plan([store], TO_BURN, template=template).guesses == []


def test_one_lstm_step_from_the_burn_tensors_matches_torch(tmp_path):
    torch.manual_seed(1)
    lstm = torch.nn.LSTM(3, 4)
    path = tmp_path / "one.safetensors"
    save_file({k: v.detach().contiguous() for k, v in lstm.state_dict().items()}, str(path))
    converted(path, TO_BURN, tmp_path / "one.bpk")
    w = values(tmp_path / "one.bpk")
    x = np.random.default_rng(2).standard_normal((1, 3)).astype(np.float32)

    def gate(name, h):  # Burn's GateController: x W_input + b + h W_hidden + b
        return (x @ w[f"{name}.input_transform.weight"] + w[f"{name}.input_transform.bias"]
                + h @ w[f"{name}.hidden_transform.weight"] + w[f"{name}.hidden_transform.bias"])

    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h = c = np.zeros((1, 4), np.float32)
    i, f, o = (sigmoid(gate(g, h)) for g in ("input_gate", "forget_gate", "output_gate"))
    c = f * c + i * np.tanh(gate("cell_gate", h))
    h = o * np.tanh(c)
    expected, _ = lstm(torch.from_numpy(x).unsqueeze(0))
    np.testing.assert_allclose(h, expected[0].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_shapes_that_do_not_add_up_are_left_as_they_are(tmp_path):
    odd = {"rnn.weight_ih_l0": torch.ones(10, 3), "rnn.weight_hh_l0": torch.ones(10, 5),  # 2 gates: no such cell
           "att.in_proj_weight": torch.ones(7, 4),  # 7 rows cannot be q, k and v
           "big.weight_ih_l0": torch.ones(8, 3), "big.weight_hh_l0": torch.ones(8, 2),  # a layer far away: no stack
           "big.weight_ih_l999999": torch.ones(8, 3), "big.weight_hh_l999999": torch.ones(8, 2)}
    path = tmp_path / "odd.safetensors"
    save_file(odd, str(path))
    with open_store(path) as store:
        result = plan([store], TO_BURN)
    assert sorted(result.names) == sorted(odd) and not any(t.ops for t in result.tensors)


def test_one_gru_step_from_the_burn_tensors_matches_torch(tmp_path):
    torch.manual_seed(3)
    gru = torch.nn.GRU(3, 4)
    path = tmp_path / "gru.safetensors"
    save_file({k: v.detach().contiguous() for k, v in gru.state_dict().items()}, str(path))
    converted(path, TO_BURN, tmp_path / "gru.bpk")
    w = values(tmp_path / "gru.bpk")
    x = np.random.default_rng(4).standard_normal((1, 3)).astype(np.float32)
    h = np.random.default_rng(5).standard_normal((1, 4)).astype(np.float32)

    def part(gate, transform, v):
        return v @ w[f"{gate}.{transform}.weight"] + w[f"{gate}.{transform}.bias"]

    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    r = sigmoid(part("reset_gate", "input_transform", x) + part("reset_gate", "hidden_transform", h))
    z = sigmoid(part("update_gate", "input_transform", x) + part("update_gate", "hidden_transform", h))
    n = np.tanh(part("new_gate", "input_transform", x) + r * part("new_gate", "hidden_transform", h))  # reset after
    expected, _ = gru(torch.from_numpy(x).unsqueeze(0), torch.from_numpy(h).unsqueeze(0))
    np.testing.assert_allclose((1 - z) * n + z * h, expected[0].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_the_rust_chain_says_burn_store_cannot_split_fused_gates(torch_file):
    with open_store(torch_file) as store:
        recipe = Recipe(sources=(SourceSpec(str(torch_file)),), adapters=("pytorch-to-burn",))
        chain = as_rust(recipe, [store], plan([store], recipe))
        plain = as_rust(recipe)
    # two LSTMs (16 + 2 fused tensors), in the file's order
    assert ("// left to do: split LSTM gates (lstm.bias_hh_l0, lstm.bias_hh_l0_reverse, lstm.bias_hh_l1 and 15 more): "
            "burn-store cannot split fused gates or q/k/v") in chain
    assert "// left to do: split GRU gates (gru.bias_hh_l0, gru.bias_ih_l0, gru.weight_hh_l0 and 1 more)" in chain
    assert "// left to do: split attention q/k/v (attn.in_proj_bias, attn.in_proj_weight)" in chain
    assert "cannot split" not in plain  # without the files nothing says a split happens


def test_gates_of_different_dtypes_are_refused_not_cast(tmp_path):
    layer = {k: v.detach().contiguous() for k, v in torch.nn.MultiheadAttention(4, 1).state_dict().items()}
    path = tmp_path / "attn.safetensors"
    save_file(layer, str(path))
    converted(path, TO_BURN, tmp_path / "attn.bpk")
    with open_store(tmp_path / "attn.bpk") as burn:
        mixed = {e.name: np.array(burn.read(e.name)) for e in burn.entries}
    mixed["key.weight"] = mixed["key.weight"].astype(np.float16)
    export(ArrayStore(mixed).entries, tmp_path / "mixed.safetensors")
    with open_store(tmp_path / "mixed.safetensors") as store, pytest.raises(RecipeError, match=r"would mix dtypes \(F16, F32\)"):
        plan([store], TO_TORCH)


SETTLE = "settle with --template FILE (a file of the target model holding this name), or a remap to where the model keeps it"


def test_a_stacked_layer_is_a_guess_saying_where_it_went():
    torch.manual_seed(0)
    state = {k: v.detach().numpy() for k, v in torch.nn.LSTM(2, 3, num_layers=2).state_dict().items()}
    state |= {"gru." + k: v.detach().numpy() for k, v in torch.nn.GRU(2, 3, num_layers=2).state_dict().items()}
    lines = {g.line() for g in plan([ArrayStore(state)], Recipe(adapters=("pytorch-to-burn",))).guesses}
    assert ("guessed 1.input_gate.input_transform.weight: placed at 1.input_gate.input_transform.weight (Burn has no "
            "stacked LSTM: layer 1 of nn.LSTM (top level) is placed at 1, as a Vec<Lstm> (or Vec<BiLstm>) field would "
            f"hold it); {SETTLE}") in lines
    assert ("guessed gru.0.new_gate.hidden_transform.bias: placed at gru.0.new_gate.hidden_transform.bias (Burn has no "
            "stacked GRU: layer 0 of nn.GRU gru is placed at gru.0, as a Vec<Gru> (or Vec<BiGru>) field would hold it); "
            f"{SETTLE}") in lines
    assert len(lines) == 2 * 16 + 2 * 12  # every split tensor of both stacks
