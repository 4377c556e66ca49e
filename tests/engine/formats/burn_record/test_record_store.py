"""The opened record (engine/formats/burn_record/record.py ``BurnRecordStore``) and records at their edges: the
tensor limit at the exact count, a shape no array can hold refused naming the file, the record's metadata kept on
the store, a temporary copy gone before the store closes, the nesting limit where it stands, and the bool storages
Burn 0.21 has. Without these a user would lose the record's Burn version and settings, be left a temporary copy,
or get bools misread.

Promises (README "Migrating from Burn's recorders": the record's metadata (Burn version, recorder, precision
settings, float and int types) is kept; "Limits": `.gz` records are decompressed once to a temporary file; bad input
is one line naming the file) ->
- a record of more tensors than the limit is refused naming the file, one of exactly the limit opens ->
  ``test_the_stores_tensor_limit_is_exact``
- a shape no array can hold is refused naming the file -> ``test_a_shape_no_array_can_hold_is_refused_naming_the_file``
- the record's metadata is kept -> ``test_the_records_metadata_is_kept_on_the_store``
- the temporary copy goes with the store, even when something else removed it first ->
  ``test_a_copy_removed_while_the_store_is_open_closes_quietly``
- an optimizer's record comes out as current Burn loads it, its values as scalars ->
  here::test_an_optimizer_state_is_read_to_the_last_level_the_limit_allows
- a record nested deeper than Burn's 128 levels is refused, naming where ->
  here::test_an_optimizer_state_is_read_to_the_last_level_the_limit_allows
- Burn 0.13 to 0.21 records, bools included (0.21's bool storage: Native, U8, U32) ->
  here::test_a_burn_0_21_bin_bool_reads_its_storage, here::test_a_bool_storage_burn_does_not_have_is_refused
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from engine import open_store
from engine.formats.burn_record import record
from tests.helpers.formats_burn_record_writers import (
    DTYPES_0_16,
    Bincode,
    Settings,
    id_text,
)
from tests.refusals import refusal

TWO = np.array([1.5, -2.0], "<f4").tobytes()


def packed(item: Any) -> bytes:
    return msgpack.packb({"metadata": Settings().metadata(), "item": item}, use_bin_type=True)


def write(tmp_path: Path, raw: bytes, name: str = "r.mpk") -> Path:
    path = tmp_path / name
    path.write_bytes(raw)
    return path


def tensors(count: int) -> dict[str, Any]:
    return {f"w{i}": {"bytes": TWO, "shape": [2], "dtype": "F32"} for i in range(count)}


def test_the_stores_tensor_limit_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit is lowered so a small real record sits exactly on it."""
    monkeypatch.setattr(record, "MAX_TENSORS", 3)
    with open_store(write(tmp_path, packed(tensors(3)))) as store:
        assert store.names == ["w0", "w1", "w2"]
    assert refusal(write(tmp_path, packed(tensors(4)), "four.mpk")) == "four.mpk: 4 tensors, over the limit of 3"


def test_a_shape_no_array_can_hold_is_refused_naming_the_file(tmp_path: Path) -> None:
    """No bytes, as a zero dimension asks, yet 2**80 elements past it."""
    item = {"w": {"bytes": b"", "shape": [0, 2**40, 2**40], "dtype": "F32"}}
    assert refusal(write(tmp_path, packed(item))) == (
        "r.mpk: tensor 'w' has a shape no array can hold (3 dimensions; the limits are 64 dimensions, each under "
        "2**64, and 2**59 elements)")


def test_the_records_metadata_is_kept_on_the_store(tmp_path: Path) -> None:
    s = Settings(version="0.17.0", half=True)
    raw = msgpack.packb({"metadata": s.metadata(), "item": tensors(1)}, use_bin_type=True)
    with open_store(write(tmp_path, raw)) as store:
        assert store.burn_metadata == record.Metadata(**s.metadata())
        assert (store.burn_metadata.version, store.burn_metadata.recorder) == ("0.17.0", "NamedMpkFileRecorder")


def test_a_copy_removed_while_the_store_is_open_closes_quietly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """As a cleaner of the temporary folder may do: closing still works, and leaves nothing."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path = write(tmp_path, gzip.compress(packed(tensors(1))), "r.mpk.gz")
    store = open_store(path)
    (copy,) = scratch.iterdir()
    assert store.read("w0").tolist() == [1.5, -2.0]
    copy.unlink()
    store.close()
    assert store.closed and list(scratch.iterdir()) == []


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
