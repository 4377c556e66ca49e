"""The recipe document: undoable edits, sources in precedence order, debounced plans off the UI thread."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QThreadPool

from engine import ArrayStore, open_store
from tests.helpers.samples import SAMPLES
from engine.surgery import Filter, Plan, Recipe, RemapRule, plan
from gui.workbench.document import RecipeDocument


@pytest.fixture
def cnn():
    with open_store(SAMPLES / "sample_cnn.bpk") as store:
        yield store


@pytest.fixture
def document(qapp, cnn):
    doc = RecipeDocument(cnn)
    yield doc
    doc.close()
    QThreadPool.globalInstance().waitForDone(60_000)


def settled(qtbot, doc: RecipeDocument) -> Plan:
    qtbot.waitUntil(lambda: not doc.busy, timeout=30_000)
    assert doc.plan is not None
    return doc.plan


def test_starts_with_the_tabs_store_as_the_only_source_and_plans_it(qtbot, document, cnn):
    result = settled(qtbot, document)
    assert document.stores == [cnn]
    assert [s.path for s in document.recipe.sources] == [str(cnn.path)]
    assert result.names == plan([cnn], document.recipe).names
    assert result.names == cnn.names and len(result.names) == 16  # an empty recipe keeps every tensor, in order
    assert all(t.read().tobytes() == cnn.read(t.name).tobytes() for t in result.tensors)
    assert not document.is_modified


def test_push_is_undoable_and_redoable(qtbot, document):
    settled(qtbot, document)
    original = document.recipe
    changed = original.with_changes(filter=Filter(exclude=("num_batches",)))
    with qtbot.waitSignal(document.recipeChanged):
        assert document.push(changed, "Exclude num_batches")
    assert document.recipe == changed and document.is_modified
    assert not document.push(changed, "again")  # nothing changed: no undo step
    assert document.undo_stack.count() == 1
    document.undo_stack.undo()
    assert document.recipe == original and not document.is_modified
    document.undo_stack.redo()
    assert document.recipe == changed
    assert "num_batches" not in " ".join(settled(qtbot, document).names)


def test_edits_sharing_a_merge_key_are_one_undo_step(qtbot, document):
    for text in ("n", "no", "nor"):
        document.push(document.recipe.with_changes(filter=Filter(include=(text,))), "Edit include", "include 0")
    assert document.undo_stack.count() == 1
    document.undo_stack.undo()
    assert document.recipe.filter.is_empty


def test_add_remap_counts_hits_in_the_plan(qtbot, document):
    document.add_remap(r"^conv(\d)", r"features.conv$1")
    result = settled(qtbot, document)
    assert "features.conv1.weight" in result.names
    assert result.rule_hits[-1].count == 4


def test_sources_add_move_remove_are_undoable_and_later_sources_override(qtbot, document, cnn):
    settled(qtbot, document)
    other = ArrayStore({"fc2.bias": np.zeros(10, np.float32), "extra": np.ones(3, np.float32)}, name="other.bpk")
    document.add_source(other)
    assert document.stores == [cnn, other]
    assert [s.path for s in document.recipe.sources] == [str(cnn.path), "other.bpk"]
    result = settled(qtbot, document)
    assert [o.name for o in result.overrides] == ["fc2.bias"]
    document.move_source(1, 0)
    assert document.stores == [other, cnn]
    assert [s.path for s in document.recipe.sources] == ["other.bpk", str(cnn.path)]
    assert not document.remove_source(1)  # the tab's own file stays
    document.remove_source(0)
    assert document.stores == [cnn]
    for _ in range(3):
        document.undo_stack.undo()
    assert document.stores == [cnn] and len(document.recipe.sources) == 1


def test_an_invalid_rule_fails_the_plan_with_a_message_and_the_next_edit_recovers(qtbot, document):
    settled(qtbot, document)
    with qtbot.waitSignal(document.planFailed, timeout=30_000) as failed:
        document.add_remap("(", "x")
    assert "invalid regex" in failed.args[0]
    document.undo_stack.undo()
    with qtbot.waitSignal(document.planReady, timeout=30_000):
        pass
    assert document.error is None


def test_rapid_edits_plan_once_for_the_last_recipe(qtbot, document):
    settled(qtbot, document)
    plans: list[Plan] = []
    document.planReady.connect(plans.append)
    for n in range(5):
        document.push(document.recipe.with_changes(remaps=(RemapRule("fc", f"head{n}_"),)), "Edit remap", "remap")
    settled(qtbot, document)
    assert len(plans) == 1
    assert "head4_1.weight" in plans[0].names


def test_save_marks_clean_and_open_recipe_replaces_the_history(qtbot, document, tmp_path: Path):
    document.add_remap("fc", "head")
    saved = document.save(tmp_path / "r.recipe.json")
    assert not document.is_modified and document.path == saved
    document.add_remap("conv", "c")
    assert document.is_modified
    document.open_recipe(saved)
    assert document.recipe.remaps == (RemapRule("fc", "head"),)
    assert not document.is_modified and document.undo_stack.count() == 0


def test_top_level_key_reopens_a_pytorch_source_at_that_branch(qtbot, qapp):
    path = Path(__file__).resolve().parents[2] / "fixtures" / "burn-pytorch-tests" / "top_level_key" / "top_level_key.pt"
    with open_store(path) as store:
        doc = RecipeDocument(store)
        try:
            doc.push(doc.recipe.with_changes(top_level_key="my_state_dict"), "Top-level key")
            result = settled(qtbot, doc)
            assert "conv1.weight" in result.names
        finally:
            doc.close()
            QThreadPool.globalInstance().waitForDone(60_000)


def test_a_10000_tensor_plan_follows_each_edit(qtbot, qapp):
    """Every edit re-plans (its latency is measured in tests/benchmarks, not asserted here)."""
    arrays = {f"blocks.{i // 4}.{['norm', 'fc', 'fc', 'norm'][i % 4]}.{['weight', 'weight', 'bias', 'bias'][i % 4]}":
              np.zeros((4, 2) if i % 4 == 1 else (4,), np.float32) for i in range(10_000)}
    store = ArrayStore(arrays, name="big.bpk")
    doc = RecipeDocument(store)
    try:
        settled(qtbot, doc)
        recipe = Recipe(adapters=("pytorch-to-burn",), remaps=(RemapRule(r"^blocks\.", "layers."),),
                        filter=Filter(exclude=("norm",)))
        for attempt in range(3):  # typing a remap replacement: the filters stay, the names change
            doc.push(recipe.with_changes(remaps=(RemapRule(r"^blocks\.", f"layers{attempt}."),)), "edit")
            qtbot.waitUntil(lambda: not doc._timer.isActive(), timeout=30_000)
            qtbot.waitUntil(lambda: not doc.busy, timeout=30_000)
            assert len(doc.plan.tensors) == 5_000
            assert doc.plan.tensors[0].name.startswith(f"layers{attempt}.")
    finally:
        doc.close()
        QThreadPool.globalInstance().waitForDone(60_000)


def test_a_plan_that_arrives_after_a_newer_edit_is_ignored(qtbot, document, monkeypatch):
    """The plan for remap 'A' is finished and on its way (a queued signal) when remap 'B' replaces it: the
    document must neither show it nor stop waiting for B's plan, which the test releases only afterwards."""
    import gui.workbench.document as document_module
    settled(qtbot, document)
    release_b = threading.Event()
    real = document_module.plan

    def controlled(stores, recipe, **kwargs):
        if recipe.remaps and recipe.remaps[0].replacement == "B":
            assert release_b.wait(60), "the test never released B's plan"
        return real(stores, recipe, **kwargs)

    monkeypatch.setattr(document_module, "plan", controlled)
    document.push(document.recipe.with_changes(remaps=(RemapRule("^fc1", "A"),)), "A")
    document.replan()
    assert QThreadPool.globalInstance().waitForDone(60_000)  # A's plan is queued, not yet delivered
    document.push(document.recipe.with_changes(remaps=(RemapRule("^fc1", "B"),)), "B")
    document.replan()
    QCoreApplication.processEvents()
    QCoreApplication.processEvents()
    assert "A.weight" not in document.plan.names and "fc1.weight" in document.plan.names
    assert document.busy
    release_b.set()
    result = settled(qtbot, document)
    assert {"B.weight", "B.bias"} <= set(result.names) and "A.weight" not in result.names
