"""Burn's own models read as templates: the names and shapes Burn's modules save, and real torch checkpoints that
load into them; a wrong name here would make a recipe fitted to a Burn model fail when Burn loads it.

The sources are tests/fixtures/burn-rust-models (copied from tracel-ai/burn at the tags their folders name). The
expected names follow Burn's module code: a struct field's name, then the nn module's own fields (Conv2d
``weight``/``bias``, conv2d.rs:53-68; BatchNorm ``gamma``/``beta``/``running_mean``/``running_var``, batch.rs:44-57;
Linear ``weight`` ``[d_input, d_output]``/``bias``, linear.rs:47-54, all at v0.21.0); a ``Vec`` adds its index,
an enum its variant, parameter-free modules (pools, dropout, activations) nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from engine import BurnVersion, open_store
from engine.cli import main
from engine.formats.rust_model import RUNTIME_DIM, open_rust_template

from tests.helpers.engine_rust_sources import BURN_MODELS, BURN_PT

R = RUNTIME_DIM
GUIDE = [("conv1.weight", (8, 1, 3, 3)), ("conv1.bias", (8,)), ("conv2.weight", (16, 8, 3, 3)), ("conv2.bias", (16,)),
         ("linear1.weight", (16 * 8 * 8, R)), ("linear1.bias", (R,)), ("linear2.weight", (R, R)), ("linear2.bias", (R,))]
NORM = ("gamma", "beta", "running_mean", "running_var")
MNIST = [("conv1.conv.weight", (64, 1, 3, 3)), ("conv1.conv.bias", (64,)), *((f"conv1.norm.{p}", (64,)) for p in NORM),
         ("conv2.conv.weight", (64, 64, 3, 3)), ("conv2.conv.bias", (64,)), *((f"conv2.norm.{p}", (64,)) for p in NORM),
         ("fc1.weight", (64 * 5 * 5, 128)), ("fc1.bias", (128,)), ("fc2.weight", (128, 128)), ("fc2.bias", (128,)),
         ("fc3.weight", (128, 10)), ("fc3.bias", (10,))]
COMPLEX_NESTED = [("conv_blocks.0.conv.weight", (4, 2, 3, 2)), ("conv_blocks.0.conv.bias", (4,)),
                  *((f"conv_blocks.0.norm.{p}", (4,)) for p in NORM),
                  ("conv_blocks.1.conv.weight", (6, 4, 3, 2)), ("conv_blocks.1.conv.bias", (6,)),
                  *((f"conv_blocks.1.norm.{p}", (6,)) for p in NORM), *((f"norm1.{p}", (6,)) for p in NORM),
                  ("fc1.weight", (120, 12)), ("fc1.bias", (12,)), ("fc2.weight", (12, 10)), ("fc2.bias", (10,))]


def names_shapes(template) -> list[tuple[str, tuple[int, ...]]]:
    return [(e.name, e.shape) for e in template.entries]


@pytest.mark.parametrize("tag, version, rust_type", [("v0.21.0", BurnVersion.V0_21, "Model<B>"),
                                                     ("v0.22.0-pre.2", BurnVersion.V0_22, "Model")])
def test_the_guide_model_saves_its_conv_and_linear_tensors_with_hidden_sizes_set_at_run_time(tag, version, rust_type):
    with open_rust_template(BURN_MODELS / f"guide-{tag}" / "model.rs", version) as template:
        assert names_shapes(template) == GUIDE  # pool, dropout and relu add nothing
        assert [e.dtype.name for e in template.entries] == ["F32"] * 8
        assert template.model.rust_type == rust_type and template.model.root.line == 11
        assert template.declared_kinds("conv1") == "Conv2d" and template.declared_kinds("linear2") == "Linear"
        assert template.entry("linear1.weight").nbytes == 0 and template.entry("conv1.bias").nbytes == 32
        assert not template.has_values and template.description == f"Rust source ({rust_type}, Burn {version.value})"


def test_the_mnist_model_is_followed_through_convblock_new_a_local_and_a_const():
    # ConvBlock::new([1, 64], ..) sets the conv's channels and the norm's size (channels[1]); fc1 takes
    # `let hidden_size = 64 * 5 * 5`, fc3 the const NUM_CLASSES; `pool: Option<MaxPool2d>` saves nothing
    with open_rust_template(BURN_MODELS / "mnist-v0.21.0" / "model.rs", BurnVersion.V0_21) as template:
        assert names_shapes(template) == MNIST


def test_burns_complex_nested_net_is_named_among_three_top_level_modules():
    with open_rust_template(f"{BURN_MODELS / 'complex_nested-v0.21.0' / 'mod.rs'}::Net", BurnVersion.V0_21) as template:
        assert names_shapes(template) == COMPLEX_NESTED  # vec![ConvBlock {..}, ConvBlock {..}]: two, each its own
        assert template.model.root.name == "Net" and template.path.name == "mod.rs::Net"


def test_burns_enum_model_built_two_ways_holds_both_variants_as_optional():
    with open_rust_template(BURN_MODELS / "enum_module-v0.21.0" / "mod.rs", BurnVersion.V0_21) as template:
        assert names_shapes(template) == [("conv.DwsConv.dconv.weight", (2, 1, 3, 3)), ("conv.DwsConv.dconv.bias", (2,)),
                                          ("conv.DwsConv.pconv.weight", (2, 2, 1, 1)), ("conv.DwsConv.pconv.bias", (2,)),
                                          ("conv.Conv.weight", (2, 2, 3, 3)), ("conv.Conv.bias", (2,))]
        assert all(template.is_optional(e.name) for e in template.entries)  # init_dws_conv or init_conv: run time


def convert(*args: object) -> int:
    return main(["convert", *map(str, args)])


def test_burns_own_complex_nested_checkpoint_loads_into_its_rust_model(tmp_path: Path, capsys):
    out = tmp_path / "net.bpk"
    template = f"{BURN_MODELS / 'complex_nested-v0.21.0' / 'mod.rs'}::Net"
    assert convert(BURN_PT / "complex_nested" / "complex_nested.pt", out, "--template", template,
                   "--adapter", "pytorch-to-burn", "--burn-version", "0.21") == 0
    assert capsys.readouterr().out.splitlines() == [
        "applied 20, missing 0, unused 3, shape mismatches 0, dtype differences 0",
        *(f"  unused {m}.num_batches_tracked" for m in ("conv_blocks.0.norm", "conv_blocks.1.norm", "norm1"))]
    with open_store(out) as written:
        assert {n: written.entry(n).shape for n, _ in COMPLEX_NESTED} == dict(COMPLEX_NESTED)


@pytest.mark.parametrize("checkpoint, loaded, absent", [
    ("enum_depthwise_true.pt", ["conv.DwsConv.dconv.weight", "conv.DwsConv.dconv.bias", "conv.DwsConv.pconv.weight",
                                "conv.DwsConv.pconv.bias"], ["conv.Conv.weight", "conv.Conv.bias"]),
    ("enum_depthwise_false.pt", ["conv.Conv.weight", "conv.Conv.bias"],
     ["conv.DwsConv.dconv.weight", "conv.DwsConv.dconv.bias", "conv.DwsConv.pconv.weight", "conv.DwsConv.pconv.bias"]),
])
def test_burns_enum_checkpoints_load_into_the_variant_their_names_hold(checkpoint, loaded, absent, tmp_path, capsys):
    out = tmp_path / "net.safetensors"
    assert convert(BURN_PT / "enum_module" / checkpoint, out, "--template", BURN_MODELS / "enum_module-v0.21.0" / "mod.rs",
                   "--burn-version", "0.21") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"applied {len(loaded)}, missing 0, unused 0, shape mismatches 0, dtype differences 0, "
                        f"present at run time or not {len(absent)}")
    assert lines[1:] == [f"  present at run time or not {name}" for name in absent]
    with open_store(out) as written:
        assert sorted(written.names) == sorted(loaded)  # the template's variant put into each name


class ConvBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3)
        self.norm = nn.BatchNorm2d(c_out)


class TorchMnist(nn.Module):
    """examples/mnist's Model as torch spells it (torch's Linear weight is [out, in], its norm weight/bias)."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = ConvBlock(1, 64), ConvBlock(64, 64)
        self.fc1, self.fc2, self.fc3 = nn.Linear(1600, 128), nn.Linear(128, 128), nn.Linear(128, 10)


def test_a_torch_checkpoint_of_the_mnist_model_loads_every_tensor_into_its_rust_source(tmp_path: Path, capsys):
    torch.manual_seed(0)
    net = TorchMnist()
    net.conv1.norm.running_mean.uniform_()  # values that tell the four norm tensors apart
    source, out = tmp_path / "mnist.pt", tmp_path / "mnist.bpk"
    torch.save(net.state_dict(), source)
    assert convert(source, out, "--template", BURN_MODELS / "mnist-v0.21.0" / "model.rs", "--adapter",
                   "pytorch-to-burn", "--burn-version", "0.21") == 0
    report = capsys.readouterr().out.splitlines()
    assert report[0] == "applied 18, missing 0, unused 2, shape mismatches 0, dtype differences 0"
    with open_store(out) as written:
        assert [(n, written.entry(n).shape) for n, _ in MNIST] == MNIST
        np.testing.assert_array_equal(written.read("fc1.weight"), net.fc1.weight.detach().numpy().T)
        np.testing.assert_array_equal(written.read("conv2.conv.weight"), net.conv2.conv.weight.detach().numpy())
        np.testing.assert_array_equal(written.read("conv1.norm.running_mean"), net.conv1.norm.running_mean.numpy())
        np.testing.assert_array_equal(written.read("conv1.norm.gamma"), net.conv1.norm.weight.detach().numpy())
