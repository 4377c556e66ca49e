"""The tar layout burn-store's fixtures use: ``sys_info``, ``pickle`` and ``storages``, no ``tensors``."""

from __future__ import annotations

import io
import pickle
import struct

import numpy as np
import pytest
import torch

from engine import FormatError, export, open_store
from tests.helpers.pytorch_tar_rebuilds import write_tar


def test_reads_the_tar_layout_without_a_tensors_member(tmp_path):
    tensors = {"weight": np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], "<f4"), "bias": np.array([0.01, 0.02], "<f4"),
               "double_tensor": np.array([1.111, 2.222], "<f8"), "int_tensor": np.array([10, -20, 30, 40], "<i8")}
    path = write_tar(tmp_path / "tar_multi.tar", tensors)
    with open_store(path) as store:
        assert store.format == "pytorch" and store.version == "tar"
        assert store.names == list(tensors)
        for name, array in tensors.items():
            entry = store.entry(name)
            assert entry.shape == array.shape and entry.dtype.numpy == array.dtype
            np.testing.assert_array_equal(store.read(name), array)
        out = export(store.entries, tmp_path / "out.bpk")
    with open_store(out) as converted:
        for name, array in tensors.items():
            np.testing.assert_array_equal(converted.read(name), array)


def test_a_tuple_naming_a_storage_the_archive_lacks_is_refused(tmp_path):
    table = io.BytesIO()
    pickle.dump(0, table, protocol=2)
    path = write_tar(tmp_path / "t.tar", {"w": np.ones(3, "<f4")}, storages=table.getvalue())
    with pytest.raises(FormatError, match="storage '1000'.*does not hold"):
        open_store(path)


def test_a_tuple_claiming_more_than_its_storage_holds_is_refused(tmp_path):
    table = io.BytesIO()
    pickle.dump(1, table, protocol=2)
    table.write(pickle.dumps(("1000", "cpu", torch.FloatStorage), protocol=2) + struct.pack("<q", 2) + bytes(8))
    path = write_tar(tmp_path / "t.tar", {"w": np.ones(3, "<f4")}, storages=table.getvalue())
    with pytest.raises(FormatError, match="storage 1000 holds 8 bytes"):
        open_store(path)
