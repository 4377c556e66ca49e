"""Training checkpoints written by real torch: a real module, a real optimizer after a real step, an EMA copy.

Shared by the engine, command-line and window tests of a checkpoint's top-level branches.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class Trained:
    """What a checkpoint was saved from, to check the reader's counts and bytes against."""

    model: dict[str, torch.Tensor]
    optimizer: dict
    ema: dict[str, torch.Tensor]


def trained(optimizer: str = "adam") -> Trained:
    """A Linear-BatchNorm-Linear model after one step of Adam (or SGD with momentum), and its EMA copy."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
    step = (torch.optim.Adam(model.parameters(), lr=0.01) if optimizer == "adam"
            else torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    ema = copy.deepcopy(model)
    model(torch.randn(5, 4)).sum().backward()
    step.step()
    return Trained(model.state_dict(), step.state_dict(), ema.state_dict())


def lightning_checkpoint(path: Path) -> Trained:
    """Lightning's layout: weights under ``state_dict``, a list of optimizer states, an EMA callback's copy."""
    run = trained()
    torch.save({"state_dict": run.model, "optimizer_states": [run.optimizer], "epoch": 3, "global_step": 12,
                "callbacks": {"EMA": {"ema_state_dict": run.ema, "decay": 0.999}},
                "lr_schedulers": [{"last_epoch": 3, "base_lrs": [0.01]}]}, path)
    return run


def plain_training_checkpoint(path: Path) -> Trained:
    """Research code's layout: ``{"model": ..., "optimizer": ..., "ema": ...}`` with SGD's momentum."""
    run = trained("sgd")
    torch.save({"model": run.model, "optimizer": run.optimizer, "ema": run.ema, "epoch": 7}, path)
    return run


def nbytes(tensors: dict[str, torch.Tensor] | list[torch.Tensor]) -> int:
    values = tensors.values() if isinstance(tensors, dict) else tensors
    return sum(t.numel() * t.element_size() for t in values)


def optimizer_tensors(state: dict) -> list[torch.Tensor]:
    """The tensors of an optimizer's ``state_dict()``: its per-parameter state."""
    return [value for per_parameter in state["state"].values() for value in per_parameter.values()
            if isinstance(value, torch.Tensor)]
