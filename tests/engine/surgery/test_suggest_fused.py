"""A fused-gate split is suggested where the evidence is: PyTorch's fused LSTM/GRU/attention tensors in one
file and Burn's gate Linears in the other (and the fuse, the other way round), proven by planning first."""

from __future__ import annotations

import numpy as np
import torch

from engine import ArrayStore, export, open_store
from engine.surgery import Recipe, align, plan
from engine.surgery.suggestions import ADAPTER, FUSED, suggest

from tests.helpers.surgery_fused_targets import burn_named, torch_state


def _files(tmp_path, hidden: int = 4):
    sd = torch_state()
    torch.save(sd, tmp_path / "model.pt")
    export(ArrayStore(burn_named(torch_state(hidden))).entries, tmp_path / "burn.bpk")
    return open_store(tmp_path / "model.pt"), open_store(tmp_path / "burn.bpk"), sd


def test_pytorch_fused_modules_against_burn_gates_get_a_split_with_the_pairs_it_makes(tmp_path):
    source, target, sd = _files(tmp_path)
    with source, target:
        found = suggest([source], Recipe(), target, template=target)
        assert [[(c.kind, c.adapter) for c in s.changes] for s in found] == [[(FUSED, "pytorch-to-burn")]]
        assert found[0].description == ("split the fused LSTM gates of lstm, GRU gates of gru, attention q/k/v of "
                                        "attn (the pytorch-to-burn adapter)")
        pairs = {(p.source, p.target, p.shape) for p in found[0].pairs}
        assert ("lstm.weight_ih_l0", "lstm.forget_gate.input_transform.weight", (3, 4)) in pairs
        assert ("gru.bias_hh_l0", "gru.new_gate.hidden_transform.bias", (3,)) in pairs
        assert ("attn.in_proj_weight", "attn.value.weight", (4, 4)) in pairs
        assert ("attn.out_proj.weight", "attn.output.weight", (4, 4)) in pairs
        assert {p[1] for p in pairs} == {e.name for e in target.entries} - {"head.bias"}  # the one that loaded
        result = plan([source], found[0].apply(Recipe()), template=target)
        assert align(result, target).ok
        by_name = {t.name: t for t in result.tensors}
        np.testing.assert_array_equal(by_name["lstm.cell_gate.hidden_transform.weight"].read(),
                                      sd["lstm.weight_hh_l0"].numpy()[8:12].T)


def test_burn_gates_against_pytorch_fused_modules_get_the_fuse(tmp_path):
    source, target, sd = _files(tmp_path)
    with source, target:
        found = suggest([target], Recipe(), source, template=source)
        assert [(c.kind, c.adapter) for c in found[0].changes] == [(FUSED, "burn-to-pytorch")]
        assert found[0].description.startswith("fuse Burn's LSTM gates of lstm, GRU gates of gru")
        made = {p.target: p for p in found[0].pairs}
        assert made["lstm.weight_ih_l0"].shape == (16, 3)
        assert made["lstm.weight_ih_l0"].source == ", ".join(f"lstm.{g}.input_transform.weight" for g in
                                                             ("input_gate", "forget_gate", "cell_gate", "output_gate"))
        result = plan([target], found[0].apply(Recipe()), template=source)
        assert align(result, source).ok
        fused = {t.name: t for t in result.tensors}["lstm.weight_hh_l0"].read()
        np.testing.assert_array_equal(fused, sd["lstm.weight_hh_l0"].numpy())


def test_gates_of_another_size_are_no_evidence_and_nothing_splits_into_them(tmp_path):
    source, target, _ = _files(tmp_path, hidden=5)  # the Burn model's LSTM is 5 wide, the checkpoint's 4
    with source, target:
        found = suggest([source], Recipe(), target, template=target)
        assert all("LSTM" not in s.description for s in found)
        for suggestion in found:
            assert all(not p.target.startswith("lstm.") for p in suggestion.pairs)


def test_without_fused_modules_the_adapter_keeps_its_plain_name(tmp_path):
    sd = {"fc.weight": torch.ones(3, 2), "fc.bias": torch.zeros(3)}
    torch.save(sd, tmp_path / "fc.pt")
    export(ArrayStore({"fc.weight": np.ones((2, 3), np.float32), "fc.bias": np.zeros(3, np.float32)}).entries,
           tmp_path / "fc.bpk")
    with open_store(tmp_path / "fc.pt") as source, open_store(tmp_path / "fc.bpk") as target:
        assert [[c.kind for c in s.changes] for s in suggest([source], Recipe(), target, template=target)] == [[ADAPTER]]


def test_the_cli_prints_the_split_and_its_saved_recipe_converts_to_the_templates_names_and_shapes(tmp_path, capsys):
    from engine.cli import main

    source, target, sd = _files(tmp_path)
    source.close()
    target.close()
    recipe = tmp_path / "suggested.json"
    assert main(["diff", str(tmp_path / "model.pt"), str(tmp_path / "burn.bpk"), "--no-values", "--suggest",
                 "--save-recipe", str(recipe)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("suggest:")]
    assert lines == ["suggest: split the fused LSTM gates of lstm, GRU gates of gru, attention q/k/v of attn (the "
                     "pytorch-to-burn adapter): fixes 37 of 37 missing or mismatched: adapter pytorch-to-burn"]

    assert main(["convert", "--recipe", str(recipe), str(tmp_path / "out.bpk")]) == 0
    with open_store(tmp_path / "out.bpk") as out, open_store(tmp_path / "burn.bpk") as burn:
        assert {(e.name, e.shape) for e in out.entries} == {(e.name, e.shape) for e in burn.entries}
        for entry in burn.entries:
            np.testing.assert_array_equal(out.read(entry.name), burn.read(entry.name), err_msg=entry.name)
