"""``diff --suggest``: B is the target model's file, and its names and shapes settle module kinds while proving
(issue 25: with B given only as the target to align with, the sixth session's mutants of ``suggestions`` survived).

Promise (README "Command line": ``--suggest`` proves each change against B, a file saved from the target model)
-> test:
- a 2-D weight B wants as it is is not a Linear, so the PyTorch-to-Burn adapter (which renames the norm B names
  ``gamma``/``beta``) is suggested without transposing it; without B's kinds the transpose breaks the pair and
  nothing is suggested -> test_b_settles_that_a_weight_it_wants_as_it_is_is_not_transposed
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from engine.cli import main

ADAPTER = ("suggest: add the pytorch-to-burn adapter (Linear weights, norm parameters): fixes 2 of 2 missing or "
           "mismatched: adapter pytorch-to-burn")


def test_b_settles_that_a_weight_it_wants_as_it_is_is_not_transposed(tmp_path: Path, capsys):
    a, b, saved = tmp_path / "a.safetensors", tmp_path / "b.safetensors", tmp_path / "r.json"
    fc = {"fc.weight": np.zeros((3, 2), np.float32), "fc.bias": np.zeros(3, np.float32)}  # named like a Linear
    save_file({"ln.weight": np.ones(3, np.float32), "ln.bias": np.zeros(3, np.float32), **fc}, str(a))
    save_file({"ln.gamma": np.ones(3, np.float32), "ln.beta": np.zeros(3, np.float32), **fc}, str(b))
    assert main(["diff", str(a), str(b), "--suggest", "--save-recipe", str(saved), "-q"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == ADAPTER
    assert json.loads(saved.read_text())["adapters"] == ["pytorch-to-burn"]
