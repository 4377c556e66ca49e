"""An export never writes a Burnpack its own reader would refuse for its scalars.

Promises (README, "Burnpack scalars survive Burnpack to Burnpack; the library's export refuses a scalar that
is not one of Burn's Int, UInt, Float, Bool, before writing a byte") -> tests:
- a scalar that is not one of Burn's four kinds is refused before a byte is written, naming it
  -> test_a_bare_number_is_refused_naming_the_scalar_and_nothing_is_written
- the four kinds are written and read back as given -> test_each_kind_is_written_and_read_back
- SafeTensors has no scalars, so none are checked there -> test_safetensors_ignores_scalars
"""
from __future__ import annotations

import numpy as np
import pytest

from engine import ArrayStore, ExportError, export, open_store

ONE = ArrayStore({"w": np.arange(3, dtype=np.float32)}).entries


def test_a_bare_number_is_refused_naming_the_scalar_and_nothing_is_written(tmp_path):
    dest = tmp_path / "m.bpk"
    with pytest.raises(ExportError) as refused:
        export(ONE, dest, scalars={"lr": {"Float": 0.5}, "step": 7})
    assert str(refused.value) == ("m.bpk: scalar 'step' is not one of Int, UInt, Float, Bool: 7; "
                                  "nothing was written")
    assert list(tmp_path.iterdir()) == []


def test_a_true_that_claims_to_be_an_int_is_refused(tmp_path):
    with pytest.raises(ExportError, match=r"scalar 'flag' is not one of Int, UInt, Float, Bool"):
        export(ONE, tmp_path / "m.bpk", scalars={"flag": {"Int": True}})


def test_each_kind_is_written_and_read_back(tmp_path):
    scalars = {"epoch": {"UInt": 3}, "delta": {"Int": -2}, "lr": {"Float": 0.25}, "done": {"Bool": False}}
    with open_store(export(ONE, tmp_path / "m.bpk", scalars=scalars)) as store:
        assert store.scalars == scalars


def test_safetensors_ignores_scalars(tmp_path):
    with open_store(export(ONE, tmp_path / "m.safetensors", scalars={"step": 7})) as store:
        assert [e.name for e in store.entries] == ["w"] and store.scalars == {}
