"""Burnpack files Burn would refuse, refused in their exact words and at their exact boundaries
(engine/formats/burnpack.py, and ``mapped._checked_types`` for shapes and offsets): a file too short for its header,
a wrong magic number, the tensor limit, param ids Burn cannot hold, scalars of the wrong kind, a quantized tensor
that does not fit, and shapes or offsets that are not whole numbers. Without these a user would read a message that
names the wrong tensor or no file, or get a file opened that Burn itself refuses.

Each test opens a real file laid out by hand as Burn lays it out (CBOR by cbor2) and asserts the whole message
or the values read, so a changed word, a dropped file name or a limit moved by one is caught.

Promises (README, "Formats": a header that breaks the format's rules is refused with one line naming the file,
the tensor and what is wrong) -> tests:
- a shape that is no array, or holds anything but a whole number from 0 up, is refused naming that tensor
  -> test_a_shape_of_the_wrong_type_is_refused_naming_its_tensor
- offsets that are not whole numbers from 0 up are refused naming that tensor, not an earlier one at offset 0
  -> test_bad_data_offsets_are_refused_naming_their_tensor
- a shape past 64 dimensions is refused naming that tensor, not an earlier scalar or 64-dimension one
  -> test_too_many_dimensions_are_refused_naming_their_tensor
- a dimension of 0 is a shape (an empty tensor), and so are no dimensions (a scalar); a 0 is not what is refused
  -> test_empty_and_scalar_shapes_open, test_a_zero_dimension_is_not_the_shape_refused
"""

from __future__ import annotations

import struct

import cbor2
import numpy as np
import pytest

from engine import open_store
from engine.formats import burnpack
from tests.helpers.formats_burnpack_files import burn_file, write
from tests.helpers.formats_quantized_files import f32, gen1, i8
from tests.helpers.formats_quantized_files import write as write_quantized
from tests.refusals import refusal

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
    """The limit lowered to 3, so the boundary costs milliseconds, not 100,000 descriptors per run
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


GOOD = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize(("shape", "shown"), [
    (5, "5"), ("ab", "'ab'"), ({"a": 1}, "{'a': 1}"), (None, "None"), ([1, "2"], "[1, '2']"), ([True], "[True]"),
    ([1.0], "[1.0]"), ([-1], "[-1]"), ([[2]], "[[2]]"),
], ids=["number", "text", "map", "null", "text dim", "bool dim", "float dim", "negative", "nested"])
def test_a_shape_of_the_wrong_type_is_refused_naming_its_tensor(tmp_path, shape, shown) -> None:
    """The good tensor comes first: the refusal must name the bad one, told apart by its shape alone."""
    bad = {"dtype": "F32", "shape": shape, "data_offsets": [8, 8]}
    path = write(tmp_path, burn_file({"good": GOOD, "bad": bad}, bytes(8)))
    assert refusal(path) == f"m.bpk: tensor 'bad' has an invalid shape {shown}"


def test_empty_and_scalar_shapes_open(tmp_path) -> None:
    tensors = {"empty": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]},
               "scalar": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}
    with open_store(write(tmp_path, burn_file(tensors, np.float32(1.5).tobytes()))) as store:
        assert store.entry("empty").shape == (0, 3) and store.read("empty").shape == (0, 3)
        assert store.entry("scalar").shape == () and store.read("scalar").tolist() == 1.5


def test_a_zero_dimension_is_not_the_shape_refused(tmp_path) -> None:
    """An empty tensor listed before a bad one: a dimension of 0 is whole and not negative."""
    tensors = {"empty": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},
               "bad": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 0]}}
    assert refusal(write(tmp_path, burn_file(tensors, b""))) == "m.bpk: tensor 'bad' has an invalid shape [2, -1]"


@pytest.mark.parametrize(("offsets", "shown"), [
    ([8, 16.0], "[8, 16.0]"), ([8.0, 16], "[8.0, 16]"), ([16, -8], "[16, -8]"), ([-8, 16], "[-8, 16]"),
    (["8", 16], "['8', 16]"), ([8, None], "[8, None]"),
], ids=["float end", "float start", "negative end", "negative start", "text", "null"])
def test_bad_data_offsets_are_refused_naming_their_tensor(tmp_path, offsets, shown) -> None:
    """The good tensor starts at 0 and comes first (its param_id unset): only the bad one's offsets are wrong."""
    bad = {"dtype": "F32", "shape": [2], "data_offsets": offsets}
    path = write(tmp_path, burn_file({"good": GOOD, "bad": bad}, bytes(16)))
    assert refusal(path) == f"m.bpk: tensor 'bad' has invalid data_offsets {shown}"


@pytest.mark.parametrize("first", [[], [1] * 64], ids=["scalar", "64 dimensions"])
def test_too_many_dimensions_are_refused_naming_their_tensor(tmp_path, first) -> None:
    tensors = {"first": {"dtype": "F32", "shape": first, "data_offsets": [0, 4]},
               "wide": {"dtype": "F32", "shape": [1] * 65, "data_offsets": [4, 8]}}
    assert refusal(write(tmp_path, burn_file(tensors, bytes(8)))) == (
        "m.bpk: tensor 'wide' has a shape no array can hold (65 dimensions; the limits are 64 dimensions, each under "
        "2**64, and 2**59 elements)")
