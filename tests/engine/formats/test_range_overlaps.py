"""Data ranges a header states, refused word for word by the precise pass (mapped._explain_ranges):
a user told which tensors overlap, or where a gap is, can find the fault in the file.

A SafeTensors buffer must be tiled exactly; a Burnpack's tensors may leave gaps (alignment) but never overlap.
Each test opens a real file laid out by hand (CBOR by cbor2, JSON by json) and asserts the whole message, so a
range sorted by the wrong key, a neighbour wrongly named or a file name dropped is caught.

Promise -> test:
- bad input is one line naming the file (and the tensor) ->
  test_a_tensor_starting_inside_a_longer_one_overlaps_it,
  test_a_quantized_range_that_ends_before_it_starts_is_refused_naming_file_and_tensor,
  test_overlapping_burnpack_tensors_are_named_both,
  test_an_empty_tensor_is_never_named_as_the_one_overlapped
- Burnpack tensors may sit back to back -> test_back_to_back_burnpack_tensors_do_not_overlap
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import cbor2

from tests.helpers.formats_quantized_files import gen1
from tests.refusals import refusal


def safetensors_file(path: Path, header: dict, data: bytes) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def burnpack_file(path: Path, tensors: dict, data: bytes) -> Path:
    """Magic, version 1, metadata length, CBOR, zero padding to 256, then the data section."""
    raw = cbor2.dumps({"tensors": tensors})
    head = b"NRUB" + struct.pack("<HI", 1, len(raw)) + raw
    path.write_bytes(head + bytes(-len(head) % 256) + data)
    return path


def f32(start: int, count: int) -> dict:
    return {"dtype": "F32", "shape": [count], "data_offsets": [start, start + 4 * count]}


def test_a_tensor_starting_inside_a_longer_one_overlaps_it(tmp_path: Path) -> None:
    """Ranges are walked in order of where they start: 'b' (bytes 5..8) comes after 'a' (0..10), inside it."""
    header = {"a": {"dtype": "U8", "shape": [10], "data_offsets": [0, 10]},
              "b": {"dtype": "U8", "shape": [3], "data_offsets": [5, 8]}}
    path = safetensors_file(tmp_path / "m.safetensors", header, bytes(10))
    assert refusal(path) == "m.safetensors: tensor 'b' overlaps the previous tensor (starts at 5, expected 10)"


def test_a_quantized_range_that_ends_before_it_starts_is_refused_naming_file_and_tensor(tmp_path: Path) -> None:
    """A quantized tensor's size is taken as stated (no dtype x shape to check it against), so the range
    check is the one that sees its end before its start."""
    tensors = {"q": {"dtype": {"QFloat": gen1()}, "shape": [4], "data_offsets": [8, 0]}}
    path = burnpack_file(tmp_path / "q.bpk", tensors, bytes(8))
    assert refusal(path) == "q.bpk: tensor 'q' has a range that ends (0) before it starts (8)"


def test_overlapping_burnpack_tensors_are_named_both(tmp_path: Path) -> None:
    path = burnpack_file(tmp_path / "m.bpk", {"a": f32(0, 2), "b": f32(4, 2)}, bytes(12))
    assert refusal(path) == "m.bpk: tensors 'a' and 'b' overlap (at byte 4)"


def test_back_to_back_burnpack_tensors_do_not_overlap(tmp_path: Path) -> None:
    """'b' starts where 'a' ends: no overlap; the file is refused for 'c', which runs past the data."""
    path = burnpack_file(tmp_path / "m.bpk", {"a": f32(0, 2), "b": f32(8, 2), "c": f32(16, 2)}, bytes(16))
    assert refusal(path) == "m.bpk: file is truncated or its header is wrong: tensor 'c' ends at byte 24, past the end of the data (16 bytes)"


def test_an_empty_tensor_is_never_named_as_the_one_overlapped(tmp_path: Path) -> None:
    """'e' holds no bytes (at byte 4, inside 'a'); 'b' (8..16) overlaps 'a' (0..16), not 'e'."""
    tensors = {"a": f32(0, 4), "e": f32(4, 0), "b": f32(8, 2)}
    path = burnpack_file(tmp_path / "m.bpk", tensors, bytes(16))
    assert refusal(path) == "m.bpk: tensors 'a' and 'b' overlap (at byte 8)"
