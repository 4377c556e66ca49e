"""Burn to PyTorch: which Burn cells fuse back into an nn.LSTM's tensors, and where they land (README "Fused
modules": ``forward``/``reverse`` of one kind are a bidirectional module, ``MODULE.0``, ``MODULE.1``... a stack,
reported as a guess; a module that is not exactly one cell's gates, each two Linears of one shape, is left as
it is); a user would otherwise get a PyTorch file whose LSTM tensors sit under the wrong names ->
``test_cells_land_where_their_names_place_them``, ``test_a_module_that_is_not_one_cells_gates_is_left_as_it_is``,
``test_an_attention_fuses_back_saying_each_step``.
"""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import open_store
from engine.surgery import Recipe, plan

TO_TORCH = Recipe(adapters=("burn-to-pytorch",))
LSTM = ("input_gate", "forget_gate", "cell_gate", "output_gate")
GRU = ("reset_gate", "update_gate", "new_gate")


def cell(module: str, gates=LSTM, hidden_shape=(4, 4), input_shape=(3, 4), biased=True) -> dict[str, np.ndarray]:
    """A Burn cell's tensors as Burn saves them (weights ``[in, out]``), each gate's shape overridable."""
    out: dict[str, np.ndarray] = {}
    for k, gate in enumerate(gates):
        shapes = {"hidden_transform": hidden_shape, "input_transform": input_shape}
        for transform, shape in shapes.items():
            shape = shape[k] if isinstance(shape, list) else shape
            out[f"{module}.{gate}.{transform}.weight"] = np.full(shape, k, np.float32)
            if biased:
                out[f"{module}.{gate}.{transform}.bias"] = np.full(shape[-1:], k, np.float32)
    return out


def planned_names(tmp_path, tensors: dict[str, np.ndarray]) -> list[str]:
    path = tmp_path / "burn.safetensors"
    save_file(tensors, str(path))
    with open_store(path) as store:
        return sorted(plan([store], TO_TORCH).names)


def fused_names(module: str, suffix: str = "_l0", leaves=("weight", "bias")) -> list[str]:
    return sorted(f"{module}.{leaf}_{side}{suffix}" for leaf in leaves for side in ("ih", "hh"))


def test_cells_land_where_their_names_place_them(tmp_path):
    tensors = (cell("enc.forward") | cell("enc.other")  # a forward without a reverse is no BiLstm
               | cell("dec.reverse")  # nor a reverse without a forward
               | cell("a.rnn.forward") | cell("a.rnn.reverse")  # a BiLstm two modules deep
               | cell("s.0") | cell("s.1")  # a plain stack: layers 0 and 1 of s
               | cell("d.b.0.forward") | cell("d.b.0.reverse") | cell("d.b.1.forward") | cell("d.b.1.reverse")  # a BiLstm stack, deep
               | cell("u.0.forward") | cell("u.1.forward") | cell("u.1.reverse"))  # no stack: layer 0 has no reverse
    expected = (fused_names("enc.forward") + fused_names("enc.other") + fused_names("dec.reverse")
                + fused_names("a.rnn") + fused_names("a.rnn", "_l0_reverse")
                + fused_names("s") + fused_names("s", "_l1")
                + [n for suffix in ("_l0", "_l0_reverse", "_l1", "_l1_reverse") for n in fused_names("d.b", suffix)]
                + fused_names("u.0.forward") + fused_names("u.1") + fused_names("u.1", "_l0_reverse"))
    assert planned_names(tmp_path, tensors) == sorted(expected)


SQUARE_HIDDEN_OTHER_INPUT = dict(hidden_shape=(4, 4), input_shape=(3, 3), biased=False)
LAYOUTS = {
    "three GRU gates and an LSTM gate": cell("m", gates=GRU + ("input_gate",), biased=False),
    "one gate's hidden weight of another size": cell("m", hidden_shape=[(4, 4), (4, 4), (4, 4), (5, 5)],
                                                     input_shape=[(3, 4), (3, 4), (3, 4), (3, 5)]),
    "hidden weights that are not square": cell("m", hidden_shape=(3, 5), input_shape=(2, 5), biased=False),
    "input weights square but of another size": cell("m", **SQUARE_HIDDEN_OTHER_INPUT),
    "input weights of three dimensions": cell("m", input_shape=(2, 4, 1), biased=False),
    "a one-dimensional hidden weight": cell("m", hidden_shape=(4,), input_shape=(3, 4), biased=False),
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_a_module_that_is_not_one_cells_gates_is_left_as_it_is(tmp_path, layout):
    tensors = LAYOUTS[layout] | cell("ok", biased=False)  # beside it, a cell that does fuse
    assert planned_names(tmp_path, tensors) == sorted([*LAYOUTS[layout], *fused_names("ok", leaves=("weight",))])


def test_an_attention_fuses_back_saying_each_step(tmp_path):
    # README "Fused modules": Burn's query, key, value and output become in_proj_weight/in_proj_bias and out_proj
    tensors = {f"enc.attn.{p}.{leaf}": np.full((4, 4) if leaf == "weight" else (4,), k, np.float32)
               for k, p in enumerate(("query", "key", "value", "output")) for leaf in ("weight", "bias")}
    save_file(tensors, str(tmp_path / "mha.safetensors"))
    with open_store(tmp_path / "mha.safetensors") as store:
        result = plan([store], TO_TORCH)
    steps = {t.name: (tuple(t.shape), [op.describe() for op in t.ops]) for t in result.tensors}
    qkv = "enc.attn.query.{0}, enc.attn.key.{0}, enc.attn.value.{0}"
    assert steps == {
        "enc.attn.in_proj_weight": ((12, 4), [f"fuse attention q/k/v: {qkv.format('weight')} transposed and stacked "
                                              "-> enc.attn.in_proj_weight"]),
        "enc.attn.in_proj_bias": ((12,), [f"fuse attention q/k/v: {qkv.format('bias')} stacked -> enc.attn.in_proj_bias"]),
        "enc.attn.out_proj.weight": ((4, 4), ["rename enc.attn.output.weight -> enc.attn.out_proj.weight (Burn "
                                              "MultiHeadAttention output)", "transpose [4, 4] -> [4, 4]"]),
        "enc.attn.out_proj.bias": ((4,), ["rename enc.attn.output.bias -> enc.attn.out_proj.bias (Burn "
                                          "MultiHeadAttention output)"]),
    }
