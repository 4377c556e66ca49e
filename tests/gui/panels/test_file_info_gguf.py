"""A GGUF file in the window: the tree gives each tensor its GGML type (Q8_0, Q4_K...), the File panel its
key-values, an array as its length and first items, and a selected block-type tensor its statistics from gguf's
values. Without these a llama.cpp user could not tell a Q4_K tensor from an F16 one, or see the tokenizer."""

from __future__ import annotations

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize
from PySide6.QtWidgets import QGroupBox, QLabel

from gui.models.tree_model import Column
from tests.helpers.gguf_files import write_model


def test_a_gguf_shows_its_types_its_key_values_and_gguf_statistics(window, open_view, qtbot, tmp_path):
    path = tmp_path / "tiny.gguf"
    write_model(path)
    window.resize(1024, 640)
    view = open_view(path)
    model = view.model
    blk = next(model.index(r, 0) for r in range(model.rowCount()) if model.index(r, 0).data() == "blk.0")
    ffn_up = next(model.index(r, 0, blk) for r in range(model.rowCount(blk))
                  if model.index(r, 0, blk).data() == "ffn_up")
    assert model.index(0, Column.DTYPE, ffn_up).data() == "Q4_K"
    box = next(b for b in view.file_info.findChildren(QGroupBox) if b.title().startswith("Metadata"))
    texts = [label.text() for label in box.findChildren(QLabel)]
    assert "tokenizer.ggml.tokens" in texts and "tiny llama" in texts
    assert any(t.startswith("[1,000 × STRING] 'tok0', 'tok1'") for t in texts)
    view.select("blk.0.ffn_up.weight")
    tensor = next(t for t in GGUFReader(str(path)).tensors if t.name == "blk.0.ffn_up.weight")
    want = dequantize(tensor.data, tensor.tensor_type)
    details = view.side.details
    qtbot.waitUntil(lambda: details.stats is not None, timeout=30_000)
    assert details.stats.max == float(np.max(want)) and details.stats.min == float(np.min(want))


def test_a_header_of_many_long_keys_shows_a_bounded_metadata_box(window, open_view, tmp_path):
    """A hostile GGUF of 3,000 keys, one a 1 MiB text: the File panel shows the first 1,000 keys, each value
    clipped, and says how many more there are; ``inspect`` clips the text and says its length."""
    import struct

    from gui.panels.file_info import MAX_CHILDREN
    from gui.widgets import LINE_CHARS
    from tests.helpers.engine_cli_run import run
    from tests.helpers.gguf_files import key_u32, raw_file, text
    path = tmp_path / "keys.gguf"
    long_value = text("huge") + struct.pack("<I", 8) + text("x" * (1 << 20))
    path.write_bytes(raw_file(keys=long_value + b"".join(key_u32(f"k{i}", i) for i in range(2999)), n_keys=3000))
    view = open_view(path)
    box = next(b for b in view.file_info.findChildren(QGroupBox) if b.title().startswith("Metadata"))
    texts = [label.text() for label in box.findChildren(QLabel)]
    assert box.title() == "Metadata (3,000)"
    assert len(texts) == 2 * MAX_CHILDREN + 1 and texts[-1].startswith("… 2,000 more")
    assert max(map(len, texts)) == LINE_CHARS
    shown = run("inspect", str(path)).stdout
    assert f"  huge = {'x' * 1000}… (1,048,576 characters; --json has them all)" in shown.splitlines()
