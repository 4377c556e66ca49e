"""Suggestions that respect shapes: the PyTorch -> Burn cases of Burn's book, proven by planning before offered.

Sources are state dicts written by real torch; targets are Burnpack files named and shaped as Burn's modules
save them (Linear weights ``[in, out]``, BatchNorm ``gamma``/``beta``, no ``num_batches_tracked``,
``nn.Sequential``'s indices contiguous), as a template saved from the Burn model would be.

Only the eight most voted name rules are proven, and a top-level key comes only from a rule that strips a
prefix (README "Suggestions": the front-running name patterns are planned and checked; a stripped PyTorch branch
is also offered as the checkpoint's top-level key) -> ``test_a_key_is_offered_only_from_a_front_running_strip_rule``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import torch
from torch import nn

from engine import ArrayStore, Store, export, open_store
from engine.surgery import Recipe, RemapRule, align, plan
from engine.surgery.suggestions import (ADAPTER, CAST, LINEAR, RENAME, TOP_LEVEL_KEY, Change, Suggestion, fit,
                                    name_votes, suggest)
from engine.surgery.suggestions import NAME_CANDIDATES


class Mnist(nn.Module):
    """Burn's examples/import-model-weights/weights/mnist_train_export.py (v0.21.0), the book's import example."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.conv3 = nn.Conv2d(16, 24, 3)
        self.norm1 = nn.BatchNorm2d(24)
        self.fc1 = nn.Linear(24 * 22 * 22, 32)
        self.fc2 = nn.Linear(32, 10)
        self.norm2 = nn.BatchNorm1d(10)


class Mlp(nn.Module):
    """The book's non-contiguous indices: an ``nn.Sequential`` of Linears with ReLUs between them."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3))


class NormNet(nn.Module):
    """burn-store's pytorch-tests/tests/batch_norm: a convolution and a BatchNorm2d."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 5, 3)
        self.norm1 = nn.BatchNorm2d(5)


def state(model: nn.Module) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return model.state_dict()


def burn_named(sd: dict[str, torch.Tensor], rename: Callable[[str], str] = lambda n: n) -> dict[str, np.ndarray]:
    """What the Burn model saves: Linear weights transposed, norms' gamma/beta, Sequential renumbered, no counter."""
    norms = {name.rpartition(".")[0] for name in sd if name.endswith("running_mean")}
    linears = {name.rpartition(".")[0] for name, t in sd.items() if name.endswith(".weight") and t.ndim == 2}
    sequential = {name: i for i, name in enumerate(sorted({n.rpartition(".")[0] for n in sd if n.startswith("fc.")}))}
    out = {}
    for name, tensor in sd.items():
        module, _, leaf = name.rpartition(".")
        if leaf == "num_batches_tracked":
            continue
        array = tensor.numpy()
        if module in linears and leaf == "weight":
            array = array.T.copy()
        if module in norms:
            leaf = {"weight": "gamma", "bias": "beta"}.get(leaf, leaf)
        if module in sequential:
            module = f"fc.{sequential[module]}"
        out[rename(f"{module}.{leaf}")] = array
    return out


def write_pt(path: Path, sd: dict[str, torch.Tensor] | dict[str, object]) -> Store:
    torch.save(sd, path)
    return open_store(path)


def write_bpk(path: Path, arrays: dict[str, np.ndarray]) -> Store:
    export(ArrayStore(arrays).entries, path, overwrite=True)
    return open_store(path)


def loads(stores: list[Store], recipe: Recipe, target: Store) -> bool:
    return align(plan(stores, recipe, template=target), target).ok


def only(suggestion: Suggestion) -> Change:
    """The one change of a suggestion that is a single change."""
    (change,) = suggestion.changes
    return change


def test_mnist_from_pytorch_gets_the_adapter_first_with_the_pairs_it_makes(tmp_path):
    sd = state(Mnist())
    source, target = write_pt(tmp_path / "mnist.pt", sd), write_bpk(tmp_path / "mnist.bpk", burn_named(sd))
    found = suggest([source], Recipe(), target, template=target)
    assert len(found) == 1 and only(found[0]).kind == ADAPTER and only(found[0]).adapter == "pytorch-to-burn"
    pairs = {(p.source, p.target, p.shape) for p in found[0].pairs}
    assert pairs == {("norm1.weight", "norm1.gamma", (24,)), ("norm1.bias", "norm1.beta", (24,)),
                     ("norm2.weight", "norm2.gamma", (10,)), ("norm2.bias", "norm2.beta", (10,)),
                     ("fc1.weight", "fc1.weight", (11616, 32)), ("fc2.weight", "fc2.weight", (32, 10))}
    assert found[0].line() == ("suggest: add the pytorch-to-burn adapter (Linear weights, norm parameters): fixes 6 "
                               "of 6 missing or mismatched: adapter pytorch-to-burn")
    assert loads([source], found[0].apply(Recipe()), target)
    assert suggest([source], found[0].apply(Recipe()), target, template=target) == []


def test_a_name_match_that_shapes_contradict_is_never_suggested(tmp_path):
    """The reported bug: MNIST's conv1 [8, 1, 3, 3] was offered as fc3 because the rest of the names agree."""
    sd = state(Mnist())
    arrays = burn_named(sd)
    del arrays["conv1.weight"], arrays["conv1.bias"]
    arrays["fc3.weight"], arrays["fc3.bias"] = np.zeros((10, 10), np.float32), np.zeros(10, np.float32)
    source, target = write_pt(tmp_path / "mnist.pt", sd), write_bpk(tmp_path / "burn.bpk", arrays)
    recipe = Recipe(adapters=("pytorch-to-burn",))
    report = align(plan([source], recipe, template=target), target)
    assert sorted(report.missing) == ["fc3.bias", "fc3.weight"] and "conv1.weight" in report.unused
    by_name = name_votes(report.unused, report.missing)
    assert (r"^conv1\.", "fc3.", "rename the prefix conv1. to fc3.") in by_name  # the names alone do pair them
    assert suggest([source], recipe, target, template=target) == []


def test_a_sequential_with_relus_needs_the_adapter_and_contiguous_indices_together(tmp_path):
    sd = state(Mlp())
    source, target = write_pt(tmp_path / "mlp.pt", sd), write_bpk(tmp_path / "mlp.bpk", burn_named(sd))
    (both,) = suggest([source], Recipe(), target, template=target)  # one chain: each alone loads a part
    assert [c.adapter for c in both.changes] == ["contiguous-indices", "pytorch-to-burn"]
    renumber, transpose = both.steps  # renumbered, fc.2's [8, 12] meets fc.1's [12, 8]: the adapter settles it
    assert {(p.source, p.target) for p in renumber.pairs} == {("fc.2.bias", "fc.1.bias"), ("fc.4.bias", "fc.2.bias")}
    assert {(p.source, p.target, p.shape) for p in transpose.pairs} == {
        ("fc.0.weight", "fc.0.weight", (6, 12)), ("fc.2.weight", "fc.1.weight", (12, 8)),
        ("fc.4.weight", "fc.2.weight", (8, 3))}
    assert set(both.pairs) == set(renumber.pairs) | set(transpose.pairs) and both.fixes == both.missing == 5
    assert loads([source], both.apply(Recipe()), target)
    made = fit([source], Recipe(), target, template=target)
    assert [s.change.adapter for s in made.steps] == ["contiguous-indices", "pytorch-to-burn"]
    assert made.recipe.adapters == ("contiguous-indices", "pytorch-to-burn") and made.report.ok


def test_a_batchnorm_net_gets_gamma_and_beta_through_the_adapter(tmp_path):
    sd = state(NormNet())
    source, target = write_pt(tmp_path / "bn.pt", sd), write_bpk(tmp_path / "bn.bpk", burn_named(sd))
    (found,) = suggest([source], Recipe(), target, template=target)
    assert only(found).adapter == "pytorch-to-burn"
    assert {(p.source, p.target) for p in found.pairs} == {("norm1.weight", "norm1.gamma"), ("norm1.bias", "norm1.beta")}
    result = plan([source], found.apply(Recipe()), template=target)
    assert align(result, target).unused == ["norm1.num_batches_tracked"]  # Burn has no field for it: left unused


def test_a_prefix_family_becomes_one_rename_only_where_the_shapes_agree(tmp_path):
    sd = state(Mnist())
    source = write_pt(tmp_path / "mnist.pt", sd)
    target = write_bpk(tmp_path / "wrapped.bpk", burn_named(sd, lambda n: f"model.{n}"))
    recipe = Recipe(adapters=("pytorch-to-burn",))
    (found,) = suggest([source], recipe, target, template=target)
    assert only(found).kind == RENAME and only(found).remap == RemapRule("^", "model.")
    assert found.fixes == 18 and ("conv1.weight", "model.conv1.weight", (8, 1, 3, 3)) in \
        {(p.source, p.target, p.shape) for p in found.pairs}
    assert loads([source], found.apply(recipe), target)


def test_a_renamed_segment_with_one_contradicting_shape_is_not_offered(tmp_path):
    arrays = {"norm1.weight": np.ones(4, np.float32), "norm1.bias": np.ones(4, np.float32),
              "norm2.weight": np.ones(6, np.float32), "norm2.bias": np.ones(6, np.float32)}
    source = write_bpk(tmp_path / "a.bpk", arrays)
    good = write_bpk(tmp_path / "good.bpk", {k.replace("norm", "bn"): v for k, v in arrays.items()})
    (found,) = suggest([source], Recipe(), good)
    assert found.label == "rename norm to bn: fixes 4 of 4 missing or mismatched"
    bad = write_bpk(tmp_path / "bad.bpk", {**{k.replace("norm", "bn"): v for k, v in arrays.items()},
                                           "bn2.bias": np.ones(7, np.float32)})
    (narrower,) = suggest([source], Recipe(), bad)  # norm2 -> bn2 would pair [6] with [7]: only norm1 is offered
    assert narrower.label == "rename the prefix norm1. to bn1.: fixes 2 of 4 missing or mismatched"
    assert {p.target for p in narrower.pairs} == {"bn1.weight", "bn1.bias"}


def test_a_transposed_module_the_adapter_misses_is_settled_as_linear(tmp_path):
    source = write_bpk(tmp_path / "a.safetensors".replace("safetensors", "bpk"),
                       {"embed.weight": np.zeros((4, 3), np.float32)})  # no bias: the name says Embedding
    target = write_bpk(tmp_path / "t.bpk", {"embed.weight": np.zeros((3, 4), np.float32)})
    recipe = Recipe(adapters=("pytorch-to-burn",))
    (found,) = suggest([source], recipe, target)
    assert only(found).kind == LINEAR and only(found).linear_modules == ("embed",)
    assert found.apply(recipe).module_overrides == {"embed": "Linear"} and loads([source], found.apply(recipe), target)


def test_a_dtype_the_target_has_everywhere_becomes_a_cast(tmp_path):
    source = write_bpk(tmp_path / "a.bpk", {"w": np.zeros(3, np.float32), "b": np.zeros(2, np.float32),
                                            "steps": np.zeros(1, np.int64)})
    target = write_bpk(tmp_path / "t.bpk", {"w": np.zeros(3, np.float16), "b": np.zeros(2, np.float16),
                                            "steps": np.zeros(1, np.int64)})
    (found,) = suggest([source], Recipe(), target)
    assert only(found).kind == CAST and only(found).cast.to == "F16" and found.dtypes_fixed == 2
    assert found.line() == "suggest: cast float tensors to F16: fixes 2 dtype difference(s): cast F16"
    assert not align(plan([source], found.apply(Recipe())), target).dtype_differences


def test_a_checkpoint_branch_is_offered_as_its_top_level_key(tmp_path):
    sd = state(NormNet())
    source = write_pt(tmp_path / "ck.pt", {"model": sd, "optimizer": {"lr": torch.tensor(0.1)}})
    target = write_bpk(tmp_path / "bn.bpk", {k: v.numpy() for k, v in sd.items()})

    def reopen(store: Store, key: str) -> Store:
        return open_store(store.path, top_level_key=key)

    found = suggest([source], Recipe(), target, reopen=reopen)
    assert only(found[0]).kind == TOP_LEVEL_KEY and only(found[0]).top_level_key == "model"
    assert found[0].fixes == len(sd)
    assert len(found) == 1  # stripping the prefix pairs the same and leaves the optimizer's lr behind: the key is meant
    made = fit([source], Recipe(), target, reopen=reopen)
    assert made.recipe.top_level_key == "model" and [s.change.kind for s in made.steps] == [TOP_LEVEL_KEY]
    assert suggest([source], Recipe(), target) and all(c.kind != TOP_LEVEL_KEY
                                                        for s in suggest([source], Recipe(), target) for c in s.changes)


NAMES = ["conv1.weight", "conv1.bias", "fc.weight", "fc.bias", "norm1.weight"]


@pytest.mark.parametrize(("unused", "missing", "rule"), [
    (NAMES, ["model." + n for n in NAMES], ("^", "model.")),
    (["model." + n for n in NAMES], NAMES, (r"^model\.", "")),
    (["backbone." + n for n in NAMES], ["encoder." + n for n in NAMES], (r"^backbone\.", "encoder.")),
])
def test_a_prefix_added_stripped_or_replaced_is_the_name_pattern_most_pairs_vote_for(unused, missing, rule):
    (pattern, replacement, _), votes = name_votes(unused, missing).most_common(1)[0]
    assert (pattern, replacement) == rule and votes == len(NAMES)


def test_names_that_line_up_nowhere_vote_for_nothing():
    assert not name_votes(["a.x", "b.y"], ["c.z"]) and not name_votes([], ["c.z"])


def test_a_key_is_offered_only_from_a_front_running_strip_rule(tmp_path):
    # under key "a": x.w (the target's x.w: one vote to strip "a.") and five p*.w (the target's b.p*.w: "a." -> "b.");
    # eight more keys c0..c7 of two tensors each, whose many "cN." -> "dM." rules push the strip rule past the eight
    checkpoint = {"a": {"x.w": torch.zeros(2), **{f"p{i}.w": torch.zeros(2) for i in range(5)}}}
    checkpoint |= {f"c{j}": {"q.w": torch.zeros(2), "r.w": torch.zeros(2)} for j in range(8)}
    torch.save(checkpoint, tmp_path / "ck.pt")
    target = {"x.w": np.zeros(2, np.float32), **{f"b.p{i}.w": np.zeros(2, np.float32) for i in range(5)}}
    target |= {f"d{j}.{k}.w": np.zeros(2, np.float32) for j in range(8) for k in "qr"}
    export(ArrayStore(target).entries, tmp_path / "t.bpk")

    def reopen(store: Store, key: str) -> Store:
        return open_store(store.path, top_level_key=key)

    with open_store(tmp_path / "ck.pt") as source, open_store(tmp_path / "t.bpk") as burn:
        report = align(plan([source], Recipe()), burn)
        votes = name_votes(report.unused, report.missing)
        front = [rule for rule, _ in votes.most_common(NAME_CANDIDATES)]
        strip = ("^a\\.", "", "strip the prefix a.")
        assert strip in votes and strip not in front and ("^a\\.", "b.", "rename the prefix a. to b.") in front
        assert [s.line() for s in suggest([source], Recipe(), burn, reopen=reopen, limit=20)] == [  # no key 'a'
            "suggest: rename c to d + rename the prefix a. to b.: fixes 21 of 22 missing or mismatched: "
            "remap '(^|\\.)c(\\d*)(\\.|$)' -> '${1}d${2}${3}'; remap '^a\\.' -> 'b.'"]
