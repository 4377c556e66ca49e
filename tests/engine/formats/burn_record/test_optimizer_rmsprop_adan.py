"""RmsProp and Adan optimizer records keep their field names in current Burn's layout (README "Migrating from Burn's
recorders": "Adam, AdamW, SGD, AdaGrad, RmsProp and Adan states keep their field names"; the audit of issue 25).
test_optimizer_migration.py checks Adam, AdamW, SGD and AdaGrad; these are the other two, their state structs as
Burn's main declares them: RmsPropState/SquareAvgState/CenteredState/RmsPropMomentumState
(crates/burn-optim/src/optim/rmsprop.rs:144-151, :155-158, :195-200, :298-300) and
AdanState/AdaptiveNesterovMomentumState (adan.rs:58-60, :138-148), loaded as ``ModuleOptimizer::load_record`` does
(``load_like_burn``).

Promise -> test:
- a RmsProp record (centered, with momentum; and without either) loads field by field ->
  test_an_rmsprop_record_loads_field_by_field
- an Adan record loads field by field, its step counter a UInt scalar -> test_an_adan_record_loads_field_by_field
"""

from __future__ import annotations

import numpy as np

from engine import open_store
from engine.cli import main

from burn_record_writers import Data, Settings, Unit, id_text, write_record
from test_optimizer_migration import load_like_burn, v1

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
