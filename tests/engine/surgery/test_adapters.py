"""The PyTorch <-> Burn adapters, checked against values computed by hand, never against the plan itself.

Each test would fail on a one-line slip in engine/surgery/adapters.py: one renumbering shared by
every indexed list, or a transpose skipped when it would not change the shape.
"""

import numpy as np
import torch
from torch import nn

from engine import ArrayStore, open_store
from engine.surgery import Recipe, plan
from engine.surgery.adapters import contiguous_indices
from surgery_helpers import load_pt

INDEXED = ["a.0.weight", "a.2.weight", "b.1.weight", "b.5.weight", "b.9.weight"]


def test_contiguous_indices_renumber_each_parent_on_its_own():
    assert contiguous_indices(INDEXED) == {
        "a.0.weight": "a.0.weight", "a.2.weight": "a.1.weight",
        "b.1.weight": "b.0.weight", "b.5.weight": "b.1.weight", "b.9.weight": "b.2.weight"}


def test_contiguous_indices_renumber_nested_lists_under_each_parent():
    names = ["enc.1.blocks.3.w", "enc.1.blocks.7.w", "enc.4.blocks.2.w", "enc.4.blocks.8.w", "enc.4.blocks.9.w"]
    assert list(contiguous_indices(names).values()) == [
        "enc.0.blocks.0.w", "enc.0.blocks.1.w", "enc.1.blocks.0.w", "enc.1.blocks.1.w", "enc.1.blocks.2.w"]


def test_a_plan_renumbers_two_indexed_lists_independently_and_moves_their_bytes(tmp_path):
    arrays = {name: np.full((2,), i, dtype=np.float32) for i, name in enumerate(INDEXED)}
    result = plan([ArrayStore(arrays)], Recipe(adapters=("contiguous-indices",)))
    with open_store(result.export(tmp_path / "out.safetensors")) as out:
        assert sorted(out.names) == ["a.0.weight", "a.1.weight", "b.0.weight", "b.1.weight", "b.2.weight"]
        got = {name: out.read(name).tolist() for name in out.names}
    assert got == {"a.0.weight": [0, 0], "a.1.weight": [1, 1], "b.0.weight": [2, 2], "b.1.weight": [3, 3],
                   "b.2.weight": [4, 4]}


def square_linear(tmp_path):
    """A square nn.Linear with bias saved by torch: transposing it does not change its shape."""
    torch.manual_seed(3)
    layer = nn.Linear(8, 8)
    torch.save({"fc." + k: v for k, v in layer.state_dict().items()}, tmp_path / "square.pt")
    return layer, tmp_path / "square.pt"


def test_pytorch_to_burn_transposes_a_square_linear_weight_on_the_bytes(tmp_path):
    layer, path = square_linear(tmp_path)
    weight, bias = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    result = plan([load_pt(path)], Recipe(adapters=("pytorch-to-burn",)))
    with open_store(result.export(tmp_path / "square.bpk")) as out:
        assert out.entry("fc.weight").shape == (8, 8)
        written = out.read("fc.weight")
        assert np.ascontiguousarray(written).tobytes() == np.ascontiguousarray(weight.T).tobytes()
        assert out.read("fc.bias").tobytes() == bias.tobytes()
        # Burn's Linear computes x @ W + b with W as [in, out]: the same output as torch's layer
        x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
        burn_output = x @ written + out.read("fc.bias")
    np.testing.assert_allclose(burn_output, layer(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_burn_to_pytorch_transposes_a_square_linear_weight_back(tmp_path):
    layer, path = square_linear(tmp_path)
    burn = open_store(plan([load_pt(path)], Recipe(adapters=("pytorch-to-burn",))).export(tmp_path / "sq.bpk"))
    with burn:
        back = plan([burn], Recipe(adapters=("burn-to-pytorch",)))
        with open_store(back.export(tmp_path / "sq.safetensors")) as out:
            assert out.read("fc.weight").tobytes() == layer.weight.detach().numpy().tobytes()
