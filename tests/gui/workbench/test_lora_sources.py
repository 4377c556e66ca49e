"""A LoRA adapter in the window: the Sources dock merges a PEFT adapter into the selected source (a row under it,
with its scale), as one undo step, and the plan reads the merged weights, PEFT's values. Without it a user would
have to merge in Python before the model reached Store Studio."""

from __future__ import annotations

import numpy as np

from tests.helpers.lora_files import peft_merged, save_adapter, save_base


def test_an_adapter_row_sits_under_its_base_and_the_plan_reads_peft_values(window, open_view, qtbot, tmp_path):
    base = save_base(tmp_path / "base.safetensors")
    adapter = save_adapter(tmp_path / "tuned", base, r=4, lora_alpha=8, target_modules=["q_proj"])
    open_view(base)
    document = window.surgery()
    panel = window.panels["sources"]
    qtbot.waitUntil(lambda: document.plan is not None, timeout=30_000)
    panel.add_adapter(0, adapter)
    qtbot.waitUntil(lambda: not document.busy and document.plan is not None
                    and document.plan.recipe == document.recipe, timeout=30_000)
    rows = [panel.list.item(r).text() for r in range(panel.list.count())]
    assert rows[1].strip() == "↳ LoRA tuned  ·  scale 1"
    q = next(t for t in document.plan.tensors if t.name == "model.layers.0.self_attn.q_proj.weight")
    assert q.operations == ["merge LoRA tuned (scale 1)"]  # the Preview and the tree say which tensors it changed
    assert all(not t.operations for t in document.plan.tensors if t is not q)
    assert panel.list.horizontalScrollBar().maximum() == 0
    want = peft_merged(base, [(adapter, 1.0)])["model.layers.0.self_attn.q_proj.weight"]
    assert np.asarray(q.read()).tobytes() == want.tobytes()
    panel.list.setCurrentRow(1)
    panel.scale.setValue(0.5)
    qtbot.waitUntil(lambda: not document.busy and document.recipe.sources[0].lora[0].scale == 0.5
                    and document.plan.recipe == document.recipe, timeout=30_000)
    q = next(t for t in document.plan.tensors if t.name == "model.layers.0.self_attn.q_proj.weight")
    assert np.asarray(q.read()).tobytes() == peft_merged(base, [(adapter, 0.5)])[q.name].tobytes()
    window.actions.undo.trigger()  # the scale
    window.actions.undo.trigger()  # the adapter
    assert document.recipe.sources[0].lora == ()
    assert panel.list.count() == 1
