"""Burn to PyTorch: each fuse's steps, shapes and guesses word for word, and which attention modules fuse: what a user
reads in the plan must be what was done. README "Fused modules":

- a Burn ``Lstm``'s gates become ``weight_ih_l0``, ``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0`` (rows i, f,
  g, o), weights transposed -> ``test_an_lstm_fuses_back_saying_each_step``
- ``MODULE.0``, ``MODULE.1``... become one stacked module, "reported as a guess" ->
  ``test_a_stack_fused_back_is_a_guess_naming_the_module_or_the_top_level``
- "a Burn module fuses only when it holds exactly one cell's gates, each two Linears of one shape" ->
  ``test_a_cell_missing_a_bias_is_left_as_it_is_even_beside_a_tensor_named_empty``
- ``MultiHeadAttention`` ``query``, ``key``, ``value``, ``output`` become ``in_proj_weight``/``in_proj_bias`` and
  ``out_proj``, which is proven a Linear -> ``test_an_attention_fuses_back_with_its_output_proven_a_linear``,
  ``test_the_fused_shape_is_the_written_one_for_projections_that_are_not_square``,
  ``test_an_attention_under_a_name_ending_in_x_fuses``
- "anything that does not add up ... is left as it is", and one module that does not fuse never stops another
  from fusing -> ``test_an_attention_that_does_not_add_up_is_left_as_it_is``
"""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from engine import open_store
from engine.surgery import Recipe, plan

TO_TORCH = Recipe(adapters=("burn-to-pytorch",))
LSTM = ("input_gate", "forget_gate", "cell_gate", "output_gate")
PROJECTIONS = ("query", "key", "value")
SETTLE = "settle with --template FILE (a file of the target model holding this name), or a remap to where the model keeps it"


def cell(module: str, hidden: int = 2, inputs: int = 3, biased: bool = True) -> dict[str, np.ndarray]:
    """A Burn Lstm's tensors as Burn saves them (weights ``[in, out]``), each gate's values its own."""
    out: dict[str, np.ndarray] = {}
    for k, gate in enumerate(LSTM):
        for transform, rows in (("input_transform", inputs), ("hidden_transform", hidden)):
            out[f"{module}.{gate}.{transform}.weight"] = np.arange(rows * hidden, dtype=np.float32).reshape(rows, hidden) + 10 * k
            if biased:
                out[f"{module}.{gate}.{transform}.bias"] = np.full(hidden, k, np.float32)
    return out


def attention(module: str, size: int = 4, weight_shape: tuple[int, ...] | None = None, biases=PROJECTIONS,
              output: bool = True) -> dict[str, np.ndarray]:
    """A Burn MultiHeadAttention's tensors: q/k/v weights of ``weight_shape`` and biases of its last size."""
    shape = weight_shape or (size, size)
    out = {f"{module}.{p}.weight": np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 100 * k
           for k, p in enumerate(PROJECTIONS)}
    out |= {f"{module}.{p}.bias": np.full(shape[-1], k, np.float32) for k, p in enumerate(PROJECTIONS) if p in biases}
    if output:
        out |= {f"{module}.output.weight": np.ones((size, size), np.float32), f"{module}.output.bias": np.ones(size, np.float32)}
    return out


def planned(tmp_path, tensors: dict[str, np.ndarray]):
    path = tmp_path / "burn.safetensors"
    save_file(tensors, str(path))
    with open_store(path) as store:
        return plan([store], TO_TORCH)


def steps(result) -> dict[str, tuple[tuple[int, ...], list[str]]]:
    return {t.name: (tuple(t.shape), [op.describe() for op in t.ops]) for t in result.tensors}


def test_an_lstm_fuses_back_saying_each_step(tmp_path):
    def inputs(transform: str, leaf: str) -> str:
        return ", ".join(f"enc.{gate}.{transform}.{leaf}" for gate in LSTM)

    assert steps(planned(tmp_path, cell("enc"))) == {
        "enc.weight_ih_l0": ((8, 3), [f"fuse LSTM gates: {inputs('input_transform', 'weight')} transposed and stacked "
                                      "-> enc.weight_ih_l0"]),
        "enc.bias_ih_l0": ((8,), [f"fuse LSTM gates: {inputs('input_transform', 'bias')} stacked -> enc.bias_ih_l0"]),
        "enc.weight_hh_l0": ((8, 2), [f"fuse LSTM gates: {inputs('hidden_transform', 'weight')} transposed and stacked "
                                      "-> enc.weight_hh_l0"]),
        "enc.bias_hh_l0": ((8,), [f"fuse LSTM gates: {inputs('hidden_transform', 'bias')} stacked -> enc.bias_hh_l0"]),
    }


@pytest.mark.parametrize("module, words", [("", "(top level)"), ("dec.rnn", "dec.rnn")])
def test_a_stack_fused_back_is_a_guess_naming_the_module_or_the_top_level(tmp_path, module, words):
    prefix = f"{module}." if module else ""
    result = planned(tmp_path, cell(f"{prefix}0", biased=False) | cell(f"{prefix}1", biased=False))
    assert sorted(g.line() for g in result.guesses) == sorted(
        f"guessed {prefix}weight_{side}_l{layer}: placed at {prefix}weight_{side}_l{layer} (Burn's {prefix}{layer} is "
        f"read as layer {layer} of one multi-layer nn.LSTM {words}); {SETTLE}" for layer in (0, 1) for side in ("ih", "hh"))


def test_a_cell_missing_a_bias_is_left_as_it_is_even_beside_a_tensor_named_empty(tmp_path):
    # a SafeTensors file may name a tensor "": it never stands in for the bias a cell lacks
    lacking = cell("m")
    del lacking["m.input_gate.hidden_transform.bias"]
    tensors = lacking | {"": np.zeros(2, np.float32)} | cell("ok", biased=False)
    result = steps(planned(tmp_path, tensors))
    assert set(result) == {*lacking, "", "ok.weight_ih_l0", "ok.weight_hh_l0"}
    assert [step for name in lacking for step in result[name][1] if not step.startswith("transpose")] == []


def test_an_attention_fuses_back_with_its_output_proven_a_linear(tmp_path):
    result = planned(tmp_path, attention("enc.attn"))
    assert {path: (g.kind, g.reason, g.guessed) for path, g in result.modules.items()} == {
        "enc.attn": ("Unknown", "no weight tensor", False),
        "enc.attn.out_proj": ("Linear", "Burn MultiHeadAttention's output", False)}


def test_the_fused_shape_is_the_written_one_for_projections_that_are_not_square(tmp_path):
    # q/k/v Linears from 3 inputs to 4: in_proj_weight is their transposes stacked, [12, 3], as planned
    tensors = attention("attn", weight_shape=(3, 4))
    save_file(tensors, str(tmp_path / "burn.safetensors"))
    with open_store(tmp_path / "burn.safetensors") as store:
        result = plan([store], TO_TORCH)
        assert steps(result)["attn.in_proj_weight"][0] == (12, 3)
        assert steps(result)["attn.in_proj_bias"][0] == (12,)
        result.export(tmp_path / "torch.safetensors")
    written = load_file(str(tmp_path / "torch.safetensors"))
    np.testing.assert_array_equal(written["attn.in_proj_weight"],
                                  np.concatenate([tensors[f"attn.{p}.weight"].T for p in PROJECTIONS]))
    np.testing.assert_array_equal(written["attn.in_proj_bias"], np.repeat(np.arange(3, dtype=np.float32), 4))


def test_an_attention_under_a_name_ending_in_x_fuses(tmp_path):
    # the module's path is the name less ".query.weight" (a trailing "X" is part of it)
    result = planned(tmp_path, attention("blockX"))
    assert sorted(result.names) == ["blockX.in_proj_bias", "blockX.in_proj_weight", "blockX.out_proj.bias",
                                    "blockX.out_proj.weight"]


FUSED = ["z.in_proj_bias", "z.in_proj_weight", "z.out_proj.bias", "z.out_proj.weight"]
NOT_ADDING_UP = {
    # each sorts (and so is read) before "z", the attention beside it that fuses
    "a Linear named subquery": {"a.subquery.weight": np.ones((4, 4), np.float32)},
    "a Linear named query without key or value": {"a.query.weight": np.ones((4, 4), np.float32)},
    "a query of another shape than its key": attention("a") | {"a.key.weight": np.ones((4, 5), np.float32)},
    "q/k/v without an output": attention("a", output=False),
    "a bias for the query only": attention("a", biases=("query",)),
    "biases of another size than the weights' outputs": attention("a") | {
        f"a.{p}.bias": np.ones(5, np.float32) for p in PROJECTIONS},
    "three-dimensional q/k/v weights": attention("a", weight_shape=(4, 4, 1), biases=()),
}


@pytest.mark.parametrize("layout", NOT_ADDING_UP, ids=list(NOT_ADDING_UP))
def test_an_attention_that_does_not_add_up_is_left_as_it_is(tmp_path, layout):
    odd = NOT_ADDING_UP[layout]
    result = steps(planned(tmp_path, odd | attention("z")))
    assert sorted(result) == sorted([*odd, *FUSED])
    assert [step for name in odd for step in result[name][1] if not step.startswith("transpose")] == []


def test_a_query_modules_other_tensor_is_not_read_as_its_weight(tmp_path):
    # a second 2-D tensor of the weight's shape in the query Linear (a Burn LoRA, say) is kept as it is
    tensors = attention("attn") | {"attn.query.lora": np.ones((4, 4), np.float32)}
    assert sorted(planned(tmp_path, tensors).names) == ["attn.in_proj_bias", "attn.in_proj_weight", "attn.out_proj.bias",
                                                        "attn.out_proj.weight", "attn.query.lora"]
