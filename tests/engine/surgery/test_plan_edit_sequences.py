"""Any sequence of edits planned through one cache gives, at every step, the plan a fresh cache gives.

The stages after a remap start from their previous result when an edit only moves modules (module
inference re-paths its guesses, the adapters reuse their layout decisions): these tests drive random
edit sequences over files written by real torch and real safetensors, and compare every step's whole
plan (names, sources, dtypes, shapes, kinds, operations, dropped, rule hits, guesses) with a plan from
scratch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from engine import RecipeError, Store, open_store
from engine.surgery import CastRule, Filter, Predicate, Recipe, RemapRule, SourceSpec, plan, stages
from engine.surgery.plan import StageCache

FIXTURES = Path(__file__).parents[2] / "fixtures" / "burn-pytorch-tests"


class Block(torch.nn.Module):
    def __init__(self, wide: int):
        super().__init__()
        self.fc = torch.nn.Linear(4, wide)
        self.norm = torch.nn.LayerNorm(wide)
        self.bn = torch.nn.BatchNorm1d(wide)
        self.act = torch.nn.PReLU()
        self.proj = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(wide, 4))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(10, 4)
        self.blocks = torch.nn.ModuleList([Block(3), Block(5), Block(3)])
        self.head = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2, bias=False))
        self.conv = torch.nn.Conv1d(2, 3, 2)
        self.rms = torch.nn.RMSNorm(4)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> list[Store]:
    """The same real model as a torch ``.pt`` and as SafeTensors (under other names, without the weight-norm
    parametrizations: their folding sends module inference down its full path), plus a Burn fixture."""
    folder = tmp_path_factory.mktemp("edits")
    state = Model().state_dict()
    torch.save(state, folder / "model.pt")
    save_file({f"enc.{name}": tensor.detach().numpy().copy() for name, tensor in state.items()
               if "parametrizations" not in name}, str(folder / "other.safetensors"))
    opened = [open_store(folder / "model.pt"), open_store(folder / "other.safetensors"),
              open_store(FIXTURES / "complex_nested" / "complex_nested.pt")]
    yield opened
    for store in opened:
        store.close()


# remaps that move whole modules (the incremental case), rename a module's label, change leaves,
# merge modules, touch indices, or match nothing yet (a rule typed halfway)
REMAPS = st.sampled_from([
    RemapRule(r"^blocks\.", "layers."), RemapRule(r"^blocks\.", "encoder.layers."), RemapRule(r"^enc\.", ""),
    RemapRule(r"^(\w+)\.(\d+)\.", "${1}_${2}."), RemapRule(r"\.fc\.", ".linear."), RemapRule(r"norm", "ln"),
    RemapRule(r"weight$", "w"), RemapRule(r"\.(fc|proj)\.", ".dense."), RemapRule(r"\.1\.", ".7."),
    RemapRule(r"^head\.0", "head.fc"), RemapRule(r"bn\.", "batch_norm."), RemapRule(r"^blocks\.1", "x"),
    RemapRule(r"^zz", "never"), RemapRule(r"\.act\.weight$", ".act.alpha"), RemapRule(r"^", "model."),
    RemapRule(r"\.(fc|norm)\.", ".fn."), RemapRule(r"\.head\.\d", ".head.x"), RemapRule(r"^enc\.", "encoder."),
    RemapRule(r"head\.", "embed."),  # a bias-free Linear's label says embedding now: its kind changes
])
FILTERS = st.sampled_from([
    Filter(), Filter(exclude=("norm",)), Filter(include=(r"\.fc\.", "^head")), Filter(exclude=("running_", "bias$")),
    Filter(where=(Predicate("module", "==", "Linear"),)), Filter(full_paths=("embed.weight",), include=("conv",)),
])
ADAPTERS = st.lists(st.sampled_from(["pytorch-to-burn", "contiguous-indices", "skip-enum-variants", "fuse-weight-norm"]),
                    unique=True, max_size=3)
CASTS = st.sampled_from([(), (CastRule("F16"),), (CastRule("BF16", ("Linear",)),)])
OVERRIDES = st.sampled_from([{}, {"blocks.0.fc": "Embedding"}, {"layers.1.norm": "RmsNorm"}, {"head.1": "Embedding"}])
RECIPES = st.builds(lambda remaps, filt, adapters, casts, overrides, own:
                    Recipe(remaps=tuple(remaps), filter=filt, adapters=tuple(adapters), casts=casts,
                           module_overrides=overrides, sources=(SourceSpec("a", filter=own),)),
                    st.lists(REMAPS, max_size=3), FILTERS, ADAPTERS, CASTS, OVERRIDES,
                    st.sampled_from([Filter(), Filter(exclude=("^head",))]))
SOURCES = st.sampled_from([[0], [1], [2], [0, 1], [1, 0, 2]])


def outcome(stores: list[Store], recipe: Recipe, template: Store | None, cache: StageCache) -> object:
    """The plan as data (with every operation's fields), or the error it raises."""
    try:
        result = plan(stores, recipe, template=template, cache=cache)
    except RecipeError as exc:
        return ("refused", str(exc))
    return (result.to_json(), [(t.name, [vars(op) for op in t.ops], [e.name for e in t.inputs]) for t in result.tensors])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(SOURCES, RECIPES, st.booleans()), min_size=2, max_size=8))
def test_every_step_of_an_edit_sequence_plans_as_from_scratch(stores, edits):
    cache = StageCache()
    for chosen, recipe, with_template in edits:
        sources = [stores[i] for i in chosen]
        template = stores[1] if with_template else None
        assert outcome(sources, recipe, template, cache) == outcome(sources, recipe, template, StageCache())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([0, 1, 2]), st.lists(st.lists(REMAPS, min_size=1, max_size=3), min_size=2, max_size=8), ADAPTERS,
       FILTERS)
def test_remap_edits_alone_plan_as_from_scratch(stores, source, remaps, adapters, keep):
    """The live-preview case: only the remaps change, so module inference and the adapters start from their last result."""
    cache = StageCache()
    for rules in remaps:
        recipe = Recipe(remaps=tuple(rules), adapters=("pytorch-to-burn", *adapters), filter=keep)
        chosen = [stores[source]]
        assert outcome(chosen, recipe, None, cache) == outcome(chosen, recipe, None, StageCache())


def test_a_remap_that_moves_whole_modules_reuses_the_guesses_and_the_layout(stores, monkeypatch):
    cache = StageCache()
    recipe = Recipe(remaps=(RemapRule(r"^enc\.blocks\.", "layers."),), adapters=("pytorch-to-burn",))
    first = plan(stores[1:2], recipe, cache=cache)
    monkeypatch.setattr(stages, "group_columns", None)  # a full inference would fail: the guesses must be moved
    monkeypatch.setattr(stages, "_layout", None)  # and the layout reused
    moved = plan(stores[1:2], recipe.with_changes(remaps=(RemapRule(r"^enc\.blocks\.", "encoder."),)), cache=cache)
    monkeypatch.undo()
    assert cache.ran["module inference"] == 2 and cache.ran["adapters"] == 2
    assert moved.modules["encoder.0.fc"].path == "encoder.0.fc" and "layers.0.fc" not in moved.modules
    assert [t.name.replace("encoder.", "layers.", 1) for t in moved.tensors] == first.names
    assert moved.to_json() == plan(stores[1:2], recipe.with_changes(remaps=(RemapRule(r"^enc\.blocks\.", "encoder."),)),
                                   cache=StageCache()).to_json()
    gamma = next(t for t in moved.tensors if t.name == "encoder.1.norm.gamma")
    assert [op.describe() for op in gamma.ops][-1].startswith("rename encoder.1.norm.weight -> encoder.1.norm.gamma")
    np.testing.assert_array_equal(gamma.read(), stores[0].read("blocks.1.norm.weight"))


def test_a_move_that_renames_a_module_guesses_its_kind_again(stores):
    cache = StageCache()
    recipe = Recipe(remaps=(RemapRule(r"head\.", "top."),), adapters=("pytorch-to-burn",))
    first = plan(stores[1:2], recipe, cache=cache)
    embed = recipe.with_changes(remaps=(RemapRule(r"head\.", "embed."),))
    moved = plan(stores[1:2], embed, cache=cache)
    assert first.modules["enc.top.1"].kind == "Linear" and moved.modules["enc.embed.1"].kind == "Embedding"
    kinds = {t.name: t.module for t in moved.tensors}
    assert kinds["enc.embed.1.weight"] == "Embedding" and kinds["enc.embed.0.weight"] == "Linear"
    assert moved.to_json() == plan(stores[1:2], embed, cache=StageCache()).to_json()
