"""Bin records' parameters as the scanner finds them (engine/formats/burn_record/bincode.py ``_Scanner`` and
record.py ``Metadata.dtype_variants``, ``BurnRecordStore.entry_iter_bytes``; the whole run's survivors of session
8), each on a real record file written by Burn's rules (burn_record_writers).

Promises (README "Limits": the Bin dtype index is read with the variant order of the record's Burn version, Flex32
from 0.16; "Migrating from Burn's recorders": ids that are no u64 are kept, a Bin record's parameters are found in
record order; bad input is one line naming the file) ->
- Burn 0.14 and 0.15 read the dtype index with the table without Flex32, 0.16 with it (a Bool is a Bool on each
  side of the boundary) -> ``test_a_bool_reads_as_bool_with_its_versions_dtype_table``
- a record of more tensors than the limit is refused in words, one of exactly the limit is read ->
  ``test_the_tensor_limit_of_a_bin_record_is_exact``
- a TensorData record's id that is no u64 (an old UUID, a 13-character id with the padding bit set) is kept as
  ``burn.param_id.<name>`` metadata -> ``test_an_id_that_is_no_u64_is_kept_as_metadata``
- a mapped parameter streams in pieces of the size asked ->
  ``test_a_mapped_parameter_streams_in_pieces_of_the_size_asked``
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine import open_store
from engine.formats.burn_record import bincode
from tests.refusals import refusal

from burn_record_writers import Param, Settings, id_text, write_record


@pytest.mark.parametrize("version", ["0.14.0", "0.15.0", "0.16.0"])
@pytest.mark.parametrize("fixed", [False, True], ids=["bincode2", "bincode1"])
def test_a_bool_reads_as_bool_with_its_versions_dtype_table(tmp_path: Path, version: str, fixed: bool) -> None:
    """Bool is index 12 before 0.16 (13 is QFloat) and 13 from 0.16 on (12 is U8): the other table's type at
    either index is U8 or QFloat, so only the version's own table reads it as Bool."""
    mask = np.array([True, False, True])
    path = write_record(tmp_path, "mask", {"mask": Param(id_text(9), mask)},
                        Settings(version=version, recorder="Bin", fixed=fixed))
    with open_store(path) as store:
        assert (str(store.entries[0].dtype), store.read("param.0").tolist()) == ("BOOL", [True, False, True])


def params(count: int) -> dict[str, Param]:
    return {f"p{i}": Param(id_text(i), np.full(2, i, "<f4")) for i in range(count)}


def test_the_tensor_limit_of_a_bin_record_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit is lowered so a small real record sits exactly on it (the store's own limit is left as it is)."""
    monkeypatch.setattr(bincode, "MAX_TENSORS", 3)
    s = Settings(recorder="Bin")
    with open_store(write_record(tmp_path, "three", params(3), s)) as store:
        assert store.names == ["param.0", "param.1", "param.2"]
        assert store.read("param.2").tolist() == [2.0, 2.0]
    assert refusal(write_record(tmp_path, "four", params(4), s)) == "four.bin: more than 3 tensors, over the limit"


@pytest.mark.parametrize("fixed", [False, True], ids=["bincode2", "bincode1"])
def test_an_id_that_is_no_u64_is_kept_as_metadata(tmp_path: Path, fixed: bool) -> None:
    uuid = "0b6a1c2e-1f3d-4a5b-9c8d-7e6f5a4b3c2d"
    item = {"a": Param(uuid, np.arange(4, dtype="<f4")), "b": Param("vvvvvvvvvvvvv", np.ones(2, "<f4")),
            "c": Param(id_text(42), np.zeros(1, "<f4"))}
    path = write_record(tmp_path, "m", item, Settings(version="0.14.0", recorder="Bin", fixed=fixed))
    with open_store(path) as store:
        assert [e.param_id for e in store.entries] == [None, None, 42]
        kept = {k: v for k, v in store.metadata.items() if k.startswith("burn.param_id.")}
        assert kept == {"burn.param_id.param.0": uuid, "burn.param_id.param.1": "vvvvvvvvvvvvv"}


def test_a_mapped_parameter_streams_in_pieces_of_the_size_asked(tmp_path: Path) -> None:
    values = np.arange(6, dtype="<f4")
    path = write_record(tmp_path, "m", {"w": Param(id_text(5), values)}, Settings(recorder="Bin"))
    with open_store(path) as store:
        assert store.byte_range("param.0") is not None  # mapped from the file, not decoded into memory
        assert [bytes(piece) for piece in store.iter_bytes("param.0", 8)] == \
            [values[0:2].tobytes(), values[2:4].tobytes(), values[4:6].tobytes()]
