"""The export dialog quantizes a Burnpack's float weights as ``convert --quantize`` does: its Quantize choice shows
for a Burnpack only, and the written file holds Burn's quantization of the weights, norms and biases left float.
Without it a user who deploys quantized would have to write the quantization in Rust."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from engine import open_store
from engine.quantize import quantize_rows
from gui.workbench.document import RecipeDocument
from gui.workbench.export_dialog import run_export
from tests.helpers.samples import SAMPLES


@pytest.fixture
def sample_document(window, qtbot):
    store = open_store(SAMPLES / "sample_cnn.pt")
    document = RecipeDocument(store, window.work)
    qtbot.waitUntil(lambda: not document.busy and document.plan is not None, timeout=30_000)
    yield document
    document.close()
    store.close()


def test_the_dialog_quantizes_a_burnpacks_weights_and_only_a_burnpacks(window, sample_document, qtbot, tmp_path):
    dest = tmp_path / "q.bpk"
    dialog = run_export(window, sample_document)
    dialog.path_edit.setText(str(dest))
    assert dialog.quantize.isVisible() and dialog.quantize.currentData() is None  # float unless chosen
    dialog.quantize.setCurrentIndex(dialog.quantize.findData("Q8S"))
    assert dialog.summary.text().splitlines()[1:] == [
        "2 tensors quantized as Burn's Q8S, blocks of 32, F16 block scales, packed 4 per u32",
        "left float: conv1.weight, conv2.weight (the last dimension (3) is not a multiple of the block (32))"]
    assert dialog.summary.toolTip().endswith("\nQuantized: fc1.weight, fc2.weight")
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)
    source = sample_document.store.read("fc1.weight")
    q, scales = quantize_rows(source.reshape(-1, source.shape[-1]), "Q8S", 32, "F16")
    expected = (np.repeat(np.where(scales == 0, np.float32(0.1), scales), 32, axis=1) * q.astype(np.float32))
    with open_store(dest) as written:
        assert written.entry("fc1.weight").dtype.quant_scheme.describe().startswith("Q8S, blocks of 32")
        assert written.read("fc1.weight").tobytes() == expected.reshape(source.shape).tobytes()
        assert str(written.entry("fc1.bias").dtype) == "F32" and str(written.entry("norm1.weight").dtype) == "F32"
        assert str(written.entry("conv1.weight").dtype) == "F32"  # its rows of 3 are no whole blocks
    dialog.path_edit.setText(str(tmp_path / "q.safetensors"))
    assert not dialog.quantize.isVisible()
    dialog.reject()


def test_a_gguf_exports_from_the_dialog_saying_what_stays_quantized(window, open_view, qtbot, tmp_path):
    from tests.helpers.gguf_files import write_model
    model = tmp_path / "tiny.gguf"
    write_model(model)
    open_view(model)
    document = window.surgery(show_workbench=False)
    qtbot.waitUntil(lambda: not document.busy and document.plan is not None, timeout=30_000)
    dialog = run_export(window, document)
    dialog.path_edit.setText(str(tmp_path / "tiny.bpk"))
    assert dialog.problem.isHidden()  # Q8_0 and Q4_0 are writable: kept as Burn's blocks
    assert dialog.summary.text().splitlines()[1:] == [
        "1 Q8_0 tensor kept quantized, as Burn's Q8S, blocks of 32, F16 block scales, packed 4 per u32",
        "1 Q4_0 tensor kept quantized, as Burn's Q4S, blocks of 32, F16 block scales, packed 8 per u32",
        "1 Q4_K tensor dequantized to F16 (Burn has no Q4_K)", "1 Q6_K tensor dequantized to F16 (Burn has no Q6_K)"]
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.exported_path is not None, timeout=30_000)
    with open_store(tmp_path / "tiny.bpk") as written:
        assert written.entry("blk.0.attn_q.weight").dtype.quant_scheme.value == "Q8S"
    dialog.reject()
