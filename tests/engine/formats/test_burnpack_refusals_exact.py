"""Burnpack refusals and limits, word for word and at their exact boundaries (mutants of engine/formats/burnpack.py).

Each test opens a real file laid out by hand as Burn lays it out (CBOR by cbor2) and asserts the whole message
or the values read, so a changed word, a dropped file name or a limit moved by one is caught.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import cbor2
import numpy as np

from engine import open_store
from engine.formats import burnpack
from tests.refusals import refusal

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quantized_files import f32, gen1, i8  # noqa: E402
from quantized_files import write as write_quantized  # noqa: E402

F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
VALUES = np.array([1.5, -2.25], "<f4")


def burnpack_bytes(meta: dict, data: bytes, *, magic: bytes = b"NRUB") -> bytes:
    """Magic, version 1, metadata length, CBOR, zero padding to 256, then the data section."""
    raw = cbor2.dumps(meta)
    head = magic + struct.pack("<HI", 1, len(raw)) + raw
    return head + bytes(-len(head) % 256) + data


def test_a_file_shorter_than_the_header_names_the_10_byte_header(tmp_path):
    path = tmp_path / "m.bpk"
    path.write_bytes(b"NRUB\x01")
    assert refusal(path) == "m.bpk: file is truncated: the 10-byte header needs bytes 0..10 but the file has 5"


def test_a_wrong_magic_number_opened_as_burnpack_is_named(tmp_path):
    """The registry's sniffing turns such a file away first; Burnpack's own open says what it found."""
    path = tmp_path / "x.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": F32}}, VALUES.tobytes(), magic=b"NRUX"))
    assert refusal(path, burnpack.open) == "x.bpk: not a Burnpack file (wrong magic number)"


def tensors_file(tmp_path, count: int):
    """``count`` empty U8 tensors (Burn's limit counts descriptors, not bytes)."""
    tensors = {f"t{i}": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(count)}
    path = tmp_path / f"n{count}.bpk"
    path.write_bytes(burnpack_bytes({"tensors": tensors}, b""))
    return path


def test_exactly_the_tensor_limit_opens_and_one_more_is_refused_by_name(tmp_path, monkeypatch):
    """The limit lowered to 3, so the boundary costs milliseconds, not 100,000 descriptors per mutant run
    (test_burnpack.py's test_more_tensors_than_burn_allows_is_refused_before_reading_them checks Burn's 100,000)."""
    monkeypatch.setattr(burnpack, "MAX_TENSORS", 3)
    with open_store(tensors_file(tmp_path, 3)) as store:
        assert [e.name for e in store.entries] == ["t0", "t1", "t2"]
    assert refusal(tensors_file(tmp_path, 4)) == "n4.bpk: 4 tensors, over Burn's limit of 3"


def test_a_negative_param_id_is_refused_with_its_value(tmp_path):
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": {**F32, "param_id": -1}}}, VALUES.tobytes()))
    assert refusal(path) == "m.bpk: tensor 'w' has an invalid param_id -1: Burn stores a whole number from 0 to 2**64 - 1"


def test_a_param_id_of_2_64_never_reaches_the_descriptor_check(tmp_path):
    """CBOR's widest integer is 64 bits; a bignum is refused as metadata (why the upper bound is only a guard)."""
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": {**F32, "param_id": 2**64}}}, VALUES.tobytes()))
    assert refusal(path) == "m.bpk: metadata is not valid: CBOR integer wider than 64 bits (Burn writes none)"


def test_a_scalar_of_the_wrong_kind_is_shown_as_stored(tmp_path):
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": {"w": F32}, "scalars": {"s": {"Int": 1.5}}}, VALUES.tobytes()))
    assert refusal(path) == "m.bpk: scalar 's' is not one of Int, UInt, Float, Bool: {'Int': 1.5}"


def test_a_quantized_tensor_that_does_not_fit_is_refused_after_a_dense_one(tmp_path):
    """The size check looks past dense tensors (and schemes no one decodes) to every quantized one."""
    path = write_quantized(tmp_path, {"dense": ("F32", [2], f32(1.0, 2.0)),
                                      "w": ({"QFloat": gen1()}, [4], i8(1, 2, 3, 4, 5, 6, 7, 8, 9))})
    message = refusal(path)
    assert message.startswith("q.bpk: tensor 'w' has 9 bytes, but Q8S, F32 tensor scale") and "needs 8" in message


def test_every_plain_spelling_reads_as_burn_wrote_it(tmp_path):
    """The plain dtypes go through a table; its entries must be the dtypes the spellings name."""
    arrays = {"F64": np.array([1.5, -2.0], "<f8"), "I16": np.array([-3, 4], "<i2"), "U32": np.array([5, 6], "<u4"),
              "Bool": np.array([True, False])}
    tensors, data = {}, b""
    for spelling, values in arrays.items():
        data += bytes(-len(data) % 256)
        raw = values.astype(np.uint8).tobytes() if spelling == "Bool" else values.tobytes()
        tensors[spelling] = {"dtype": spelling, "shape": [2], "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    path = tmp_path / "m.bpk"
    path.write_bytes(burnpack_bytes({"tensors": tensors}, data))
    with open_store(path) as store:
        for spelling, values in arrays.items():
            read = store.read(spelling)
            assert read.dtype == values.dtype and read.tolist() == values.tolist()
