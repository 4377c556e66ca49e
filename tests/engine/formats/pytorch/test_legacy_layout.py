"""The legacy layout (torch 0.1.10-1.5, ``_use_new_zipfile_serialization=False``), read as torch reads
it: byte order from sys_info, the storage key list walked in order, every refusal's whole sentence.

Promises (README, "PyTorch files", "Limits") -> tests:
- legacy files read, big-endian ones byteswapped -> test_a_big_endian_legacy_file_reads_its_values,
  test_a_little_endian_legacy_file_says_so, test_sys_info_without_a_byte_order_means_little_endian,
  test_two_views_of_one_storage_keep_their_own_ranges
- whole pickled modules: torch.save(model) names each module class -> test_only_a_four_part_module_id_names_a_module_class
- classes torch's safe loader refuses are named, wherever they sit -> test_a_class_in_sys_info_is_named_in_the_note
- bad input is one line naming the file and what is wrong -> test_refusals_name_the_file_and_the_fault,
  test_a_file_cut_inside_a_storage_count_says_which, test_a_view_past_its_root_is_refused_naming_both,
  test_the_legacy_protocol_must_be_1001
"""

from __future__ import annotations

import io
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
from tests.helpers.pytorch_checkpoints import (
    LEGACY_MAGIC,
    Storage,
    Tensor,
    checkpoint_pickle,
    legacy_head,
)

from engine.formats import open_store
from tests.refusals import refusal

FOUR = np.array([1.5, -2.0, 3.25, 4.0], dtype="<f4")


def legacy(path: Path, obj: object, keys: list, storages: list[tuple[int, bytes]], little: bool = True,
           order: str = "<") -> Path:
    """A legacy file with any key list and storage records (count in ``order``, then the bytes)."""
    body = legacy_head(little) + checkpoint_pickle(obj, legacy=True) + pickle.dumps(keys, protocol=2)
    body += b"".join(struct.pack(f"{order}q", count) + data for count, data in storages)
    path.write_bytes(body)
    return path


def one_tensor(key: str = "0") -> dict:
    return {"w": Tensor(Storage(key, 4), 0, (4,), (1,))}


def test_a_big_endian_legacy_file_reads_its_values(tmp_path: Path) -> None:
    path = legacy(tmp_path / "big.pt", one_tensor(), ["0"], [(4, FOUR.astype(">f4").tobytes())], little=False,
                  order=">")
    with open_store(path) as store:
        assert store.version == "legacy"
        assert store.metadata == {"byteorder": "big"}
        assert store.read("w").tolist() == [1.5, -2.0, 3.25, 4.0]


def test_a_little_endian_legacy_file_says_so(tmp_path: Path) -> None:
    path = legacy(tmp_path / "little.pt", one_tensor(), ["0"], [(4, FOUR.tobytes())])
    with open_store(path) as store:
        assert store.metadata == {"byteorder": "little"}
        assert store.read("w").tolist() == [1.5, -2.0, 3.25, 4.0]


def test_two_storages_are_walked_in_key_list_order(tmp_path: Path) -> None:
    obj = {"a": Tensor(Storage("0", 4), 0, (4,), (1,)), "b": Tensor(Storage("1", 2), 0, (2,), (1,))}
    path = legacy(tmp_path / "two.pt", obj, ["1", "0"],
                  [(2, np.array([7, 8], "<f4").tobytes()), (4, FOUR.tobytes())])
    with open_store(path) as store:
        assert store.read("a").tolist() == [1.5, -2.0, 3.25, 4.0]
        assert store.read("b").tolist() == [7.0, 8.0]


REFUSALS = {
    "twice": (one_tensor(), ["0", "0"], [(4, FOUR.tobytes())] * 2, "twice.pt: storage 0 is listed twice"),
    "unused": (one_tensor(), ["0", "9"], [(4, FOUR.tobytes())], "unused.pt: storage 9 is listed but never used"),
    "missing": ({"w": Tensor(Storage("0", 4), 0, (4,), (1,)), "v": Tensor(Storage("1", 1), 0, (1,), (1,))}, ["0"],
                [(4, FOUR.tobytes())], "missing.pt: storage 1 has no data (it is not in the storage key list)"),
    "count": (one_tensor(), ["0"], [(3, FOUR.tobytes())],
              "count.pt: storage 0 holds 3 elements but the checkpoint says 4"),
    "negative": (one_tensor(), ["0"], [(-4, FOUR.tobytes())],
                 "negative.pt: storage 0 holds -4 elements but the checkpoint says 4"),
    "short": (one_tensor(), ["0"], [(4, FOUR.tobytes()[:15])],
              "short.pt: file is truncated: it has {size} bytes, but a tensor storage of 16 bytes at byte {start} "
              "needs {end}"),
    "keys": (one_tensor(), ("0",), [(4, FOUR.tobytes())], "keys.pt: the legacy storage key list is not a list"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusals_name_the_file_and_the_fault(tmp_path: Path, case: str) -> None:
    obj, keys, storages, message = REFUSALS[case]
    path = legacy(tmp_path / f"{case}.pt", obj, keys, storages)
    size = path.stat().st_size
    assert refusal(path) == message.format(end=size + 1, size=size, start=size + 1 - 16)


def test_a_file_cut_inside_a_storage_count_says_which(tmp_path: Path) -> None:
    path = legacy(tmp_path / "cut.pt", one_tensor(), ["0"], [])
    size = path.stat().st_size
    path.write_bytes(path.read_bytes() + b"\x04\x00\x00\x00")  # half of storage 0's eight-byte count
    assert refusal(path) == (f"cut.pt: file is truncated: the size of storage 0 needs bytes {size}..{size + 8} "
                             f"but the file has {size + 4}")


def test_a_view_past_its_root_is_refused_naming_both(tmp_path: Path) -> None:
    view = Storage("0", 4, view=("v", 3, 2))  # elements 3..4 of a 4-element storage
    path = legacy(tmp_path / "view.pt", {"v": Tensor(view, 0, (1,), (1,))}, ["0"], [(4, FOUR.tobytes())])
    assert refusal(path) == "view.pt: storage view v reaches past the end of storage 0"


def test_a_view_that_ends_its_root_exactly_reads(tmp_path: Path) -> None:
    view = Storage("0", 4, view=("v", 2, 2))  # elements 2..3: the last two
    path = legacy(tmp_path / "edge.pt", {"v": Tensor(view, 0, (2,), (1,))}, ["0"], [(4, FOUR.tobytes())])
    with open_store(path) as store:
        assert store.read("v").tolist() == [3.25, 4.0]


def test_the_legacy_protocol_must_be_1001(tmp_path: Path) -> None:
    path = tmp_path / "proto.pt"
    path.write_bytes(pickle.dumps(LEGACY_MAGIC, protocol=2) + pickle.dumps(1000, protocol=2))
    assert refusal(path) == "proto.pt: legacy checkpoint protocol 1000 is not 1001"


def test_a_plain_pickle_is_its_own_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "plain.pt"
    path.write_bytes(pickle.dumps({"epoch": 3, "magic": LEGACY_MAGIC + 1}, protocol=2))
    with open_store(path) as store:
        assert store.version == "pickle" and store.metadata == {} and store.names == []
        assert store.values == {"epoch": 3, "magic": LEGACY_MAGIC + 1}


def test_a_plain_pickle_of_one_number_is_that_number(tmp_path: Path) -> None:
    """Only the legacy magic number (an int) starts a legacy file; any other number is a whole plain pickle."""
    path = tmp_path / "seven.pt"
    path.write_bytes(pickle.dumps(7, protocol=2))
    with open_store(path) as store:
        assert store.version == "pickle" and store.values == 7


def with_sys_info(path: Path, sys_info: object, data: bytes, order: str = "<") -> Path:
    """A legacy file of one 4-float tensor whose sys_info pickle is ``sys_info``."""
    head = b"".join(pickle.dumps(x, protocol=2) for x in (LEGACY_MAGIC, 1001, sys_info))
    body = head + checkpoint_pickle(one_tensor(), legacy=True) + pickle.dumps(["0"], protocol=2)
    path.write_bytes(body + struct.pack(f"{order}q", 4) + data)
    return path


def test_sys_info_without_a_byte_order_means_little_endian(tmp_path: Path) -> None:
    for name, sys_info in (("nokey.pt", {"protocol_version": 1001}), ("notadict.pt", [1001])):
        with open_store(with_sys_info(tmp_path / name, sys_info, FOUR.tobytes())) as store:
            assert store.metadata == {"byteorder": "little"}, name
            assert store.read("w").tolist() == [1.5, -2.0, 3.25, 4.0], name


def test_a_class_in_sys_info_is_named_in_the_note(tmp_path: Path) -> None:
    sys_info = {"little_endian": True, "by": Storage}  # a class of the tests: a placeholder, refused by torch
    with open_store(with_sys_info(tmp_path / "cls.pt", sys_info, FOUR.tobytes())) as store:
        assert store.foreign_classes == ("tests.helpers.pytorch_checkpoints.Storage",)


def test_two_views_of_one_storage_keep_their_own_ranges(tmp_path: Path) -> None:
    first = Storage("0", 4, view=("v1", 0, 2))
    second = Storage("0", 4, view=("v2", 2, 2))
    obj = {"a": Tensor(first, 0, (2,), (1,)), "b": Tensor(second, 0, (2,), (1,))}
    path = legacy(tmp_path / "views.pt", obj, ["0"], [(4, FOUR.tobytes())])
    with open_store(path) as store:
        assert store.read("a").tolist() == [1.5, -2.0]
        assert store.read("b").tolist() == [3.25, 4.0]


def with_pids(path: Path, pids: list) -> Path:
    """A legacy file whose checkpoint is a list of objects pickled as the given persistent ids."""

    class Pid:
        def __init__(self, pid: tuple) -> None:
            self.pid = pid

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj: object) -> object:
            return obj.pid if isinstance(obj, Pid) else None

    out = io.BytesIO()
    Pickler(out, protocol=2).dump([Pid(pid) for pid in pids])
    path.write_bytes(legacy_head() + out.getvalue() + pickle.dumps([], protocol=2))
    return path


def test_only_a_four_part_module_id_names_a_module_class(tmp_path: Path) -> None:
    """torch.save(model) writes ``("module", class, source file, source)``; anything else is a storage id."""
    with open_store(with_pids(tmp_path / "mod.pt", [("module", Storage, "m.py", "class Storage: ...")])) as store:
        assert store.values == ["tests.helpers.pytorch_checkpoints.Storage"]
    assert refusal(with_pids(tmp_path / "short.pt", [("module", Storage)])) == (
        "short.pt: persistent id ('module', tests.helpers.pytorch_checkpoints.Storage) is not a storage reference")
    assert refusal(with_pids(tmp_path / "other.pt", [("storage", Storage, "m.py", "src")])) == (
        "other.pt: persistent id ('storage', tests.helpers.pytorch_checkpoints.Storage, 'm.py', 'src') "
        "is not a storage reference")


def test_a_cut_pickle_names_which_of_the_legacy_pickles_it_was(tmp_path: Path) -> None:
    head = legacy_head() + checkpoint_pickle(one_tensor(), legacy=True)
    keys = tmp_path / "keys.pt"
    keys.write_bytes(head + pickle.dumps(["0"], protocol=2)[:-3])
    assert refusal(keys) == (f"keys.pt: the storage key list is truncated: it needs 1 bytes at byte "
                             f"{keys.stat().st_size} but only 0 remain")
    checkpoint = tmp_path / "ckpt.pt"
    checkpoint.write_bytes(head[:-5])
    assert refusal(checkpoint) == (f"ckpt.pt: the checkpoint pickle is truncated: it needs 1 bytes at byte "
                                   f"{checkpoint.stat().st_size} but only 0 remain")
