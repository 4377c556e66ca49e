"""burn-store's documented results on its own PyTorch fixtures, reproduced by plans.

Where Burn's test checks a forward pass, the same network is rebuilt in torch, loaded (strict)
from what our plan exported, and must give Burn's expected output.
"""

import numpy as np
import pytest
import torch
from torch import nn

from engine import ArrayStore, open_store
from engine.surgery import Recipe, RemapRule, align, plan
from tests.helpers.surgery_burn_fixtures import load_pt, torch_state


def export_and_open(p, tmp_path, name="out.safetensors"):
    return open_store(p.export(tmp_path / name))


def test_non_contiguous_indices_are_renumbered_per_parent(tmp_path):
    source = load_pt("non_contiguous_indexes/non_contiguous_indexes.pt")
    result = plan([source], Recipe(adapters=("contiguous-indices",)))
    assert result.names == [f"fc.{i}.{leaf}" for i in range(5) for leaf in ("weight", "bias")]
    by_name = {t.name: t for t in result.tensors}
    assert by_name["fc.1.weight"].operations == ["rename fc.2.weight -> fc.1.weight (contiguous indices)"]
    with export_and_open(result, tmp_path) as out:
        np.testing.assert_array_equal(out.read("fc.4.weight"), source.read("fc.8.weight"))


def test_key_remap_fixture_gives_burns_output(tmp_path):
    result = plan([load_pt("key_remap/key_remap.pt")], Recipe(remaps=(RemapRule(r"conv\.(.*)", "$1"),)))
    assert sorted(result.names) == ["conv1.bias", "conv1.weight", "conv2.weight"]
    net = nn.Sequential()
    net.add_module("conv1", nn.Conv2d(2, 2, 2))
    net.add_module("conv2", nn.Conv2d(2, 2, 2, bias=False))
    with export_and_open(result, tmp_path) as out:
        net.load_state_dict(torch_state(out), strict=True)
    x = torch.tensor([[[[0.0245958, 0.25883394, 0.93905586, 0.4167155, 0.7139797],
                        [0.2676443, 0.990609, 0.28845078, 0.8749624, 0.5059208],
                        [0.23659128, 0.7570074, 0.23458993, 0.64705235, 0.3556214],
                        [0.4451828, 0.01930594, 0.26160914, 0.771317, 0.37846136],
                        [0.99802476, 0.9007942, 0.4765882, 0.16625845, 0.8044811]],
                       [[0.65517855, 0.17679012, 0.8247723, 0.8035509, 0.9434475],
                        [0.21972018, 0.417697, 0.49031407, 0.57302874, 0.12054086],
                        [0.14518881, 0.7720023, 0.38275403, 0.7442367, 0.52850497],
                        [0.6641724, 0.60994434, 0.6817997, 0.74785537, 0.03694397],
                        [0.7516757, 0.1484384, 0.12274551, 0.5304072, 0.4147964]]]])
    expected = torch.tensor([[[[-0.02502128, 0.00250649, 0.04841233], [0.04589614, -0.00296854, 0.01991477],
                               [0.02920526, 0.0594973, 0.04326791]],
                              [[-0.04825336, 0.0801909, -0.02375088], [0.02885434, 0.09638263, -0.07460806],
                               [0.02004079, 0.06244051, 0.0358871]]]])
    torch.testing.assert_close(net(x), expected, atol=1e-6, rtol=1e-5)


CHAINED = (RemapRule(r"(.+)\.block\.0\.(.+)", "$1.conv.$2"), RemapRule(r"(.+)\.block\.1\.(.+)", "$1.bn.$2"),
           RemapRule(r"layer\.([0-9])\.(.+)", "layer.blocks.$1.$2"))


class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(6, 6, 1, bias=False)
        self.bn = nn.BatchNorm2d(6)


class ChainedModel(nn.Module):
    """Burn's key_remap_chained model with PyTorch's layout (its state dict names are Burn's, before the adapter)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, bias=False)
        self.bn = nn.BatchNorm2d(6)
        self.layer = nn.Module()
        self.layer.blocks = nn.ModuleList([ConvBlock(), ConvBlock()])

    def forward(self, x):
        x = self.bn(self.conv(x))
        for block in self.layer.blocks:
            x = block.bn(block.conv(x))
        return x


def test_chained_remaps_each_apply_to_the_previous_result_and_give_burns_output(tmp_path):
    result = plan([load_pt("key_remap_chained/key_remap.pt")], Recipe(remaps=CHAINED))
    assert "layer.blocks.1.bn.running_var" in result.names
    assert [h.count for h in result.rule_hits] == [2, 10, 12]
    model = ChainedModel().eval()
    with export_and_open(result, tmp_path) as out:
        model.load_state_dict(torch_state(out), strict=True)
    x = torch.tensor([[[[0.76193494, 0.6265461, 0.49510366, 0.11974698], [0.07161391, 0.03232569, 0.704681, 0.254516],
                        [0.3993737, 0.21224737, 0.40888822, 0.14808255], [0.17329216, 0.6658554, 0.3514018, 0.8086716]],
                       [[0.33959562, 0.13321638, 0.41178054, 0.2576263], [0.3470292, 0.02400219, 0.77974546, 0.15189773],
                        [0.75130886, 0.7268921, 0.85721636, 0.11647397], [0.8595984, 0.2636242, 0.6855346, 0.96955734]],
                       [[0.42948407, 0.49613327, 0.38488472, 0.08250773], [0.73995143, 0.00364107, 0.81039995, 0.87411255],
                        [0.9728532, 0.38206023, 0.08917904, 0.61241513], [0.77621365, 0.00234562, 0.38650817, 0.20027226]]]])
    expected = torch.tensor([[[[0.1989671, 0.17847246], [0.06883702, 0.20012866]],
                              [[0.17582723, 0.11344293], [0.05444185, 0.13307181]],
                              [[0.1922295, 0.20391327], [0.06150475, 0.22688155]],
                              [[0.00230906, -0.02177845], [0.01129148, 0.00925517]],
                              [[0.14751078, 0.14433631], [0.05498439, 0.29049855]],
                              [[0.16868964, 0.1332693], [0.06917118, 0.35094324]]]])
    with torch.no_grad():
        torch.testing.assert_close(model(x), expected, atol=1e-5, rtol=1e-4)


def test_chained_remaps_without_the_last_rule_leave_the_template_missing_tensors():
    """Burn's ``key_remap_chained_missing_pattern`` panics; our alignment says what is missing."""
    burn = plan([load_pt("key_remap_chained/key_remap.pt")], Recipe(remaps=CHAINED, adapters=("pytorch-to-burn",)))
    template = ArrayStore({t.name: np.zeros(t.shape, t.dtype.numpy) for t in burn.tensors})
    partial = plan([load_pt("key_remap_chained/key_remap.pt")], Recipe(remaps=CHAINED[:2], adapters=("pytorch-to-burn",)))
    report = align(partial, template)
    assert "layer.blocks.0.conv.weight" in report.missing
    assert report.suggestions["layer.blocks.0.conv.weight"][0] == "layer.0.conv.weight"
    assert align(burn, template).ok


def test_top_level_key_reads_one_branch():
    store = load_pt("top_level_key/top_level_key.pt", top_level_key="my_state_dict")
    assert plan([store]).names == ["conv1.weight", "conv1.bias"]


ENUM_TEMPLATES = {
    "enum_depthwise_true.pt": {"conv.DwsConv.dconv.weight": (2, 1, 3, 3), "conv.DwsConv.dconv.bias": (2,),
                               "conv.DwsConv.pconv.weight": (2, 2, 1, 1), "conv.DwsConv.pconv.bias": (2,)},
    "enum_depthwise_false.pt": {"conv.Conv.weight": (2, 2, 3, 3), "conv.Conv.bias": (2,)},
}


@pytest.mark.parametrize("fixture", sorted(ENUM_TEMPLATES))
def test_enum_variant_segments_of_the_burn_model_are_matched_and_adopted(fixture, tmp_path):
    template = ArrayStore({k: np.zeros(s, np.float32) for k, s in ENUM_TEMPLATES[fixture].items()})
    source = load_pt(f"enum_module/{fixture}")
    assert align(source, template).through_variants == {n: n.replace(".DwsConv", "").replace(".Conv", "")
                                                       for n in ENUM_TEMPLATES[fixture]}
    result = plan([source], Recipe(adapters=("pytorch-to-burn",)), template=template)
    assert sorted(result.names) == sorted(ENUM_TEMPLATES[fixture])
    report = align(result, template)
    assert report.ok and not report.unused and not report.through_variants


def test_enum_model_exported_for_burn_and_read_back_gives_burns_output(tmp_path):
    template = ArrayStore({k: np.zeros(s, np.float32) for k, s in ENUM_TEMPLATES["enum_depthwise_true.pt"].items()})
    burn_file = plan([load_pt("enum_module/enum_depthwise_true.pt")], Recipe(adapters=("pytorch-to-burn",)),
                     template=template).export(tmp_path / "net.bpk")
    with open_store(burn_file) as burn:
        unsettled = plan([burn], Recipe(adapters=("skip-enum-variants", "burn-to-pytorch")))
        assert [g.module for g in unsettled.guesses] == ["conv.DwsConv"] * 4  # kept: nothing says it is a variant
        back = plan([burn], Recipe(adapters=("skip-enum-variants", "burn-to-pytorch"),
                                   module_overrides={"conv.DwsConv": "EnumVariant"}))
        assert not back.guesses
        assert sorted(back.names) == ["conv.dconv.bias", "conv.dconv.weight", "conv.pconv.bias", "conv.pconv.weight"]
        net = nn.Module()
        net.conv = nn.Module()
        net.conv.dconv = nn.Conv2d(2, 2, 3, groups=2)
        net.conv.pconv = nn.Conv2d(2, 2, 1)
        net.load_state_dict({t.name: torch.from_numpy(np.array(t.read())) for t in back.tensors}, strict=True)
    x = torch.tensor([[[[0.7139797, 0.2676443, 0.990609, 0.28845078, 0.8749624],
                        [0.5059208, 0.23659128, 0.7570074, 0.23458993, 0.64705235],
                        [0.3556214, 0.4451828, 0.01930594, 0.26160914, 0.771317],
                        [0.37846136, 0.99802476, 0.9007942, 0.4765882, 0.16625845],
                        [0.8044811, 0.65517855, 0.17679012, 0.8247723, 0.8035509]],
                       [[0.9434475, 0.21972018, 0.417697, 0.49031407, 0.57302874],
                        [0.12054086, 0.14518881, 0.7720023, 0.38275403, 0.7442367],
                        [0.52850497, 0.6641724, 0.60994434, 0.6817997, 0.74785537],
                        [0.03694397, 0.7516757, 0.1484384, 0.12274551, 0.5304072],
                        [0.4147964, 0.793662, 0.21043217, 0.05550903, 0.8638844]]]])
    expected = torch.tensor([[[[0.77874625, 0.8590176, 0.8342835], [0.7730564, 0.73817325, 0.78292674],
                               [0.7107752, 0.7471872, 0.7332644]],
                              [[-0.44891885, -0.49027523, -0.3941707], [-0.43836114, -0.33961445, -0.3873115],
                               [-0.5811343, -0.34197026, -0.5350357]]]])
    with torch.no_grad():
        torch.testing.assert_close(net.conv.pconv(net.conv.dconv(x)), expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("fixture,kind,renamed", [
    ("batch_norm/batch_norm2d.pt", "BatchNorm",
     ["norm1.gamma", "norm1.beta", "norm1.running_mean", "norm1.running_var", "norm1.num_batches_tracked"]),
    ("layer_norm/layer_norm.pt", "LayerNorm", ["norm1.gamma", "norm1.beta"]),
    ("group_norm/group_norm.pt", "LayerNorm", ["norm1.gamma", "norm1.beta"]),
])
def test_norm_parameters_become_gamma_and_beta(fixture, kind, renamed):
    result = plan([load_pt(fixture)], Recipe(adapters=("pytorch-to-burn",)))
    assert result.names == renamed
    assert result.modules["norm1"].kind == kind
    assert not any(t.changes_bytes for t in result.tensors)


def test_group_norm_named_by_the_user_stays_a_group_norm():
    result = plan([load_pt("group_norm/group_norm.pt")],
                  Recipe(adapters=("pytorch-to-burn",), module_overrides={"norm1": "GroupNorm"}))
    assert result.modules["norm1"].overridden and result.names == ["norm1.gamma", "norm1.beta"]
    assert result.tensors[0].operations == ["rename norm1.weight -> norm1.gamma (pytorch-to-burn, GroupNorm)"]


def test_linear_weights_are_transposed_and_embeddings_left_alone(tmp_path):
    linear, embedding = load_pt("linear/linear.pt"), load_pt("embedding/embedding.pt")
    result = plan([linear, embedding], Recipe(adapters=("pytorch-to-burn",)))
    ops = {t.name: t.operations for t in result.tensors}
    assert ops == {"fc1.weight": ["transpose [3, 2] -> [2, 3]"], "fc1.bias": [], "fc2.weight": ["transpose [4, 3] -> [3, 4]"],
                   "embed.weight": []}
    with export_and_open(result, tmp_path, "out.bpk") as out:
        np.testing.assert_array_equal(out.read("fc2.weight"), linear.read("fc2.weight").T)
        np.testing.assert_array_equal(out.read("embed.weight"), embedding.read("embed.weight"))
        assert out.entry("fc2.weight").shape == (3, 4)


def test_conv_weights_keep_their_layout():
    for fixture in ("conv1d/conv1d.pt", "conv2d/conv2d.pt", "conv_transpose1d/conv_transpose1d.pt",
                    "conv_transpose2d/conv_transpose2d.pt"):
        result = plan([load_pt(fixture)], Recipe(adapters=("pytorch-to-burn",)))
        assert not any(t.operations for t in result.tensors), fixture
