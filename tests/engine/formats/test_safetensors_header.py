"""SafeTensors headers validated as strictly as the official reader, at their exact limits and in exact words
(engine/formats/safetensors.py): each bad header is written by hand and refused with the file's name and what is
wrong; each good one is read as the official reader reads it. Without these a user could open a file the official
reader refuses, or be refused one it reads, or read a message that names neither the file nor the fault.

Promises (README, "SafeTensors": validated as strictly as the official reader, bad input refused with one line
naming the file and what is wrong) -> tests:
- a header length of 2**63 or more is over the 100 MB limit, said with its own (unsigned) size, not a negative one
  -> test_a_header_length_from_2_63_up_is_refused_as_over_the_limit
- tensors whose ranges run past the file's end are refused even when they would tile a buffer as long as the
  file plus its header -> test_ranges_running_past_the_files_end_are_refused_saying_so
- ``__metadata__`` whose values are not text is refused in exact words
  -> test_metadata_that_is_not_text_to_text_is_refused_in_exact_words
- a shape that is a number, not a list, is refused as an invalid shape (also when data_offsets holds a list)
  -> test_a_shape_that_is_a_number_is_refused_as_an_invalid_shape,
  test_a_number_shape_with_a_list_in_data_offsets_is_refused_as_an_invalid_shape
- a name given twice is refused however many colons its text holds (the fast path's colon count is only a filter)
  -> test_a_name_full_of_colons_given_twice_is_refused
- a field, a name or ``__metadata__`` given twice is refused (a field as the official reader refuses it), also when the
  second is spelled with an escape (``"\u0064type"`` is ``"dtype"``), never read as the last one
  -> test_a_repeat_spelled_with_an_escape_is_refused_as_the_official_reader_refuses_it,
  test_the_official_reader_refuses_a_field_repeated_with_an_escape_too
- a shard index naming one tensor twice in its weight_map is refused (which shard holds it would be a guess)
  -> test_a_shard_index_naming_a_tensor_twice_is_refused
- a repeat inside an unknown field (a repeated unknown field, or a key repeated in an object it holds) is read as
  the official reader reads it, which skips unknown fields unread, with or without an escape or __metadata__
  elsewhere in the header; a key repeated in __metadata__ keeps its last value there too
  -> test_repeats_inside_unknown_fields_are_read_as_the_official_reader_reads_them,
  test_a_field_repeated_beside_an_unknown_dtype_is_refused_for_the_repeat_as_the_official_reader_does
- a repeat is named before any other fault of the header (a field missing elsewhere, an unknown dtype), as the
  official reader names it first -> test_a_repeat_is_named_before_a_missing_field_as_the_official_reader_names_it,
  test_a_field_repeated_beside_an_unknown_dtype_is_refused_for_the_repeat_as_the_official_reader_does
- NaN, Infinity and -Infinity are not JSON: refused wherever they stand (a known field or one the official
  reader skips), as the official reader refuses them -> test_nan_and_infinity_are_refused_as_not_json
- a number past float64's range is not JSON to the official reader ("number out of range"): refused wherever it
  stands, also in a field that reader skips; a number within range there is read as that reader reads it
  -> test_a_number_out_of_float64_range_is_refused_as_the_official_reader_refuses_it,
  test_a_309_digit_integer_past_float64_is_refused, test_every_spelling_of_a_huge_exponent_is_refused,
  test_a_number_just_within_float64_range_in_a_skipped_field_is_read
- a field the reader does not know is held to the header's 64 levels too (the official reader refuses past 128),
  and one nested within them is read, however many tensors the header lists
  -> test_a_deep_unknown_field_is_refused_at_the_headers_limit,
  test_an_unknown_field_of_nested_objects_among_a_hundred_tensors_is_held_to_the_limit
- a file of one dtype as the official writer writes it is listed by the few-pass build (docstring of
  ``_entries_as_written``), with the entries the column checks give, each at its own offset and shape
  -> test_a_one_dtype_file_from_the_official_writer_is_built_in_few_passes_with_the_column_checks_entries
- a file is taken for SafeTensors by a header length from 1 up, then ``{``: a one-byte header ``{`` is read as one
  and refused as not JSON, while a header length of 0 (no header at all: the ``{`` after it is data) matches no
  format -> test_a_one_byte_header_is_read_as_safetensors_and_refused_as_not_json,
  test_a_header_length_of_0_matches_no_format
- a JSON object is taken for a sharded index only when it names a ``weight_map``: a model's config.json matches no
  format -> test_a_json_object_without_a_weight_map_matches_no_format
- a JSON integer is refused by its count of digits before Python parses it: past 309 digits as out of float64's
  range, past 4,300 as too long to be real, whatever Python's own cap
  -> test_a_long_integer_is_refused_by_its_digits_whatever_pythons_own_cap
- "SafeTensors: headers up to 100 MB" -> test_safetensors_header_of_exactly_100_mb_is_not_over_the_limit
- each tensor is read from its own range, in any order the header lists them ->
  test_safetensors_reads_each_tensor_from_its_own_range
- values nested past 64 levels are refused with their depth ->
  test_safetensors_values_nested_past_64_levels_are_refused_with_their_depth
- the header is compact UTF-8 JSON, as the official writer writes it ->
  test_the_safetensors_header_is_compact_utf8_json_as_the_official_writer_writes_it
"""

from __future__ import annotations

import json
import struct
import sys

import numpy as np
import pytest
import safetensors
import safetensors.numpy

from engine import open_store
from engine.formats import safetensors as reader
from tests.helpers.formats_safetensors_files import write
from tests.helpers.formats_small_files import VALUES, safetensors_file
from tests.refusals import refusal

U8 = {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}


def test_a_header_length_from_2_63_up_is_refused_as_over_the_limit(tmp_path) -> None:
    path = tmp_path / "huge.safetensors"
    path.write_bytes(struct.pack("<Q", 2**63) + b"{}")
    assert refusal(path) == "huge.safetensors: header claims 9223372036854775808 bytes, over the limit of 100000000"


def test_ranges_running_past_the_files_end_are_refused_saying_so(tmp_path) -> None:
    # An 8-byte buffer after a 64-byte header: the file has 80 bytes; the tensor claims 8 + 2 * 72 = 152.
    raw = b'{"a": {"dtype": "U8", "shape": [152], "data_offsets": [0, 152]}}'
    path = write(tmp_path, raw.ljust(64), bytes(8))
    assert path.stat().st_size == 80
    assert refusal(path) == "m.safetensors: file is truncated or its header is wrong: tensor 'a' ends at byte 152, past the end of the data (8 bytes)"


def test_metadata_that_is_not_text_to_text_is_refused_in_exact_words(tmp_path) -> None:
    path = write(tmp_path, {"a": U8, "__metadata__": {"k": 1}}, b"x")
    assert refusal(path) == "m.safetensors: __metadata__ must map text to text"


def test_a_shape_that_is_a_number_is_refused_as_an_invalid_shape(tmp_path) -> None:
    path = write(tmp_path, {"a": {**U8, "shape": 5}}, b"x")
    assert refusal(path) == "m.safetensors: tensor 'a' has an invalid shape 5"


def test_a_number_shape_with_a_list_in_data_offsets_is_refused_as_an_invalid_shape(tmp_path) -> None:
    path = write(tmp_path, {"a": {**U8, "shape": 5, "data_offsets": [[0], 1]}}, b"x")
    assert refusal(path) == "m.safetensors: tensor 'a' has an invalid shape 5"


def test_a_name_full_of_colons_given_twice_is_refused(tmp_path) -> None:
    tensor = b'{"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}'
    path = write(tmp_path, b'{"XX:XXXX:XX": ' + tensor + b', "XX:XXXX:XX": ' + tensor + b"}", b"x")
    assert refusal(path) == "m.safetensors: header names 'XX:XXXX:XX' twice"


def test_a_one_dtype_file_from_the_official_writer_is_built_in_few_passes_with_the_column_checks_entries() -> None:
    raw = safetensors.numpy.save({"a": np.zeros((2, 3), np.float32), "b": np.ones(5, np.float32)})
    (size,) = struct.unpack_from("<Q", raw)
    header = reader._HEADER.decode(raw[8:8 + size])
    names, descriptors = list(header), list(header.values())
    quick = reader._entries_as_written(names, descriptors, 8 + size, len(raw) - 8 - size)
    assert quick == reader._entries_in_columns("f", names, descriptors, 8 + size, len(raw) - 8 - size)
    assert [(e.name, e.dtype.name, e.shape, e.nbytes, e.offset) for e in quick] == [
        ("a", "F32", (2, 3), 24, 8 + size), ("b", "F32", (5,), 20, 8 + size + 24)]


@pytest.mark.parametrize(("header", "repeated"), [
    (rb'{"a": {"dtype": "U8", "\u0064type": "I8", "shape": [1], "data_offsets": [0, 1]}}', "dtype"),
    (rb'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "\u0061": {"dtype": "I8", "shape": [1], '
     rb'"data_offsets": [0, 1]}}', "a"),
    (rb'{"__metadata__": {"k": "1"}, "\u005f_metadata__": {"k": "2"}, "a": {"dtype": "U8", "shape": [1], '
     rb'"data_offsets": [0, 1]}}', "__metadata__")])
def test_a_repeat_spelled_with_an_escape_is_refused_as_the_official_reader_refuses_it(tmp_path, header: bytes,
                                                                                       repeated: str) -> None:
    path = write(tmp_path, header, b"x")
    assert refusal(path) == f"m.safetensors: header names {repeated!r} twice"


def test_the_official_reader_refuses_a_field_repeated_with_an_escape_too(tmp_path) -> None:
    path = write(tmp_path, rb'{"a": {"dtype": "U8", "\u0064type": "I8", "shape": [1], "data_offsets": [0, 1]}}', b"x")
    with pytest.raises(Exception, match="duplicate field `dtype`"):
        safetensors.numpy.load_file(path)


def test_a_shard_index_naming_a_tensor_twice_is_refused(tmp_path) -> None:
    index = tmp_path / "model.safetensors.index.json"
    index.write_text('{"weight_map": {"a": "model-1.safetensors", "a": "model-2.safetensors"}}')
    assert refusal(index) == "model.safetensors.index.json: index names 'a' twice"


NESTED = b'"extra": {"n": 1, "n": 2}'


B = b'"b": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}'


@pytest.mark.parametrize("header", [
    b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], ' + NESTED + b'}, ' + B + b'}',
    b'{"__metadata__": {"k": "1"}, "a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], ' + NESTED + b'}, '
    + B + b'}',
    rb'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": [{"m": 1, "m": 1}]}, "\u0062": '
    rb'{"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}',
    rb'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "x": 1, "x": 2}, "\u0062": '
    rb'{"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}',
    rb'{"__metadata__": {"dtype": "1", "dtype": "2"}, "a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, '
    rb'"\u0062": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}'])
def test_repeats_inside_unknown_fields_are_read_as_the_official_reader_reads_them(tmp_path, header: bytes) -> None:
    path = write(tmp_path, header, b"xy")
    with safetensors.safe_open(path, "np") as official:
        expected = ({name: official.get_tensor(name).tobytes() for name in official.keys()},
                    official.metadata() or {})
    store = open_store(path)
    assert ({entry.name: store.read(entry.name).tobytes() for entry in store.entries}, store.metadata) == expected


def test_a_field_repeated_beside_an_unknown_dtype_is_refused_for_the_repeat_as_the_official_reader_does(
        tmp_path) -> None:
    """The unknown dtype sends the header past msgspec to the reference path, with __metadata__ in the count."""
    path = write(tmp_path, b'{"__metadata__": {"k": "1"}, "a": {"dtype": "U8", "dtype": "U8", "shape": [1], '
                           b'"data_offsets": [0, 1]}, "b": {"dtype": "BAD", "shape": [0], "data_offsets": [1, 1]}}',
                 b"x")
    with pytest.raises(Exception, match="duplicate field `dtype`"):
        safetensors.numpy.load_file(path)
    assert refusal(path) == "m.safetensors: header names 'dtype' twice"


def test_a_repeat_is_named_before_a_missing_field_as_the_official_reader_names_it(tmp_path) -> None:
    """``dtype`` shows twice among two descriptors, as often as when none repeats: the quick count cannot see it."""
    path = write(tmp_path, b'{"a": {"dtype": "U8", "dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, '
                           b'"b": {"shape": [1], "data_offsets": [1, 2]}}', b"xy")
    with pytest.raises(Exception, match="duplicate field `dtype`"):
        safetensors.numpy.load_file(path)
    assert refusal(path) == "m.safetensors: header names 'dtype' twice"


@pytest.mark.parametrize(("value", "header"), [
    ("NaN", b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": NaN}}'),
    ("Infinity", b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": [1, Infinity]}}'),
    ("-Infinity", b'{"a": {"dtype": "U8", "shape": [-Infinity], "data_offsets": [0, 1]}}')])
def test_nan_and_infinity_are_refused_as_not_json(tmp_path, value: str, header: bytes) -> None:
    path = write(tmp_path, header, b"x")
    with pytest.raises(Exception, match="invalid JSON in header"):
        safetensors.numpy.load_file(path)
    assert refusal(path) == f"m.safetensors: header is not valid JSON: {value} is not a JSON value"


def test_a_one_byte_header_is_read_as_safetensors_and_refused_as_not_json(tmp_path) -> None:
    path = write(tmp_path, b"{", b"")
    assert refusal(path) == ("m.safetensors: header is not valid JSON: Expecting property name enclosed in double "
                             "quotes at character 1")


def test_a_header_length_of_0_matches_no_format(tmp_path) -> None:
    path = write(tmp_path, b"", b"{}")
    assert refusal(path) == ("m.safetensors: not a Burnpack, SafeTensors, GGUF, ONNX, PyTorch file or Burn record (its first bytes "
                             "match none of them)")


def test_a_json_object_without_a_weight_map_matches_no_format(tmp_path) -> None:
    """A config.json beside the weights (opened by mistake) is no shard index: refused as no format, not read as one."""
    path = tmp_path / "config.json"
    path.write_bytes(b'{"model_type": "bert", "hidden_size": 768, "torch_dtype": "float32"}')
    assert refusal(path) == ("config.json: not a Burnpack, SafeTensors, GGUF, ONNX, PyTorch file or Burn record (its first bytes "
                             "match none of them)")


@pytest.mark.parametrize(("number", "why"), [
    (b"1e400", "a number is out of range (1e400)"), (b"-1E+309", "a number is out of range (-1E+309)"),
    (b"9" * 400, "a number is out of range (999999999999..., 400 digits)")])
def test_a_number_out_of_float64_range_is_refused_as_the_official_reader_refuses_it(tmp_path, number: bytes,
                                                                                    why: str) -> None:
    path = write(tmp_path, b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": ' + number + b'}}',
                 b"x")
    with pytest.raises(Exception, match="number out of range"):
        safetensors.numpy.load_file(path)
    assert refusal(path) == f"m.safetensors: header is not valid JSON: {why}"


@pytest.mark.parametrize("number", [b"1e308", b"-1.7e308", b"9" * 308, b"0.5e-400", b"1" + b"0" * 308])
def test_a_number_just_within_float64_range_in_a_skipped_field_is_read(tmp_path, number: bytes) -> None:
    path = write(tmp_path, b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": ' + number + b'}}',
                 b"x")
    assert list(safetensors.numpy.load_file(path)) == ["a"]
    with open_store(path) as store:
        assert [entry.name for entry in store.entries] == ["a"] and store.read("a").tobytes() == b"x"


def test_a_309_digit_integer_past_float64_is_refused(tmp_path) -> None:
    """2e308 written out: the fewest digits an integer past float64's largest value (1.8e308) can have."""
    number = b"2" + b"0" * 308
    path = write(tmp_path, b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": ' + number + b'}}',
                 b"x")
    with pytest.raises(Exception, match="number out of range"):
        safetensors.numpy.load_file(path)
    assert refusal(path) == ("m.safetensors: header is not valid JSON: a number is out of range "
                             "(200000000000..., 309 digits)")


@pytest.mark.parametrize(("depth", "refused"), [(60, False), (200, True)])
def test_a_deep_unknown_field_is_refused_at_the_headers_limit(tmp_path, depth: int, refused: bool) -> None:
    nested = b"[" * depth + b"]" * depth
    path = write(tmp_path, b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": ' + nested + b'}}',
                 b"x")
    if refused:
        with pytest.raises(Exception, match="recursion limit exceeded"):
            safetensors.numpy.load_file(path)
        assert refusal(path) == (f"m.safetensors: tensor 'a' is nested {depth + 2} levels deep in the header, over "
                                 "the limit of 64 (a header has 3)")
        return
    assert list(safetensors.numpy.load_file(path)) == ["a"]
    with open_store(path) as store:
        assert [entry.name for entry in store.entries] == ["a"]


def test_an_unknown_field_of_nested_objects_among_a_hundred_tensors_is_held_to_the_limit(tmp_path) -> None:
    """70 objects deep in one descriptor of 100: fewer extra brackets than the descriptors' own 300."""
    deep = b'{"x": ' * 70 + b"1" + b"}" * 70
    tensors = [f'"t{i}": {{"dtype": "U8", "shape": [1], "data_offsets": [{i}, {i + 1}]}}'.encode() for i in range(99)]
    path = write(tmp_path, b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [99, 100], "extra": ' + deep + b"}, "
                 + b", ".join(tensors) + b"}", bytes(100))
    assert refusal(path) == ("m.safetensors: tensor 'a' is nested 72 levels deep in the header, over the limit of 64 "
                             "(a header has 3)")


@pytest.mark.parametrize("number", [b"1e400", b"1e+400", b"1E400", b"1E+400"])
def test_every_spelling_of_a_huge_exponent_is_refused(tmp_path, number: bytes) -> None:
    path = write(tmp_path, b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": ' + number + b'}}',
                 b"x")
    with pytest.raises(Exception, match="number out of range"):
        safetensors.numpy.load_file(path)
    assert refusal(path) == f"m.safetensors: header is not valid JSON: a number is out of range ({number.decode()})"


@pytest.mark.parametrize(("digits", "why"), [
    (4_300, "header is not valid JSON: a number is out of range (999999999999..., 4300 digits)"),
    (4_301, "header holds a number too long to be real"),
    (2_000_000, "header holds a number too long to be real")])
def test_a_long_integer_is_refused_by_its_digits_whatever_pythons_own_cap(tmp_path, digits: int, why: str) -> None:
    """Digits are counted before ``int()`` parses them (quadratic in their count): the words stay those of Python's
    default cap of 4,300 digits, and a two-million-digit number is refused at once with the cap lifted."""
    path = write(tmp_path, b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1], "extra": ' + b"9" * digits
                 + b'}}', b"x")
    cap = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        assert refusal(path) == f"m.safetensors: {why}"
    finally:
        sys.set_int_max_str_digits(cap)


def test_safetensors_header_of_exactly_100_mb_is_not_over_the_limit(tmp_path):
    at_limit = tmp_path / "at.safetensors"
    at_limit.write_bytes(struct.pack("<Q", 100_000_000) + b"{}")
    over = tmp_path / "over.safetensors"
    over.write_bytes(struct.pack("<Q", 100_000_001) + b"{}")
    assert refusal(at_limit) == ("at.safetensors: file is truncated: the 100000000-byte header needs bytes "
                                 "8..100000008 but the file has 10")
    assert refusal(over) == "over.safetensors: header claims 100000001 bytes, over the limit of 100000000"


def test_safetensors_reads_each_tensor_from_its_own_range(tmp_path):
    values = {"b": np.array([7, -8], "<i2"), "a": np.array([1.5, 2.5, -3.0], "<f4"), "c": np.zeros((0, 3), "<f8")}
    header = {"__metadata__": {"k": "v"},
              "b": {"dtype": "I16", "shape": [2], "data_offsets": [12, 16]},
              "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
              "c": {"dtype": "F64", "shape": [0, 3], "data_offsets": [16, 16]}}
    path = safetensors_file(tmp_path / "m.safetensors", header, values["a"].tobytes() + values["b"].tobytes())
    with open_store(path) as store:
        assert store.names == ["a", "b", "c"] and store.metadata == {"k": "v"}
        for name, array in values.items():
            assert store.read(name).dtype == array.dtype and store.read(name).shape == array.shape
            assert store.read(name).tobytes() == array.tobytes()


def nested(depth: int, leaf: object = 1) -> object:
    """A list ``depth`` levels deep around ``leaf``."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("where, header", [
    ("__metadata__", lambda deep: {"__metadata__": deep}),
    ("tensor 'a'", lambda deep: {"a": deep}),
    ("tensor 'a'", lambda deep: {"a": {"dtype": "F32", "shape": deep, "data_offsets": [0, 0]}}),
])
def test_safetensors_values_nested_past_64_levels_are_refused_with_their_depth(tmp_path, where, header):
    """Nested 64 levels a value gets the plain refusal; 65 and more, the depth (the header's 2 levels added)."""
    path = safetensors_file(tmp_path / "m.safetensors", header(nested(65)), b"")
    assert refusal(path) == (f"m.safetensors: {where} is nested 67 levels deep in the header, over the limit of 64 "
                             "(a header has 3)")
    path = safetensors_file(tmp_path / "m.safetensors", header(nested(64)), b"")
    assert "levels deep in the header" not in refusal(path)


@pytest.mark.parametrize("descriptor, words", [
    ([1], "tensor 'a' needs dtype, shape and data_offsets"),
    ({"dtype": "F32", "shape": [2]}, "tensor 'a' needs dtype, shape and data_offsets"),
    ({"dtype": 5, "shape": [2], "data_offsets": [0, 8]}, "tensor 'a' has an unknown dtype 5"),
    ({"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}, "tensor 'a' has an unknown dtype 'F33'"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [0]}, "tensor 'a' has invalid data_offsets [0]"),
    ({"dtype": "F32", "shape": [2], "data_offsets": 8}, "tensor 'a' has invalid data_offsets 8"),
])
def test_safetensors_malformed_descriptors_are_refused_by_what_is_wrong(tmp_path, descriptor, words):
    path = safetensors_file(tmp_path / "m.safetensors", {"a": descriptor}, VALUES.tobytes())
    assert refusal(path) == f"m.safetensors: {words}"


def test_a_safetensors_f4_tensor_of_an_odd_count_is_not_whole_bytes(tmp_path):
    path = safetensors_file(tmp_path / "m.safetensors", {"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}},
                            bytes(2))
    assert refusal(path) == "m.safetensors: tensor 'w': F4 x [3] is not a whole number of bytes"


def raw_safetensors(path, header: bytes, data: bytes):
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def test_a_metadata_key_given_twice_keeps_the_last_as_the_official_reader_does(tmp_path):
    """An escaped name sends the header through the reference parser, which must agree with the official one."""
    path = raw_safetensors(tmp_path / "m.safetensors", b'{"__metadata__": {"k": "a", "k": "b"}, "a\\u00e9": '
                           b'{"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', VALUES[:1].tobytes())
    with open_store(path) as store:
        assert store.metadata == {"k": "b"} and store.names == ["a\u00e9"]
    with safetensors.safe_open(path, "np") as official:
        assert official.metadata() == {"k": "b"}


@pytest.mark.parametrize("header, words", [
    (b'{"a": {"dtype": "F32", "shape": [' + b"1" * 5000 + b'], "data_offsets": [0, 4]}}',
     "header holds a number too long to be real"),
    (b'{"a\\ud800": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',
     "header holds a lone surrogate ('\\ud800'), which is not text: the official reader refuses it"),
])
def test_safetensors_headers_no_reader_can_hold_are_refused_by_name(tmp_path, header, words):
    path = raw_safetensors(tmp_path / "m.safetensors", header, bytes(4))
    assert refusal(path) == f"m.safetensors: {words}"


def test_the_safetensors_header_is_compact_utf8_json_as_the_official_writer_writes_it(tmp_path):
    from engine import ArrayStore, export
    out = export(ArrayStore({"é": VALUES[:2], "b": VALUES[:1]}).entries, tmp_path / "m.safetensors",
                 metadata={"k": "v"})
    raw = out.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = raw[8:8 + size]
    expected = json.dumps({"__metadata__": {"producer": "store-studio", "k": "v"},
                           "é": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                           "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}},
                          separators=(",", ":"), ensure_ascii=False).encode()
    assert header.rstrip(b" ") == expected and (8 + size) % 8 == 0
