"""The opened record (engine/formats/burn_record/record.py ``BurnRecordStore``; the whole run's survivors of
session 8): its tensor limit at the exact count, a shape no array can hold refused naming the file, the record's
metadata kept on the store, and a temporary copy that is gone before the store closes.

Promises (README "Migrating from Burn's recorders": the record's metadata (Burn version, recorder, precision
settings, float and int types) is kept; "Limits": `.gz` records are decompressed once to a temporary file; bad input
is one line naming the file) ->
- a record of more tensors than the limit is refused naming the file, one of exactly the limit opens ->
  ``test_the_stores_tensor_limit_is_exact``
- a shape no array can hold is refused naming the file -> ``test_a_shape_no_array_can_hold_is_refused_naming_the_file``
- the record's metadata is kept -> ``test_the_records_metadata_is_kept_on_the_store``
- the temporary copy goes with the store, even when something else removed it first ->
  ``test_a_copy_removed_while_the_store_is_open_closes_quietly``
"""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest

from engine import open_store
from engine.formats.burn_record import record
from tests.refusals import refusal

from burn_record_writers import Settings

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
