"""A real torch model to Burnpack (pytorch-to-burn) and back to SafeTensors (burn-to-pytorch), loaded strictly.

BatchNorm's ``num_batches_tracked`` is an int buffer Burn has no field for: the adapters keep
non-float buffers as they are (Burn reports it unused on load), so the way back still has it and
``load_state_dict(strict=True)`` works.
"""

import torch
from safetensors.torch import load_file
from torch import nn

from engine import open_store
from engine.surgery import Recipe, RemapRule, diff, plan
from tests.helpers.surgery_burn_fixtures import load_pt


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.proj = nn.Linear(4 * 6 * 6, 8)
        self.norm = nn.LayerNorm(8)
        self.head = nn.Sequential(nn.Linear(8, 12), nn.ReLU(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, tokens, image):
        x = self.bn(self.conv(image)).flatten(1)
        x = self.norm(self.proj(x) + self.emb(tokens).mean(1))
        return self.head(x)


def trained_net() -> Net:
    torch.manual_seed(0)
    net = Net()
    net.train()
    for _ in range(3):  # give BatchNorm real running stats and num_batches_tracked
        net(torch.randint(0, 16, (4, 5)), torch.randn(4, 1, 8, 8))
    return net.eval()


def test_pytorch_to_burn_and_back_loads_strictly_with_the_same_outputs(tmp_path):
    net = trained_net()
    torch.save(net.state_dict(), tmp_path / "net.pt")
    source = load_pt(tmp_path / "net.pt")

    to_burn = plan([source], Recipe(adapters=("pytorch-to-burn", "contiguous-indices")))
    burn_file = to_burn.export(tmp_path / "net.bpk")
    with open_store(burn_file) as burn:
        assert burn.entry("head.1.weight").shape == (12, 8)  # head.2 renumbered, [out, in] -> [in, out]
        assert burn.entry("proj.weight").shape == (144, 8)
        assert burn.entry("emb.weight").shape == (16, 8)
        assert {"bn.gamma", "bn.beta", "bn.running_mean", "bn.num_batches_tracked", "norm.gamma", "norm.beta"} <= set(burn.names)
        assert diff(to_burn, burn).all_identical

        back = plan([burn], Recipe(adapters=("burn-to-pytorch",),
                                   remaps=(RemapRule(r"^head\.2\.", "head.4."), RemapRule(r"^head\.1\.", "head.2."))))
        back.export(tmp_path / "net.safetensors")

    restored = Net().eval()
    restored.load_state_dict(load_file(tmp_path / "net.safetensors"), strict=True)
    tokens, image = torch.randint(0, 16, (2, 5)), torch.randn(2, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(restored(tokens, image), net(tokens, image), rtol=0, atol=0)
    assert int(restored.bn.num_batches_tracked) == 3
