"""From a PyTorch file to a Burnpack through the workbench's widgets, checked against the engine's own plan
and, independently, against torch: the written Burn file, mapped back by hand, computes the model's outputs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import torch
from PySide6.QtWidgets import QDialog

from engine import open_store
from tests.helpers.samples import SAMPLES
from engine.surgery import Filter, Recipe, RemapRule, plan
from gui.main_window import MainWindow
from gui.workbench.panels.filters import EXCLUDE
from tests.helpers.gui_workbench import SAMPLE_PT, settle


def sample_cnn_class() -> type[torch.nn.Module]:
    """The torch module the sample was saved from (resources/samples/make_samples.py)."""
    spec = importlib.util.spec_from_file_location("make_samples", SAMPLES / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SampleCnn


def torch_state_from_burn(path: Path) -> dict[str, torch.Tensor]:
    """Burn's names and layouts turned back into PyTorch's by hand: head.linearN -> fcN with [in, out]
    transposed to [out, in], gamma/beta -> weight/bias."""
    state = {}
    with open_store(path) as burn:
        for name in burn.names:
            array = np.array(burn.read(name))
            module, _, leaf = name.rpartition(".")
            if module.startswith("head.linear"):
                module = "fc" + module.removeprefix("head.linear")
                array = array.T.copy() if leaf == "weight" else array
            leaf = {"gamma": "weight", "beta": "bias"}.get(leaf, leaf)
            state[f"{module}.{leaf}"] = torch.from_numpy(array)
    return state


def test_pytorch_to_burnpack_with_a_remap_and_a_filter_matches_the_engine_plan(window: MainWindow, surgery, qtbot,
                                                                              tmp_path: Path):
    document = surgery(SAMPLE_PT)  # conv, batch norm (weight/bias -> gamma/beta) and linear (transposed) layers
    window.panels["adapters"].checks["pytorch-to-burn"].click()
    remap = window.panels["remap"]
    qtbot.keyClicks(remap.pattern, r"^fc(\d)")
    qtbot.keyClicks(remap.replacement, r"head.linear$1")
    remap.add_button.click()
    filters = window.panels["filters"]
    filters.add_buttons[EXCLUDE].click()
    qtbot.keyClicks(filters.rows[0].edit, "num_batches_tracked$")
    settle(qtbot, document)

    expected_recipe = Recipe(filter=Filter(exclude=("num_batches_tracked$",)),
                             remaps=(RemapRule(r"^fc(\d)", "head.linear$1"),), adapters=("pytorch-to-burn",))
    assert document.recipe.with_changes(sources=()) == expected_recipe

    dest = tmp_path / "sample_cnn.bpk"
    window.actions.export.trigger()
    dialog = window.findChild(QDialog, "exportDialog")
    assert dialog is not None
    dialog.path_edit.setText(str(dest))
    with qtbot.waitSignal(dialog.exported, timeout=20_000):
        dialog.export_button.click()

    with open_store(SAMPLE_PT) as source, open_store(dest) as written:
        predicted = plan([source], expected_recipe)
        assert written.names == predicted.names
        assert "head.linear1.weight" in written.names and "norm1.gamma" in written.names
        assert not any(n.endswith("num_batches_tracked") for n in written.names)
        for tensor in predicted.tensors:
            entry = written.entry(tensor.name)
            assert (entry.shape, entry.dtype) == (tensor.shape, tensor.dtype), tensor.name
            np.testing.assert_array_equal(written.read(tensor.name), tensor.read())
        assert written.entry("head.linear1.weight").shape == (800, 128)  # transposed from PyTorch's [128, 800]
        np.testing.assert_array_equal(written.read("head.linear1.weight"), source.read("fc1.weight").T)

    original = sample_cnn_class()().eval()
    original.load_state_dict(torch.load(SAMPLE_PT, weights_only=True), strict=True)
    rebuilt = sample_cnn_class()().eval()
    rebuilt.load_state_dict(torch_state_from_burn(dest), strict=True)  # BatchNorm fills in num_batches_tracked
    images = torch.randn(4, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(images), original(images), rtol=0, atol=0)
