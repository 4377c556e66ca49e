"""Burn records at their edges (engine/formats/burn_record/): the nesting limit where it stands, and the words of
what is refused, each on a real record file written by Burn's rules (burn_record_writers).

Promises (README "Migrating from Burn's recorders" and "Limits"; the audit of issue 25):
- an optimizer's record comes out as current Burn loads it, its values as scalars ->
  here::test_an_optimizer_state_is_read_to_the_last_level_the_limit_allows
- a record nested deeper than Burn's 128 levels is refused, naming where ->
  here::test_an_optimizer_state_is_read_to_the_last_level_the_limit_allows
- Burn 0.13 to 0.21 records, bools included (0.21's bool storage: Native, U8, U32) ->
  here::test_a_burn_0_21_bin_bool_reads_its_storage, here::test_a_bool_storage_burn_does_not_have_is_refused
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine import open_store
from tests.refusals import refusal

from burn_record_writers import DTYPES_0_16, Bincode, Settings, id_text


def nested(levels: int, leaf):
    for _ in range(levels):
        leaf = [leaf]
    return leaf


def json_record(path, item) -> object:
    path.write_text(json.dumps({"metadata": Settings(recorder="PrettyJson").metadata(), "item": item}))
    return path


def test_an_optimizer_state_is_read_to_the_last_level_the_limit_allows(tmp_path):
    """The state sits one level under its parameter id: 126 lists under its field are the most 128 levels hold."""
    deepest = json_record(tmp_path / "ok.json", {id_text(42): {"V1": {"Rank1": {"x": nested(126, 1.5)}}}})
    with open_store(deepest) as store:
        assert store.scalars["42." + ".".join(["x"] + ["0"] * 126)] == {"Float": 1.5}
        assert store.scalars["42.__rank"] == {"UInt": 1}
    deeper = json_record(tmp_path / "deep.json", {id_text(42): {"V1": {"Rank1": {"x": nested(127, 1.5)}}}})
    assert refusal(deeper) == "deep.json: the record is nested deeper than 128 levels at 42.x.0.0.0.0.0.0..."


def bool_bin_record(path, store_index: int, *, fixed: bool, version: str = "0.21.0"):
    """A Bin record of one bool parameter [1, 0, 1] stored as ``BOOL_STORES[store_index]`` (Burn 0.21's
    ``DType::Bool(BoolStore)``: the variant index, then the store's)."""
    codec = Bincode(Settings(version=version, recorder="Bin", fixed=fixed))
    raw = np.array([1, 0, 1], "<u4" if store_index >= 2 else "<u1").tobytes()
    path.write_bytes(codec.record({}) + codec.text(id_text(3)) + codec.uint(len(raw)) + raw + codec.uint(1)
                     + codec.uint(3) + codec.uint(DTYPES_0_16.index("Bool"), 4) + codec.uint(store_index, 4))
    return path


@pytest.mark.parametrize("fixed", [False, True], ids=["bincode2", "bincode1"])
@pytest.mark.parametrize(("store_index", "dtype", "nbytes"), [(0, "BOOL", 3), (1, "BOOL(U8)", 3), (2, "BOOL(U32)", 12)])
def test_a_burn_0_21_bin_bool_reads_its_storage(tmp_path, fixed, store_index, dtype, nbytes):
    """From Burn 0.21 on a Bin record's bool carries its storage after the variant; U32 bools are 4 bytes each."""
    with open_store(bool_bin_record(tmp_path / "m.bin", store_index, fixed=fixed)) as store:
        (entry,) = store.entries
        assert (entry.name, str(entry.dtype), entry.nbytes, entry.param_id) == ("param.0", dtype, nbytes, 3)
        assert store.read("param.0").tolist() == [True, False, True]


def test_a_bool_storage_burn_does_not_have_is_refused(tmp_path):
    path = bool_bin_record(tmp_path / "m.bin", 3, fixed=False)
    assert refusal(path) == ("m.bin: parameter 0 at byte 130 (id 0c00000000000): bool storage index 3 is not Native, "
                             "U8 or U32")
