"""Regenerate the bundled sample CNN in three forms (needs the test extra's torch).

    python resources/samples/make_samples.py

- sample_cnn.pt: ``torch.save(model.state_dict())``, PyTorch layout;
- sample_cnn.safetensors: the same tensors, PyTorch layout, by the official library;
- sample_cnn.bpk: Burn layout (linear weights [in, out], norms gamma/beta, no
  num_batches_tracked), as a Burn model of the same shape would save it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from engine import ArrayStore, export  # noqa: E402


class SampleCnn(nn.Module):
    """Two conv + batch-norm blocks and two linear layers: a small MNIST-sized classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3)
        self.norm1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3)
        self.norm2 = nn.BatchNorm2d(32)
        self.fc1 = nn.Linear(32 * 5 * 5, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(torch.relu(self.norm1(self.conv1(x))), 2)
        x = torch.max_pool2d(torch.relu(self.norm2(self.conv2(x))), 2)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


def burn_layout(state: dict[str, torch.Tensor]) -> dict:
    arrays = {}
    for name, tensor in state.items():
        module, _, leaf = name.rpartition(".")
        if leaf == "num_batches_tracked":
            continue
        array = tensor.detach().numpy()
        if module.startswith("norm"):
            leaf = {"weight": "gamma", "bias": "beta"}.get(leaf, leaf)
        if module.startswith("fc") and leaf == "weight":
            array = array.T.copy()
        arrays[f"{module}.{leaf}"] = array
    return arrays


def main() -> None:
    torch.manual_seed(7)
    model = SampleCnn()
    model.train()
    model(torch.randn(8, 1, 28, 28))  # one step so running statistics are not trivial
    model.eval()
    state = model.state_dict()
    torch.save(state, HERE / "sample_cnn.pt")
    save_file({k: v.contiguous() for k, v in state.items()}, str(HERE / "sample_cnn.safetensors"),
              metadata={"source": "resources/samples/make_samples.py"})
    arrays = burn_layout(state)
    ids = {name: 1_000_003 * (i + 1) for i, name in enumerate(arrays)}
    store = ArrayStore(arrays, param_ids=ids)
    export(store.entries, HERE / "sample_cnn.bpk", metadata={"model": "SampleCnn"}, overwrite=True)


if __name__ == "__main__":
    main()
