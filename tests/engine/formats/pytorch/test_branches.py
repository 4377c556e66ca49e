"""A training checkpoint's top-level branches, each named by what it looks like, on files
written by real torch: a real module, a real optimizer after a real step, an EMA copy.

Promises -> tests:
- Lightning's branches: the weights, Adam's state under ``state.N.``, an EMA callback's copy, with their counts
  and bytes -> ``test_a_lightning_checkpoint_names_each_branch_by_what_it_holds``
- research code's ``{"model", "optimizer", "ema"}`` with SGD's momentum -> ``test_a_plain_training_dict_...``
- one branch, a plain state_dict, a key already chosen, another format: nothing to tell -> ``test_nothing_...``
- an EMA is a name saying so over the weights' names, not any word holding "ema" -> ``test_an_ema_...``
- a key holding dots, a whole-number key: named so ``--top-level-key`` reads them -> ``test_keys_...``
- a conversion's kept tensors alone -> ``test_only_the_entries_given_are_judged``
- hostile names (thousands of dots) cost what the rest of the file costs -> ``test_names_of_thousands_of_dots_...``
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from engine import CheckpointBranches, checkpoint_branches, open_store
from engine.formats.pytorch.branches import (
    CALLBACKS,
    EMA,
    MODEL_WEIGHTS,
    OPTIMIZER_STATE,
    OTHER,
    Branch,
)
from safetensors.numpy import save_file
from tests.helpers.pytorch_training_checkpoints import (
    lightning_checkpoint,
    nbytes,
    optimizer_tensors,
    plain_training_checkpoint,
    trained,
)
from tests.helpers import hard_child as child


def branches_of(path: Path, **options) -> CheckpointBranches | None:
    with open_store(path, **options) as store:
        return checkpoint_branches(store)


def test_a_lightning_checkpoint_names_each_branch_by_what_it_holds(tmp_path):
    run = lightning_checkpoint(tmp_path / "run.ckpt")
    found = branches_of(tmp_path / "run.ckpt")
    adam = optimizer_tensors(run.optimizer)
    assert found == CheckpointBranches((
        Branch("state_dict", MODEL_WEIGHTS, len(run.model), nbytes(run.model)),
        Branch("optimizer_states", OPTIMIZER_STATE, len(adam), nbytes(adam), ("step", "exp_avg", "exp_avg_sq")),
        Branch("callbacks", EMA, len(run.ema), nbytes(run.ema))))
    assert len(adam) == 18  # step, exp_avg and exp_avg_sq of six parameters: Adam's real state after a step
    assert found.weights.key == "state_dict"
    assert [b.key for b in found.besides_weights] == ["optimizer_states", "callbacks"]
    assert found.branches[1].describe() == "optimizer state (step, exp_avg, exp_avg_sq)"
    assert found.branches[1].amount() == "18 tensors, 616 B"


def test_a_plain_training_dict_names_sgds_momentum_and_the_ema(tmp_path):
    run = plain_training_checkpoint(tmp_path / "run.pt")
    found = branches_of(tmp_path / "run.pt")
    sgd = optimizer_tensors(run.optimizer)
    assert found.branches == (Branch("model", MODEL_WEIGHTS, 9, nbytes(run.model)),
                              Branch("optimizer", OPTIMIZER_STATE, 6, nbytes(sgd), ("momentum_buffer",)),
                              Branch("ema", EMA, 9, nbytes(run.ema)))


def test_nothing_to_tell_for_one_branch_a_plain_state_dict_a_chosen_key_or_another_format(tmp_path):
    run = trained()
    torch.save(run.model, tmp_path / "plain.pt")
    torch.save({"state_dict": run.model, "epoch": 3, "hparams": {"lr": 0.1}}, tmp_path / "one.ckpt")
    lightning_checkpoint(tmp_path / "run.ckpt")
    save_file({"a.w": np.ones(2, np.float32), "b.w": np.ones(2, np.float32)}, str(tmp_path / "two.safetensors"))
    assert branches_of(tmp_path / "plain.pt") is None
    assert branches_of(tmp_path / "one.ckpt") is None
    assert branches_of(tmp_path / "run.ckpt", top_level_key="state_dict") is None
    assert branches_of(tmp_path / "two.safetensors") is None


@pytest.mark.parametrize("key, kind", [("ema", EMA), ("ModelEMA", EMA), ("model_ema", EMA), ("shadow", EMA),
                                       ("schema", OTHER), ("cinema", OTHER), ("callbacks", CALLBACKS)])
def test_an_ema_is_a_name_saying_so_over_the_weights_names(tmp_path, key, kind):
    run = trained()
    torch.save({"model": run.model, key: {name: t.clone() for name, t in run.model.items()}}, tmp_path / "c.pt")
    assert [(b.key, b.kind) for b in branches_of(tmp_path / "c.pt").branches] == [("model", MODEL_WEIGHTS),
                                                                                   (key, kind)]


def test_an_ema_named_so_but_not_by_the_weights_names_is_other(tmp_path):
    run = trained()
    torch.save({"model": run.model, "ema": {"shadow_params": [t.clone() for t in run.model.values()]}},
               tmp_path / "c.pt")
    assert [(b.key, b.kind) for b in branches_of(tmp_path / "c.pt").branches] == [("model", MODEL_WEIGHTS),
                                                                                   ("ema", OTHER)]


def test_keys_holding_dots_or_whole_numbers_are_named_as_top_level_key_reads_them(tmp_path):
    run = trained()
    torch.save({"model": run.model, "model.ema": run.ema}, tmp_path / "dotted.pt")
    assert [(b.key, b.kind, b.tensors) for b in branches_of(tmp_path / "dotted.pt").branches] == [
        ("model", MODEL_WEIGHTS, 9), ("model.ema", EMA, 9)]
    torch.save({0: run.model, 1: run.optimizer}, tmp_path / "numbered.pt")
    found = branches_of(tmp_path / "numbered.pt")
    assert [(b.key, b.kind) for b in found.branches] == [("0", MODEL_WEIGHTS), ("1", OPTIMIZER_STATE)]
    with open_store(tmp_path / "numbered.pt", top_level_key=found.weights.key) as weights:
        assert weights.names == list(run.model)


def test_only_the_entries_given_are_judged(tmp_path):
    lightning_checkpoint(tmp_path / "run.ckpt")
    with open_store(tmp_path / "run.ckpt") as store:
        kept = [e for e in store.entries if not e.name.startswith("callbacks.")]
        assert [b.key for b in checkpoint_branches(store, kept).branches] == ["state_dict", "optimizer_states"]
        assert checkpoint_branches(store, kept[:9]) is None  # the weights alone: one branch


@pytest.mark.child
def test_names_of_thousands_of_dots_are_judged_within_the_limits(tmp_path):
    dots = "." * 5_000  # names past the prefixes tried (MAX_PREFIXES), under keys of 60 dots within them
    torch.save({f"k{i}{'.' * 60}": {f"{dots}w": torch.ones(1), "ema": {f"{dots}w": torch.ones(1)}}
                for i in range(300)}, tmp_path / "dots.pt")
    run = child.cli("inspect", tmp_path / "dots.pt")
    assert run.status == 0, run.describe()
    assert "the tensors sit under 300 top-level keys:" in run.output
    assert run.within_limits(), run.describe()
