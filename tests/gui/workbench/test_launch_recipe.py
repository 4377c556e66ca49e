"""``store-studio FILE --recipe R.json --screenshot PNG`` renders the workbench with the recipe applied."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QImage

from engine.samples import SAMPLES
from gui.app import main
from workbench_helpers import SAMPLE_PT

RECIPE = SAMPLES / "pytorch_to_burn.recipe.json"


def test_recipe_and_dock_flags_render_the_workbench(qapp, tmp_path: Path):
    out = tmp_path / "workbench.png"
    assert main([str(SAMPLE_PT), "--recipe", str(RECIPE), "--dock", "remap", "--screenshot", str(out)]) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1400, 900)


def test_a_missing_recipe_fails_the_screenshot(qapp, tmp_path: Path):
    out = tmp_path / "workbench.png"
    assert main([str(SAMPLE_PT), "--recipe", str(tmp_path / "nope.json"), "--screenshot", str(out)]) == 1
    assert not out.exists()
