"""The bundled sample CNN's weights saved the ways training code wraps them, each by real torch.

- Lightning: ``Trainer.save_checkpoint``'s keys (its ``_dump_checkpoint``) around the LightningModule's state
  dict, whose network sits under the attribute ``model`` (``state_dict.model.conv1.weight``), with a real
  Adam state after a step (lr 0: the weights stay the sample's), loop counters and hyper-parameters;
- DataParallel: ``nn.DataParallel(model).state_dict()`` (``module.conv1.weight``);
- torch.compile: ``torch.compile(model).state_dict()`` (``_orig_mod.conv1.weight``), compiled lazily, so
  saving needs no compiler.

Each holds exactly ``resources/samples/sample_cnn.pt``'s tensors, so against ``sample_cnn.bpk`` (what the
Burn model saves) every tensor can be made to load, with the sample's own values.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from torch import nn

from tests.helpers.samples import SAMPLES

SAMPLE_PT = SAMPLES / "sample_cnn.pt"
SAMPLE_BPK = SAMPLES / "sample_cnn.bpk"


def sample_model() -> nn.Module:
    """The torch module the sample was saved from (resources/samples/make_samples.py), with the sample's weights."""
    spec = importlib.util.spec_from_file_location("make_samples", SAMPLES / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.SampleCnn()
    model.load_state_dict(torch.load(SAMPLE_PT))
    return model.eval()


def lightning_checkpoint(path: Path) -> Path:
    module = nn.Module()
    module.model = sample_model()
    optimizer = torch.optim.Adam(module.parameters(), lr=0.0)
    module.model(torch.randn(2, 1, 28, 28, generator=torch.Generator().manual_seed(0))).square().mean().backward()
    optimizer.step()
    torch.save({"epoch": 3, "global_step": 120, "pytorch-lightning_version": "2.4.0",
                "state_dict": module.state_dict(),
                "loops": {"fit_loop": {"epoch_progress": {"total": {"ready": 4, "completed": 3}}}},
                "callbacks": {}, "optimizer_states": [optimizer.state_dict()], "lr_schedulers": [],
                "hparams_name": "kwargs", "hyper_parameters": {"lr": 1e-3, "channels": 16}}, path)
    return path


def data_parallel_checkpoint(path: Path) -> Path:
    torch.save(nn.DataParallel(sample_model()).state_dict(), path)
    return path


def compiled_checkpoint(path: Path) -> Path:
    torch.save(torch.compile(sample_model()).state_dict(), path)
    return path
