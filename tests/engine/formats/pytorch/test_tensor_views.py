"""Every number a pickle claims about a tensor, checked word for word (a forged view must never read
bytes outside its storage): engine/formats/
pytorch/tensors.py's refusals, and its limits at their edges (lowered so a test can reach them).

Promises (README, "PyTorch files", "Limits") -> tests:
- bad input is one line naming the file and what is wrong -> test_a_forged_view_is_refused_in_one_line
- views stay inside their storage; repeating views stay small; all tensors together may claim at most 64 times
  the file plus 1 GiB -> test_a_view_that_ends_its_storage_reads, test_the_broadcast_limit_is_exact,
  test_the_total_limit_is_exact
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.helpers.pytorch_checkpoints import Storage, Tensor, legacy_checkpoint, zip_checkpoint

from engine.formats import open_store
from engine.formats.pytorch import tensors
from tests.refusals import refusal

FOUR = struct.pack("<4f", 1, 2, 3, 4)


def one(tmp_path: Path, storage: object, offset: object = 0, size: object = (4,), stride: object = (1,)) -> Path:
    return zip_checkpoint(tmp_path / "v.pt", {"w": Tensor(storage, offset, size, stride)}, {"0": FOUR})


FORGED = {
    "past the end": (Storage("0", 4), 1, (4,), (1,),
                     "v.pt: tensor 'w' (F32 [4], offset 1, stride [1]) reaches byte 20 of its storage, which has 16"),
    "strided past": (Storage("0", 4), 0, (2, 2), (1, 3),
                     "v.pt: tensor 'w' (F32 [2, 2], offset 0, stride [1, 3]) reaches byte 20 of its storage, which has 16"),
    "rank": (Storage("0", 4), 0, (2, 2), (1,), "v.pt: a tensor has size [2, 2] but stride [1]"),
    "not a list": (Storage("0", 4), 0, "abc", (1,), "v.pt: a tensor size 'abc' is not a list of at most 64 numbers"),
    "too many dims": (Storage("0", 4), 0, (1,) * 65, (1,) * 65,
                      f"v.pt: a tensor size {(1,) * 65!r:.120} is not a list of at most 64 numbers"),
    "negative stride": (Storage("0", 4), 0, (2,), (-1,),
                        "v.pt: stride -1 is not a non-negative whole number (of 64 bits at most)"),
    "bool size": (Storage("0", 4), 0, (True,), (1,),
                  "v.pt: size True is not a non-negative whole number (of 64 bits at most)"),
    "wide stride": (Storage("0", 4), 0, (2,), (1 << 70,),
                    "v.pt: stride a 71-bit number is not a non-negative whole number (of 64 bits at most)"),
    "stride 2**63": (Storage("0", 4), 0, (2,), (1 << 63,),
                     f"v.pt: stride {1 << 63} is not a non-negative whole number (of 64 bits at most)"),
    "negative offset": (Storage("0", 4), -1, (2,), (1,),
                        "v.pt: storage offset -1 is not a non-negative whole number (of 64 bits at most)"),
    "float offset": (Storage("0", 4), 1.0, (2,), (1,),
                     "v.pt: storage offset 1.0 is not a non-negative whole number (of 64 bits at most)"),
    "not a storage": (7, 0, (2,), (1,), "v.pt: a tensor's storage is int, not a storage reference"),
    "huge": (Storage("0", 4), 0, (1 << 62, 4), (4, 1), "v.pt: a tensor of size [4611686018427387904, 4] is larger "
                                                       "than any array can be"),
    "untyped": (Storage("0", 4, kind=torch.storage.TypedStorage), 0, (4,), (1,),
                "v.pt: storage type torch.storage.TypedStorage does not say its element type"),
    "bool key": (Storage(True, 4), 0, (4,), (1,),
                 "v.pt: storage reference ('storage', torch.FloatStorage, True, 'cpu', 4) has an invalid key or location"),
    "wide numel": (Storage("0", 1 << 64), 0, (4,), (1,),
                   "v.pt: storage 0 size a 65-bit number is not a non-negative whole number (of 64 bits at most)"),
}


@pytest.mark.parametrize("case", list(FORGED))
def test_a_forged_view_is_refused_in_one_line(tmp_path: Path, case: str) -> None:
    storage, offset, size, stride, message = FORGED[case]
    assert refusal(one(tmp_path, storage, offset, size, stride)) == message


def test_a_stride_under_2_63_on_a_dim_of_one_reads(tmp_path: Path) -> None:
    """A dim of size 1 never steps: its stride (the largest int64) is never multiplied into an offset."""
    with open_store(one(tmp_path, Storage("0", 4), 1, (1, 3), ((1 << 63) - 1, 1))) as store:
        assert store.read("w").tolist() == [[2.0, 3.0, 4.0]]


def test_a_view_that_ends_its_storage_reads(tmp_path: Path) -> None:
    with open_store(one(tmp_path, Storage("0", 4), 2, (2,), (1,))) as store:
        assert store.read("w").tolist() == [3.0, 4.0]
    with open_store(one(tmp_path, Storage("0", 4), 0, (2, 2), (1, 2))) as store:
        assert store.read("w").tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_a_bare_storage_reads_as_its_elements(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "s.pt", {"s": Storage("0", 4)}, {"0": FOUR})
    with open_store(path) as store:
        assert store.entry("s").shape == (4,) and store.read("s").tolist() == [1.0, 2.0, 3.0, 4.0]


def test_the_broadcast_limit_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stride-0 view may repeat its storage up to MAX_BROADCAST_BYTES (or the storage's own size)."""
    monkeypatch.setattr(tensors, "MAX_BROADCAST_BYTES", 64)
    with open_store(one(tmp_path, Storage("0", 4), 0, (16,), (0,))) as store:
        assert store.read("w").tolist() == [1.0] * 16
    assert refusal(one(tmp_path, Storage("0", 4), 0, (17,), (0,))) == (
        "v.pt: tensor 'w' repeats its storage's values into 68 bytes, over the limit of 64")
    monkeypatch.setattr(tensors, "MAX_BROADCAST_BYTES", 4)
    with open_store(one(tmp_path, Storage("0", 4), 0, (4,), (0,))) as store:  # 16 bytes: the storage's own size
        assert store.read("w").tolist() == [1.0] * 4


def test_the_total_limit_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """All tensors together: at most MAX_LOGICAL_RATIO times the file's bytes plus MAX_LOGICAL_EXTRA (0 here)."""
    monkeypatch.setattr(tensors, "MAX_LOGICAL_EXTRA", 0)

    def views(floats: int) -> Path:
        """One storage viewed twice with stride 0, ``floats`` elements claimed in all (the file's size does not
        change with the count while both halves take two-byte pickle ints)."""
        half = floats // 2
        return zip_checkpoint(tmp_path / "t.pt", {"a": Tensor(Storage("0", 4), 0, (half,), (0,)),
                                                  "b": Tensor(Storage("0", 4), 0, (floats - half,), (0,))},
                              {"0": FOUR})

    file_size = views(1000).stat().st_size
    limit = tensors.MAX_LOGICAL_RATIO * file_size
    allowed = limit // 4
    with open_store(views(allowed)) as store:
        assert store.path.stat().st_size == file_size
        assert sum(store.entry(name).nbytes for name in store.names) == allowed * 4
    path = views(allowed + 1)
    assert path.stat().st_size == file_size and (allowed + 1) * 4 > limit
    assert refusal(path) == (f"t.pt: the tensors claim {(allowed + 1) * 4} bytes in all, over the limit of {limit} "
                             f"({tensors.MAX_LOGICAL_RATIO} times the file's {file_size} bytes, plus 1 GiB): views "
                             "that repeat their storage's values")


def test_legacy_view_metadata_must_be_a_triple(tmp_path: Path) -> None:
    path = legacy_checkpoint(tmp_path / "l.pt", {"w": Tensor(Storage("0", 4, view="x"), 0, (1,), (1,))},
                             {"0": (4, FOUR)})
    assert refusal(path) == "l.pt: storage 0 has invalid view metadata 'x'"
    path = legacy_checkpoint(tmp_path / "n.pt", {"w": Tensor(Storage("0", 4, view=("v", -1, 1)), 0, (1,), (1,))},
                             {"0": (4, FOUR)})
    assert refusal(path) == "n.pt: view offset -1 is not a non-negative whole number (of 64 bits at most)"


def test_legacy_view_offsets_count_elements_of_the_root_type(tmp_path: Path) -> None:
    longs = np.array([5, -6, 7, 8], "<i8").tobytes()
    view = Storage("0", 4, kind=torch.LongStorage, view=("v", 1, 2))
    root = Storage("0", 4, kind=torch.LongStorage)
    path = legacy_checkpoint(tmp_path / "l.pt", {"all": Tensor(root, 0, (4,), (1,)), "v": Tensor(view, 0, (2,), (1,))},
                             {"0": (4, longs)})
    with open_store(path) as store:
        assert store.read("v").tolist() == [-6, 7]
