"""Forged numbers and broken containers: always a FormatError naming the problem, before any
large allocation; never an IndexError, KeyError, struct.error or BadZipFile."""

from __future__ import annotations

import pickle
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from engine.errors import FormatError
from engine.formats import open_store

from tests.helpers.pytorch_checkpoints import Storage, Tensor, legacy_checkpoint, legacy_head, zip_checkpoint

FOUR = struct.pack("<4f", 1, 2, 3, 4)


def test_hand_built_zip_checkpoint_reads(tmp_path: Path) -> None:
    s = Storage("0", 4)
    path = zip_checkpoint(tmp_path / "ok.pt", {"w": Tensor(s, 1, (3,), (1,))}, {"0": FOUR})
    with open_store(path) as store:
        np.testing.assert_array_equal(store.read("w"), [2, 3, 4])


@pytest.mark.parametrize(("offset", "size", "stride", "problem"), [
    (0, (5,), (1,), "reaches byte 20 of its storage, which has 16"),
    (3, (2,), (1,), "reaches byte 20"),
    (0, (2, 2), (1, 3), "reaches byte 20"),
    (0, (2 ** 40,), (0,), "repeats its storage's values into"),
    (0, (2,), (-1,), "not a non-negative whole number"),
    (-1, (2,), (1,), "not a non-negative whole number"),
    (0, (2, 2), (1,), "has size [2, 2] but stride [1]"),
    (0, "abc", (1,), "is not a list"),
    (0, tuple([1] * 65), tuple([1] * 65), "at most 64"),
])
def test_views_outside_their_storage_are_refused(tmp_path: Path, offset, size, stride, problem) -> None:
    path = zip_checkpoint(tmp_path / "bad.pt", {"w": Tensor(Storage("0", 4), offset, size, stride)}, {"0": FOUR})
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=problem.replace("[", r"\[").replace("]", r"\]")):
            open_store(path)
        assert tracemalloc.get_traced_memory()[1] < 50 << 20
    finally:
        tracemalloc.stop()


def test_storage_size_must_match_its_entry(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "big.pt", {"w": Tensor(Storage("0", 2 ** 60), 0, (4,), (1,))}, {"0": FOUR})
    with pytest.raises(FormatError, match="storage 0 holds 16 bytes but the checkpoint says"):
        open_store(path)


def test_missing_storage_entry(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "gone.pt", {"w": Tensor(Storage("7", 4), 0, (4,), (1,))}, {"0": FOUR})
    with pytest.raises(FormatError, match="storage 7 has no data/7 entry"):
        open_store(path)


def test_compressed_storage_is_refused(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "z.pt", {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}, {})
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ckpt/data/0", FOUR)
    with pytest.raises(FormatError, match="compressed"):
        open_store(path)


def test_zip_without_data_pkl(tmp_path: Path) -> None:
    path = tmp_path / "other.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hi")
    with pytest.raises(FormatError, match="no data.pkl"):
        open_store(path)


def test_bad_byteorder(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "bo.pt", {}, {}, byteorder="middle")
    with pytest.raises(FormatError, match="byteorder"):
        open_store(path)


@pytest.mark.parametrize("cut", [10, 100, 200, -30, -5])
def test_truncated_zip(tmp_path: Path, cut: int) -> None:
    whole = zip_checkpoint(tmp_path / "whole.pt", {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}, {"0": FOUR})
    path = tmp_path / "cut.pt"
    path.write_bytes(whole.read_bytes()[:cut])
    with pytest.raises(FormatError):
        open_store(path)


def test_storage_reference_that_is_not_one(tmp_path: Path) -> None:
    class Pid:
        pass

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", "FloatStorage", "0", "cpu", 4) if isinstance(obj, Pid) else None

    path = tmp_path / "pid.pt"
    with zipfile.ZipFile(path, "w") as archive:
        import io
        out = io.BytesIO()
        Pickler(out, protocol=2).dump({"w": Pid()})
        archive.writestr("a/data.pkl", out.getvalue())
    with pytest.raises(FormatError, match="not a torch storage class or dtype"):
        open_store(path)


def test_legacy_count_must_match(tmp_path: Path) -> None:
    path = legacy_checkpoint(tmp_path / "l.pt", {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}, {"0": (5, FOUR)})
    with pytest.raises(FormatError, match="storage 0 holds 5 elements but the checkpoint says 4"):
        open_store(path)


def test_legacy_storage_past_the_end(tmp_path: Path) -> None:
    path = legacy_checkpoint(tmp_path / "l.pt", {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}, {"0": (4, FOUR[:8])})
    with pytest.raises(FormatError, match=r"file is truncated: it has \d+ bytes, but a tensor storage of 16 bytes"):
        open_store(path)


def test_legacy_view_storages(tmp_path: Path) -> None:
    root = Storage("0", 4)
    view = Storage("0", 4, view=("v", 1, 2))  # elements 1..2 of storage 0, as torch < 0.4 wrote
    path = legacy_checkpoint(tmp_path / "v.pt", {"w": Tensor(root, 0, (4,), (1,)), "v": Tensor(view, 1, (1,), (1,))},
                             {"0": (4, FOUR)})
    with open_store(path) as store:
        np.testing.assert_array_equal(store.read("v"), [3])
    bad = Storage("0", 4, view=("v", 3, 2))
    path = legacy_checkpoint(tmp_path / "bad.pt", {"v": Tensor(bad, 0, (1,), (1,))}, {"0": (4, FOUR)})
    with pytest.raises(FormatError, match="storage view v reaches past the end of storage 0"):
        open_store(path)


def test_legacy_wrong_protocol(tmp_path: Path) -> None:
    path = tmp_path / "p.pt"
    path.write_bytes(pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(999, protocol=2))
    with pytest.raises(FormatError, match="protocol 999 is not 1001"):
        open_store(path)


def test_legacy_truncated_after_head(tmp_path: Path) -> None:
    path = tmp_path / "t.pt"
    path.write_bytes(legacy_head())
    with pytest.raises(FormatError, match="truncated"):
        open_store(path)


def test_plain_pickle_with_a_persistent_id(tmp_path: Path) -> None:
    path = tmp_path / "p.pt"
    path.write_bytes(b"\x80\x02X\x01\x00\x00\x00xQ.")
    with pytest.raises(FormatError, match="refers to outside data"):
        open_store(path)


def test_checkpoint_that_contains_itself(tmp_path: Path) -> None:
    """A list holding itself reads as torch reads it; a loop around a tensor would name it without end."""
    looped: list = []
    looped.append(looped)
    path = tmp_path / "loop.pt"
    path.write_bytes(pickle.dumps({"a": looped}, protocol=2))
    with open_store(path) as store:
        assert store.values == {"a": [{"$ref": "a"}]}
    import torch
    around: dict = {"w": torch.ones(2)}
    around["again"] = [around]
    torch.save({"a": around}, path)
    with pytest.raises(FormatError, match="contains itself at a.again.0: the tensors inside that loop"):
        open_store(path)


def test_exponential_sharing_is_cut_off(tmp_path: Path) -> None:
    node: list = [0]
    for _ in range(40):
        node = [node, node]  # pickles small (memo), walks 2**40 nodes
    path = tmp_path / "laughs.pt"
    path.write_bytes(pickle.dumps(node, protocol=2))
    with pytest.raises(FormatError, match="expands to .* over the limit"):
        open_store(path)


def test_deep_nesting_is_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "deep.pt"
    path.write_bytes(b"\x80\x02" + b"]" * 5000 + b"a" * 4999 + b".")
    with pytest.raises(FormatError, match="nested deeper than"):
        open_store(path)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_damaged_torch_files_fail_only_with_format_error(torch_files, tmp_path: Path, data) -> None:
    """Random damage to real legacy and tar files (no CRC to catch it first): a FormatError or a
    store whose every tensor reads, never another exception."""
    from tests.helpers.pytorch_checkpoints import tar_checkpoint
    sources = [torch_files[("nested", "legacy")], torch_files[("views", "legacy")], tar_checkpoint(tmp_path / "t.pt")[0]]
    raw = bytearray(sources[data.draw(st.integers(0, 2))].read_bytes())
    for _ in range(data.draw(st.integers(1, 6))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "damaged.pt"
    path.write_bytes(bytes(raw[:data.draw(st.integers(1, len(raw)))]))
    try:
        with open_store(path) as store:
            for name in store.names:
                if store.entry(name).dtype.numpy is not None:
                    store.read(name)
    except FormatError:
        pass
