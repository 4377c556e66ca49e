"""Big-endian scalars and strided views streamed a block of rows at a time, read with the values torch reads:
engine/formats/pytorch/store.py's ``_to_little_endian`` and ``_row_blocks``, on files real torch wrote.

Promises (README, "PyTorch files") -> tests:
- names, dtypes, shapes and values equal ``torch.load(f, map_location="cpu", weights_only=True)``'s, big-endian
  files included (a zero-dimensional tensor too) -> test_big_endian_scalars_read_as_torch_loads_them
- a tensor that is not a plain byte range of the file (a transposed or sliced view) streams a block of rows at a
  time, never more than the piece asked for unless one row is larger
  -> test_a_strided_view_streams_a_row_block_at_a_time
- a tensor that is a plain byte range of the file streams straight from the file in pieces of the size asked
  for, whatever its rows (no copy of the whole tensor through numpy)
  -> test_a_plain_range_streams_from_the_file_in_pieces_of_the_size_asked
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from tests.helpers.pytorch_checkpoints import big_endian_copy, raw_bytes, torch_flat

from engine.formats import open_store

SCALARS = {"f32": torch.tensor(3.5), "i16": torch.tensor(-2, dtype=torch.int16),
           "c64": torch.tensor(1.5 - 2j, dtype=torch.complex64), "f64": torch.tensor(-0.25, dtype=torch.float64),
           "empty": torch.empty(0, 3)}


def test_big_endian_scalars_read_as_torch_loads_them(tmp_path: Path) -> None:
    source = tmp_path / "little.pt"
    torch.save(SCALARS, source)
    units = [t.element_size() // (2 if t.is_complex() else 1) for t in SCALARS.values()]
    target = big_endian_copy(source, tmp_path / "big.pt", units)
    by_torch = torch_flat(torch.load(target, weights_only=True))
    with open_store(target) as store:
        assert store.metadata["byteorder"] == "big"
        for name, tensor in SCALARS.items():
            value = store.read(name)
            assert value.shape == tuple(tensor.shape) and value.dtype == tensor.numpy().dtype, name
            assert np.ascontiguousarray(value).tobytes() == raw_bytes(tensor) == raw_bytes(by_torch[name]), name
            assert b"".join(bytes(c) for c in store.iter_bytes(name, 2)) == raw_bytes(tensor), name
        assert store.read("f32").item() == 3.5 and store.read("c64").item() == 1.5 - 2j


def test_a_strided_view_streams_a_row_block_at_a_time(tmp_path: Path) -> None:
    base = torch.arange(24, dtype=torch.uint8).reshape(4, 6)
    views = {"t": base.t(), "col": base[:, 1], "first": base[:1, ::2], "rows": base[1:3, 1:5]}
    torch.save(views, tmp_path / "views.pt")
    with open_store(tmp_path / "views.pt") as store:
        assert all(store.byte_range(name) is None for name in views)  # none is a plain range of the file
        pieces = {name: [bytes(piece) for piece in store.iter_bytes(name, 2)] for name in views}
        assert {name: [len(p) for p in got] for name, got in pieces.items()} == {
            "t": [4] * 6,  # a row (4 bytes) is larger than the piece: one row at a time
            "col": [2, 2],  # 1-byte rows: two to a piece
            "first": [3],  # one row of 3
            "rows": [4, 4]}
        for name, view in views.items():
            assert b"".join(pieces[name]) == raw_bytes(view), name
        assert [bytes(p) for p in store.iter_bytes("t", 12)] == [raw_bytes(base.t()[:3]), raw_bytes(base.t()[3:])]


def test_a_plain_range_streams_from_the_file_in_pieces_of_the_size_asked(tmp_path: Path) -> None:
    """Rows of 40 bytes, pieces of 64: read from the file's bytes, pieces cut across rows (a block of rows would
    be 40 bytes, one row to a piece); the last piece is what is left."""
    weight = torch.arange(80, dtype=torch.float32).reshape(8, 10)
    torch.save({"w": weight}, tmp_path / "plain.pt")
    with open_store(tmp_path / "plain.pt") as store:
        assert store.byte_range("w") is not None
        pieces = [bytes(piece) for piece in store.iter_bytes("w", 64)]
    assert [len(piece) for piece in pieces] == [64] * 5
    assert b"".join(pieces) == raw_bytes(weight)
