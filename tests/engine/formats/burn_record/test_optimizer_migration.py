"""Optimizer records saved by Burn's old recorders come out in the layout current Burn's optimizer loads.

Old layout (what the records hold, Burn 0.13 to 0.21): ``HashMap<ParamId, AdaptorRecordItem>`` whose keys are
``ParamId::serialize`` texts (crates/burn-core/src/record/primitive.rs:121-134 and
crates/burn-core/src/module/param/id.rs:44-46 at v0.21.0), each value ``V1`` -> ``Rank{D}`` -> the optimizer's
state (crates/burn-optim/src/optim/simple/record/base.rs:26-31 and record/v1.rs:13-40 at v0.21.0).

Current layout (main): ``ModuleOptimizer::to_record`` (crates/burn-optim/src/optim/module/module_optimizer.rs:199-241)
writes a Burnpack whose tensors are ``"{param_id}.{field}"`` carrying ``param_id``, the rank as the scalar
``"{param_id}.__rank"`` (:24, :213-216), and the state's fields flattened by ``#[derive(RecordState)]``
(crates/burn-derive/src/record_state/mod.rs:131-230: ``{prefix}.{field}``, nested structs joined with ``.``,
``None`` options absent, scalars via ``burn_pack::Scalar::from``, ``usize`` -> ``UInt``: crates/burn-pack/src/base.rs
``impl_scalar_int``). ``load_record`` (:249-300) is mirrored below by ``load_like_burn`` and must rebuild
every parameter's state; the state structs are AdamState/AdaptiveMomentumState (adam.rs:54, :128), SgdState
(sgd.rs:36), MomentumState (momentum.rs:25) and AdaGradState/LrDecayState (adagrad.rs:38, :108) at main.

RmsProp and Adan records keep their field names too (README "Migrating from Burn's recorders": "Adam, AdamW, SGD,
AdaGrad, RmsProp and Adan states keep their field names"), their state structs as Burn's main declares them:
RmsPropState/SquareAvgState/CenteredState/RmsPropMomentumState (crates/burn-optim/src/optim/rmsprop.rs:144-151,
:155-158, :195-200, :298-300) and AdanState/AdaptiveNesterovMomentumState (adan.rs:58-60, :138-148), loaded as
``ModuleOptimizer::load_record`` does (``load_like_burn``).

Promise -> test:
- a RmsProp record (centered, with momentum; and without either) loads field by field ->
  test_an_rmsprop_record_loads_field_by_field
- an Adan record loads field by field, its step counter a UInt scalar -> test_an_adan_record_loads_field_by_field
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine import open_store
from engine.cli import main
from tests.helpers.formats_burn_record_writers import (
    Data,
    Settings,
    Unit,
    Variant,
    id_text,
    write_record,
)

# The state structs at main, as RecordState flattens them: field -> "tensor" | "usize" | nested | ("option", nested)
ADAPTIVE_MOMENTUM = {"time": "usize", "moment_1": "tensor", "moment_2": "tensor", "max_moment_2": ("option", "tensor")}


STATES = {
    "Adam": {"momentum": ADAPTIVE_MOMENTUM},
    "AdamW": {"momentum": ADAPTIVE_MOMENTUM},
    "Sgd": {"momentum": ("option", {"velocity": "tensor"})},
    "AdaGrad": {"lr_decay": {"time": "usize", "sum": "tensor"}},
}


def load_like_burn(store, state: dict) -> dict[int, dict[str, Any]]:
    """``ModuleOptimizer::load_record`` over a Burnpack: ranks from ``{id}.__rank`` (``u64`` ids, ``usize`` ranks),
    every tensor must carry a ``param_id``, then each parameter's state rebuilt field by field."""
    ranks: dict[int, int] = {}
    for name, scalar in store.scalars.items():
        if name.endswith(".__rank"):
            (kind, value), = scalar.items()
            assert kind in ("UInt", "Int") and value >= 0
            ranks[int(name[:-len(".__rank")])] = value
    tensors = {}
    for entry in store.entries:
        assert entry.param_id is not None, f"{entry.name}: Burn expects every record tensor to carry a param id"
        ranks.setdefault(entry.param_id, len(entry.shape))
        tensors[entry.name] = (entry, store.read(entry.name))
    states = {}
    for pid, rank in ranks.items():
        states[pid] = unflatten(state, str(pid), tensors, store.scalars, rank)
        assert states[pid] is not None, f"parameter {pid}: its state cannot be rebuilt"
    assert not tensors, f"tensors no state field reads: {sorted(tensors)}"
    assert states, "no parameter's state found: Burn would start the optimizer afresh"
    return states


def unflatten(spec: Any, prefix: str, tensors: dict, scalars: dict, rank: int) -> Any:
    if spec == "tensor":
        found = tensors.pop(prefix, None)
        if found is None:
            return None
        assert len(found[0].shape) == rank, f"{prefix}: rank {len(found[0].shape)} in a Rank{rank} state"
        return found[1]
    if spec == "usize":
        scalar = scalars.get(prefix)
        return None if scalar is None or not ({"UInt", "Int"} >= set(scalar)) else next(iter(scalar.values()))
    if isinstance(spec, tuple):  # Option: None when nothing was recorded under it (StateSource::has_under)
        under = [n for n in [*tensors, *scalars] if n == prefix or n.startswith(prefix + ".")]
        return unflatten(spec[1], prefix, tensors, scalars, rank) if under else "None"
    out = {}
    for field, inner in spec.items():
        value = unflatten(inner, f"{prefix}.{field}", tensors, scalars, rank)
        if value is None:
            return None
        out[field] = value
    return out


def v1(rank: int, state: dict) -> dict:
    return {"V1": Variant(f"Rank{rank}", rank, state)}  # AdaptorRecordItem::V1(AdaptorRecordItemV1::Rank{D})


@pytest.mark.parametrize("recorder", ["NamedMpk", "NamedMpkGz", "PrettyJson"])
def test_an_adam_record_loads_in_current_burns_layout(tmp_path, recorder):
    rng = np.random.default_rng(5)
    w, b = rng.random((3, 4), "<f4"), rng.random(4, "<f4")
    item = {id_text(42): v1(2, {"momentum": {"time": 7, "moment_1": Data(w), "moment_2": Data(w * 2),
                                             "max_moment_2": Unit}}),
            id_text(2**63 + 9): v1(1, {"momentum": {"time": 7, "moment_1": Data(b), "moment_2": Data(b * 2),
                                                    "max_moment_2": Unit}})}
    path = write_record(tmp_path, "optim-5", item, Settings(recorder=recorder))
    assert main(["migrate", str(tmp_path), "-q"]) == 0
    with open_store(tmp_path / "optim-5.bpk") as store:
        assert store.names == ["42.momentum.moment_1", "42.momentum.moment_2", f"{2**63 + 9}.momentum.moment_1",
                               f"{2**63 + 9}.momentum.moment_2"]
        assert store.scalars == {"42.__rank": {"UInt": 2}, "42.momentum.time": {"UInt": 7},
                                 f"{2**63 + 9}.__rank": {"UInt": 1}, f"{2**63 + 9}.momentum.time": {"UInt": 7}}
        states = load_like_burn(store, STATES["Adam"])
    assert set(states) == {42, 2**63 + 9}
    np.testing.assert_array_equal(states[42]["momentum"]["moment_1"], w)
    np.testing.assert_array_equal(states[42]["momentum"]["moment_2"], w * 2)
    np.testing.assert_array_equal(states[2**63 + 9]["momentum"]["moment_1"], b)
    assert states[42]["momentum"]["time"] == 7 and states[42]["momentum"]["max_moment_2"] == "None"
    assert path.exists()  # migrate never deletes


def test_sgd_with_and_without_momentum_and_adagrad_load(tmp_path):
    velocity = np.arange(6, dtype="<f4").reshape(2, 3)
    sgd = {id_text(1): v1(2, {"momentum": {"velocity": Data(velocity)}}), id_text(2): v1(0, {"momentum": Unit})}
    adagrad = {id_text(3): v1(1, {"lr_decay": {"time": 11, "sum": Data(np.ones(5, "<f4"))}})}
    write_record(tmp_path, "sgd", sgd, Settings())
    write_record(tmp_path, "adagrad", adagrad, Settings(version="0.16.0"))
    assert main(["migrate", str(tmp_path), "-q"]) == 0
    with open_store(tmp_path / "sgd.bpk") as store:
        assert store.names == ["1.momentum.velocity"] and store.scalars["2.__rank"] == {"UInt": 0}
        states = load_like_burn(store, STATES["Sgd"])
    np.testing.assert_array_equal(states[1]["momentum"]["velocity"], velocity)
    assert states[2] == {"momentum": "None"}  # a rank-0 parameter without momentum keeps its (empty) state
    with open_store(tmp_path / "adagrad.bpk") as store:
        assert load_like_burn(store, STATES["AdaGrad"])[3]["lr_decay"]["time"] == 11


def test_the_old_layout_would_not_load():
    """The check above is not vacuous: the layout the migration wrote before fails Burn's load_record."""
    class Entry:
        name, param_id, shape = f"{id_text(42)}.Rank1.momentum.moment_1", None, (4,)

    class OldStore:
        scalars = {f"{id_text(42)}.Rank1.momentum.time": {"Int": 3}}
        entries = [Entry()]

        def read(self, name):
            return np.ones(4, "<f4")

    with pytest.raises(AssertionError, match="carry a param id"):
        load_like_burn(OldStore(), STATES["Adam"])
    OldStore.entries = []
    with pytest.raises(AssertionError, match="no parameter's state found"):
        load_like_burn(OldStore(), STATES["Adam"])


def test_a_record_that_is_not_an_optimizers_keeps_its_field_paths(tmp_path):
    path = write_record(tmp_path, "scheduler", {"init_lr": 0.001, "step": 12}, Settings())
    with open_store(path) as store:
        assert store.scalars == {"init_lr": {"Float": 0.001}, "step": {"Int": 12}}
    uuid_keyed = {"9b2e0f6c-6f5e-4a53-9d0a-9d0c5a6c2f1e": v1(1, {"momentum": {"velocity": Data(np.ones(2, "<f4"))}})}
    with open_store(write_record(tmp_path, "old", uuid_keyed, Settings(version="0.13.0"))) as store:
        assert store.names == ["9b2e0f6c-6f5e-4a53-9d0a-9d0c5a6c2f1e.V1.Rank1.momentum.velocity"]


RMSPROP = {"square_avg": {"square_avg": "tensor"}, "centered": {"grad_avg": ("option", "tensor"), "avg": "tensor"},
           "momentum": ("option", {"buf": "tensor"})}


ADAN = {"momentum": {"time": "usize", "exp_avg": "tensor", "exp_avg_sq": "tensor", "exp_avg_diff": "tensor",
                     "neg_pre_grad": "tensor"}}


def test_an_rmsprop_record_loads_field_by_field(tmp_path):
    w = np.arange(6, dtype="<f4").reshape(2, 3)
    item = {id_text(5): v1(2, {"square_avg": {"square_avg": Data(w)},
                               "centered": {"grad_avg": Data(w + 1), "avg": Data(w + 2)},
                               "momentum": {"buf": Data(w + 3)}}),
            id_text(6): v1(1, {"square_avg": {"square_avg": Data(w[0])},
                               "centered": {"grad_avg": Unit, "avg": Data(w[1])}, "momentum": Unit})}
    write_record(tmp_path, "rmsprop", item, Settings())
    assert main(["migrate", str(tmp_path), "-q"]) == 0
    with open_store(tmp_path / "rmsprop.bpk") as store:
        assert store.names == ["5.square_avg.square_avg", "5.centered.grad_avg", "5.centered.avg", "5.momentum.buf",
                               "6.square_avg.square_avg", "6.centered.avg"]
        states = load_like_burn(store, RMSPROP)
    np.testing.assert_array_equal(states[5]["centered"]["grad_avg"], w + 1)
    np.testing.assert_array_equal(states[5]["momentum"]["buf"], w + 3)
    assert states[6]["centered"]["grad_avg"] == "None" and states[6]["momentum"] == "None"
    np.testing.assert_array_equal(states[6]["centered"]["avg"], w[1])


def test_an_adan_record_loads_field_by_field(tmp_path):
    b = np.linspace(0, 1, 4, dtype="<f4")
    item = {id_text(9): v1(1, {"momentum": {"time": 3, "exp_avg": Data(b), "exp_avg_sq": Data(b * 2),
                                            "exp_avg_diff": Data(b * 3), "neg_pre_grad": Data(-b)}})}
    write_record(tmp_path, "adan", item, Settings())
    assert main(["migrate", str(tmp_path), "-q"]) == 0
    with open_store(tmp_path / "adan.bpk") as store:
        assert store.scalars == {"9.__rank": {"UInt": 1}, "9.momentum.time": {"UInt": 3}}
        state = load_like_burn(store, ADAN)[9]["momentum"]
    assert state["time"] == 3
    for field, expected in (("exp_avg", b), ("exp_avg_sq", b * 2), ("exp_avg_diff", b * 3), ("neg_pre_grad", -b)):
        np.testing.assert_array_equal(state[field], expected)
