"""Each of the Adapters dock's boxes does what its name says to the plan, and undoes it when cleared (README "The
workbench", Adapters: "PyTorch → Burn, Burn → PyTorch, contiguous indices, skip enum variants, fuse weight norm"): a
box that did nothing, or could not be undone, would leave a recipe that does not load. Real widgets in the real
window, offscreen.

Promise -> test:
- Burn → PyTorch renames norm gamma/beta to weight/bias; contiguous indices renumbers `layers.0/2` as `0/1`; fuse
  weight norm replaces `weight_g`/`weight_v` by the weight they stand for; skip enum variants looks at a CamelCase
  segment (kept as a guess without a template); clearing a box gives the plan back ->
  test_each_adapter_box_changes_the_plan_as_its_name_says (checked: a box wired to the wrong adapter fails it)
- the two directions undo each other: checking one clears the other -> test_the_two_directions_exclude_each_other
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine import ArrayStore, export
from gui.main_window import MainWindow

from tests.helpers.gui_workbench import settle

ARRAYS = {"layers.0.weight": np.ones((2, 2), np.float32), "layers.2.weight": np.full((2, 2), 2, np.float32),
          "feature.BaseConv.weight": np.ones(3, np.float32),
          "lin.weight_g": np.full((4, 1), 2, np.float32),
          "lin.weight_v": np.arange(12, dtype=np.float32).reshape(4, 3) + 1,
          "norm.gamma": np.ones(3, np.float32), "norm.beta": np.zeros(3, np.float32)}
UNCHANGED = sorted(ARRAYS)


@pytest.fixture
def document(surgery, tmp_path: Path):
    export(ArrayStore(ARRAYS).entries, tmp_path / "m.safetensors")
    return surgery(tmp_path / "m.safetensors")


def click(window: MainWindow, qtbot, document, name: str) -> list[str]:
    window.panels["adapters"].checks[name].click()
    settle(qtbot, document)
    return sorted(document.plan.names)


@pytest.mark.parametrize(("box", "gone", "added"), [
    ("burn-to-pytorch", {"norm.gamma", "norm.beta"}, {"norm.weight", "norm.bias"}),
    ("contiguous-indices", {"layers.2.weight"}, {"layers.1.weight"}),
    ("fuse-weight-norm", {"lin.weight_g", "lin.weight_v"}, {"lin.weight"}),
    ("skip-enum-variants", set(), set()),
])
def test_each_adapter_box_changes_the_plan_as_its_name_says(window: MainWindow, document, qtbot, box, gone, added):
    assert sorted(document.plan.names) == UNCHANGED
    names = click(window, qtbot, document, box)
    assert document.recipe.adapters == (box,)
    assert names == sorted(set(UNCHANGED) - gone | added)
    if box == "fuse-weight-norm":
        v = ARRAYS["lin.weight_v"]
        expected = ARRAYS["lin.weight_g"] * v / np.linalg.norm(v, axis=1, keepdims=True)
        fused = next(t for t in document.plan.tensors if t.name == "lin.weight")
        np.testing.assert_allclose(fused.read(), expected, rtol=1e-6)
    if box == "skip-enum-variants":  # without a template the CamelCase segment is a guess, said so
        assert [g.name for g in document.plan.guesses] == ["feature.BaseConv.weight"]
        assert "BaseConv" in document.plan.guesses[0].decision
    else:
        assert not any(g.name == "feature.BaseConv.weight" for g in document.plan.guesses)
    assert click(window, qtbot, document, box) == UNCHANGED and document.recipe.adapters == ()


def test_the_two_directions_exclude_each_other(window: MainWindow, document, qtbot):
    checks = window.panels["adapters"].checks
    click(window, qtbot, document, "pytorch-to-burn")
    click(window, qtbot, document, "burn-to-pytorch")
    assert document.recipe.adapters == ("burn-to-pytorch",)
    assert checks["burn-to-pytorch"].isChecked() and not checks["pytorch-to-burn"].isChecked()
