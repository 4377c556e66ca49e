"""The tar layout's ``storages`` member, read as it streams: storages are skipped past (their bytes are read
only when a tensor is), so a storage bigger than the read-ahead, an empty one, one that ends the member and one
that runs past it each decide what the tensors after them read. Files are real tar archives in torch's old
layout (built as tests/engine/formats/pytorch/test_pytorch_tar_layout.py builds them).

Promise -> test (README, "PyTorch files": the tar layout of torch before 0.1.10 is read; bad input is refused
with one line naming the file and what is wrong):
- tensors after a big or an empty storage read their own bytes -> test_tensors_after_big_and_empty_storages_read_their_own_bytes
- burn-store's fixtures, whose member ends after the last storage, read -> test_a_storages_member_may_end_with_its_last_storage
- a storage that runs past its member is refused -> test_a_storage_running_past_its_member_is_refused_saying_where
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.errors import FormatError
from engine.formats import open_store
from tests.helpers.pytorch_tar_archives import (
    FLOATS,
    Ref,
    checkpoint,
    dump,
    storages,
    tensors,
)

BIG = np.arange(20_000, dtype="<f4")  # 80,000 bytes: past the stream's 64 KiB read-ahead


def test_tensors_after_big_and_empty_storages_read_their_own_bytes(tmp_path: Path) -> None:
    records = [("1", "cpu", torch.FloatStorage, BIG.size, BIG.tobytes()), ("2", "cpu", torch.FloatStorage, 0, b""),
               ("3", "cpu", torch.FloatStorage, 8, FLOATS.tobytes())]
    path = checkpoint(tmp_path / "mixed.pt", storages=storages(records),
                      tensors=tensors([("10", "3", 1, (3,), (1,), 5), ("11", "1", 1, (2,), (1,), 19_998)]),
                      pickle=dump({"w": Ref("10"), "big": Ref("11")}, refs=True))
    with open_store(path) as store:
        assert store.read("w").tobytes() == FLOATS[5:8].tobytes()
        assert store.read("big").tobytes() == BIG[19_998:].tobytes()


def test_a_storages_member_may_end_with_its_last_storage(tmp_path: Path) -> None:
    body = storages()
    without_views = body[:-len(dump([]))]  # burn-store's fixtures write no views list
    with open_store(checkpoint(tmp_path / "fixture.pt", storages=without_views)) as store:
        assert store.read("w").tobytes() == FLOATS[2:8].tobytes()


def test_a_storage_running_past_its_member_is_refused_saying_where(tmp_path: Path) -> None:
    short = storages([("1", "cpu", torch.FloatStorage, 9, FLOATS.tobytes())])[:-len(dump([]))]
    path = checkpoint(tmp_path / "short.pt", storages=short)
    start = len(dump(1)) + len(dump(("1", "cpu", torch.FloatStorage))) + 8  # counted in the member, as each is
    with pytest.raises(FormatError) as info:
        open_store(path)
    assert str(info.value) == (f"short.pt: the tar 'storages' member is truncated: 36 bytes at byte {start} "
                               "run past its end")

