"""Bin records (bincode, engine/formats/burn_record/bincode.py) laid out byte by byte as Burn's BinFileRecorder
writes them, in both encodings (bincode 2's varints, bincode 1's fixed widths), and their parameters as the scanner
finds them: each refusal in its own words, naming the parameter, its byte and its id; each limit at its exact
count; the template that names the parameters, checked shape by shape. Without these a user migrating a Bin record
would get parameters misread, misnamed or refused without saying where.

Promises (README "Migrating from Burn's recorders": a Bin record's parameters are param.0, param.1, ... unless a
file saved from the same model names them, in order, with every shape checked; "Limits": quantized tensors in
Bin records are refused):
- bad input is one line naming the file and where -> here::test_a_parameter_that_does_not_fit_is_refused_in_words,
  here::test_a_header_bincode_does_not_write_is_refused_in_words
- quantized tensors are refused -> here::test_a_parameter_that_does_not_fit_is_refused_in_words (quantized)
- a template names the parameters in order, every shape checked ->
  here::test_a_template_names_the_parameters_in_order, here::test_a_template_of_another_model_is_refused_in_words
- Burn 0.13 Bin records (before TensorData): floats or ints as the settings name them ->
  here::test_old_int_values_are_varints_zigzagged_only_when_signed,
  here::test_old_values_that_fit_neither_reading_are_refused_in_words
- a metadata string longer than any Burn writes is refused naming which one ->
  ``test_settings_text_too_long_is_refused_in_words``
- a tensor of 64 dimensions is read, 65 are refused (here) ->
  ``test_sixty_four_dimensions_are_read``
- a dtype index one past the version's table is refused in words ->
  ``test_a_dtype_index_past_the_table_is_refused_in_words``
- a float tensor of the settings' width is read as the settings' float type (Flex32 under f32) ->
  ``test_flex32_under_f32_settings_reads_as_f32``
- a bincode 1 record is read as bincode 1 whatever its first string's length ->
  ``test_a_fixed_record_with_a_long_float_name_is_read_as_fixed``
- Burn 0.14 and 0.15 read the dtype index with the table without Flex32, 0.16 with it (a Bool is a Bool on each
  side of the boundary) -> ``test_a_bool_reads_as_bool_with_its_versions_dtype_table``
- a record of more tensors than the limit is refused in words, one of exactly the limit is read ->
  ``test_the_tensor_limit_of_a_bin_record_is_exact``
- a TensorData record's id that is no u64 (an old UUID, a 13-character id with the padding bit set) is kept as
  ``burn.param_id.<name>`` metadata -> ``test_an_id_that_is_no_u64_is_kept_as_metadata``
- a mapped parameter streams in pieces of the size asked ->
  ``test_a_mapped_parameter_streams_in_pieces_of_the_size_asked``
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine import open_store
from engine.formats import safetensors
from engine.formats.burn_record import bincode
from tests.helpers.formats_burn_record_writers import (
    DTYPES_0_16,
    Bincode,
    Param,
    Settings,
    id_text,
    write_record,
)
from tests.refusals import refusal

F32 = DTYPES_0_16.index("F32")


def codec(fixed: bool) -> Bincode:
    return Bincode(Settings(recorder="Bin", fixed=fixed))


def param(b: Bincode, raw: bytes, shape: list[int], dtype_index: int = F32, *, length: int | None = None) -> bytes:
    """One parameter as Burn writes it: id text, bytes (length, bytes), shape (length, sizes), dtype index."""
    return (b.text(id_text(3)) + b.uint(len(raw) if length is None else length) + raw + b.uint(len(shape))
            + b"".join(b.uint(d) for d in shape) + b.uint(dtype_index, 4))


def write(tmp_path, raw: bytes, name: str = "m.bin"):
    path = tmp_path / name
    path.write_bytes(raw)
    return path


TWO = np.array([1.5, -2.0], "<f4").tobytes()


@pytest.mark.parametrize(("fixed", "at"), [(False, 130), (True, 165)], ids=["bincode2", "bincode1"])
@pytest.mark.parametrize(("body", "words"), [
    (lambda b: param(b, TWO, [3]), "{where}: 8 bytes, but F32 x [3] needs 12"),
    (lambda b: param(b, TWO, [2], DTYPES_0_16.index("QFloat")),
     "{where}: quantized tensors in Bin records are not supported (their scheme has no names); save the model with "
     "NamedMpkFileRecorder first"),
    (lambda b: param(b, TWO, [2], 40), "{where}: dtype index 40 is not a DType of Burn 0.21.0"),
    (lambda b: b.text(id_text(3)) + b.uint(0) + b.uint(65), "{where}: 65 dimensions"),
    (lambda b: b.text(id_text(3)) + b.uint(800) + TWO, "file is truncated: {where} has 800 bytes, past the end of the file"),
], ids=["size", "quantized", "dtype-index", "dimensions", "past-the-end"])
def test_a_parameter_that_does_not_fit_is_refused_in_words(tmp_path, fixed, at, body, words):
    b = codec(fixed)
    path = write(tmp_path, b.record({}) + body(b))
    assert refusal(path) == "m.bin: " + words.format(where=f"parameter 0 at byte {at} (id 0c00000000000)")


@pytest.mark.parametrize("fixed", [False, True], ids=["bincode2", "bincode1"])
def test_both_encodings_read_the_same_parameters(tmp_path, fixed):
    b = codec(fixed)
    ones = np.ones(3, "<f4").tobytes()
    path = write(tmp_path, b.record({}) + param(b, TWO, [2]) + b"\x01" + param(b, ones, [3, 1]))
    with open_store(path) as store:
        assert [(e.name, str(e.dtype), e.shape, e.param_id) for e in store.entries] == [
            ("param.0", "F32", (2,), 3), ("param.1", "F32", (3, 1), 3)]
        assert store.read("param.0").tolist() == [1.5, -2.0] and store.read("param.1").tolist() == [[1.0]] * 3
        assert store.metadata["burn.encoding"] == ("bincode 1 (fixed)" if fixed else "bincode 2 (varint)")
        assert store.metadata["burn.names"] == "positional"


def test_a_header_bincode_does_not_write_is_refused_in_words(tmp_path):
    b = codec(False)
    assert refusal(write(tmp_path, b.record({}) + b.text(id_text(3)) + bytes([254]))) == \
        "m.bin: byte 144: varint marker 254 is not one bincode writes"
    head = b.text("f32") + b.text("i32") + b.text("burn::BinFileRecorder")
    assert refusal(write(tmp_path, head + bytes([253]) + (2**21).to_bytes(8, "little") + bytes(20))) == \
        "m.bin: metadata version at byte 39 claims 2097152 characters"
    assert refusal(write(tmp_path, head + b.uint(2) + b"\xff\xfe" + b.text("s"))) == \
        "m.bin: the record's metadata is not text: not a Burn Bin record"
    whole = b.record({}) + param(b, TWO, [2])
    assert refusal(write(tmp_path, whole[:-3])) == \
        f"m.bin: file is truncated: a value at byte {len(whole) - 3} runs past the end ({len(whole) - 3} bytes)"


def template_file(tmp_path, shapes: dict[str, tuple[int, ...]]):
    """A SafeTensors file of the same model: its tensor names in order, and their shapes."""
    from engine import ArrayStore, export
    path = tmp_path / "template.safetensors"
    export(ArrayStore({n: np.zeros(s, "<f4") for n, s in shapes.items()}).entries, path, safetensors.NAME)
    return path


def two_params(tmp_path):
    b = codec(False)
    return write(tmp_path, b.record({}) + param(b, TWO, [2]) + param(b, np.ones(3, "<f4").tobytes(), [3, 1]))


def test_a_template_names_the_parameters_in_order(tmp_path):
    template = template_file(tmp_path, {"fc.bias": (2,), "fc.weight": (3, 1)})
    with open_store(two_params(tmp_path), template=template) as store:
        assert store.names == ["fc.bias", "fc.weight"] and store.read("fc.bias").tolist() == [1.5, -2.0]
        assert store.metadata["burn.names"] == "from the template template.safetensors"
        assert store.note is None


@pytest.mark.parametrize(("shapes", "words"), [
    ({"fc.bias": (2,)}, "the record has 2 parameters but the template has 1 tensors: it is not the same architecture"),
    ({"fc.bias": (2,), "fc.weight": (1, 3)}, "parameter 1 has shape [3, 1] but the template's tensor 1 ('fc.weight') "
                                            "has [1, 3]: it is not the same architecture"),
])
def test_a_template_of_another_model_is_refused_in_words(tmp_path, shapes, words):
    assert refusal(two_params(tmp_path), template=template_file(tmp_path, shapes)) == f"m.bin: {words}"


# --- Bin records before Burn 0.14: ``value: Vec<E>`` then ``shape``; E is the float or the int type of the settings ----

OLD = Settings(version="0.13.0", recorder="Bin")


def old_bin(tmp_path, body: bytes, *, int_type: str = "i64"):
    """A pre-0.14 Bin record (bincode 2) whose settings name ``int_type``; ``body`` follows the parameter's id."""
    b = Bincode(OLD)
    meta = {**OLD.metadata(), "int": int_type}
    head = b"".join(b.text(meta[k]) for k in ("float", "int", "format", "version", "settings"))
    return write(tmp_path, head + b.text(id_text(3)) + body, "old.bin")


def varints(*numbers: int) -> bytes:
    return b"".join(Bincode(OLD).uint(n) for n in numbers)


@pytest.mark.parametrize(("int_type", "dtype", "values"), [("u16", "U16", [1, 300]), ("i64", "I64", [-1, 150])])
def test_old_int_values_are_varints_zigzagged_only_when_signed(tmp_path, int_type, dtype, values):
    """Two values (1 and 300 as varints), then a shape [2]: not four-byte floats, so the int reading is taken."""
    path = old_bin(tmp_path, varints(2, 1, 300, 1, 2), int_type=int_type)
    with open_store(path) as store:
        assert (str(store.entry("param.0").dtype), store.read("param.0").tolist()) == (dtype, values)


@pytest.mark.parametrize(("body", "int_type", "words"), [
    (varints(2, 1, 300, 1, 2), "i128", "record metadata names the int type 'i128', which this app does not know"),
    (varints(2, 1, 2, 1, 3), "i64", "parameter 0 at byte 130 (id 0c00000000000): 2 values for shape [3]"),
    (varints(5) + b"\x01\x02\x03", "i64",
     "parameter 0 at byte 130 (id 0c00000000000): 5 values, more than the bytes left in the file"),
    (varints(4) + b"\x01\x02\x03", "i64",
     "parameter 0 at byte 130 (id 0c00000000000): 4 values, more than the bytes left in the file"),
    (varints(3) + b"\x01\x02\x03", "i64", "file is truncated: a value at byte 148 runs past the end (148 bytes)"),
    (varints(2, 0, 140000, 1, 2), "i16", "parameter 0 at byte 130 (id 0c00000000000): a value does not fit I16"),
    (varints(1, 5, 65), "i64", "parameter 0 at byte 130 (id 0c00000000000): 65 dimensions"),
], ids=["unknown-int-type", "shape", "count-past-the-end", "count-one-past", "count-to-the-end", "does-not-fit",
        "dimensions"])
def test_old_values_that_fit_neither_reading_are_refused_in_words(tmp_path, body, int_type, words):
    """The float reading fails first; what the int reading says is what the user sees."""
    assert refusal(old_bin(tmp_path, body, int_type=int_type)) == f"old.bin: {words}"


def test_settings_text_too_long_is_refused_in_words(tmp_path):
    b = Bincode(Settings(recorder="Bin"))
    head = b.text("f32") + b.text("i32") + b.text("burn::BinFileRecorder") + b.text("0.21.0")
    at = len(head) + 9
    assert refusal(write(tmp_path, head + bytes([253]) + (2**21).to_bytes(8, "little") + bytes(20))) == \
        f"m.bin: metadata settings at byte {at} claims 2097152 characters"


def test_sixty_four_dimensions_are_read(tmp_path):
    b = Bincode(Settings(recorder="Bin"))
    with open_store(write(tmp_path, b.record({}) + param(b, TWO[:4], [1] * 64))) as store:
        assert store.entries[0].shape == (1,) * 64 and store.read("param.0").reshape(-1).tolist() == [1.5]


def test_a_dtype_index_past_the_table_is_refused_in_words(tmp_path):
    b = Bincode(Settings(recorder="Bin"))
    at = len(b.record({}))
    assert refusal(write(tmp_path, b.record({}) + param(b, TWO, [2], len(DTYPES_0_16)))) == \
        f"m.bin: parameter 0 at byte {at} (id 0c00000000000): dtype index 15 is not a DType of Burn 0.21.0"


def test_flex32_under_f32_settings_reads_as_f32(tmp_path):
    b = Bincode(Settings(recorder="Bin"))
    with open_store(write(tmp_path, b.record({}) + param(b, TWO, [2], DTYPES_0_16.index("Flex32")))) as store:
        assert (str(store.entries[0].dtype), store.read("param.0").tolist()) == ("F32", [1.5, -2.0])


def test_a_fixed_record_with_a_long_float_name_is_read_as_fixed(tmp_path):
    """Byte 0 of a bincode 1 record is the low byte of the first string's u64 length: 251 here, a varint marker in
    bincode 2, yet the seven zero bytes after it say bincode 1 (as the sniffing that took it for Bin read it)."""
    b = Bincode(Settings(recorder="Bin", fixed=True))
    name = "f" * 251
    head = b.text(name) + b.text("i32") + b.text("burn::BinFileRecorder") + b.text("0.21.0") + b.text("Full")
    with open_store(write(tmp_path, head + param(b, TWO, [2]))) as store:
        assert store.metadata["burn.encoding"] == "bincode 1 (fixed)" and store.metadata["burn.float"] == name
        assert store.read("param.0").tolist() == [1.5, -2.0]


@pytest.mark.parametrize("version", ["0.14.0", "0.15.0", "0.16.0"])
@pytest.mark.parametrize("fixed", [False, True], ids=["bincode2", "bincode1"])
def test_a_bool_reads_as_bool_with_its_versions_dtype_table(tmp_path: Path, version: str, fixed: bool) -> None:
    """Bool is index 12 before 0.16 (13 is QFloat) and 13 from 0.16 on (12 is U8): the other table's type at
    either index is U8 or QFloat, so only the version's own table reads it as Bool."""
    mask = np.array([True, False, True])
    path = write_record(tmp_path, "mask", {"mask": Param(id_text(9), mask)},
                        Settings(version=version, recorder="Bin", fixed=fixed))
    with open_store(path) as store:
        assert (str(store.entries[0].dtype), store.read("param.0").tolist()) == ("BOOL", [True, False, True])


def params(count: int) -> dict[str, Param]:
    return {f"p{i}": Param(id_text(i), np.full(2, i, "<f4")) for i in range(count)}


def test_the_tensor_limit_of_a_bin_record_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit is lowered so a small real record sits exactly on it (the store's own limit is left as it is)."""
    monkeypatch.setattr(bincode, "MAX_TENSORS", 3)
    s = Settings(recorder="Bin")
    with open_store(write_record(tmp_path, "three", params(3), s)) as store:
        assert store.names == ["param.0", "param.1", "param.2"]
        assert store.read("param.2").tolist() == [2.0, 2.0]
    assert refusal(write_record(tmp_path, "four", params(4), s)) == "four.bin: more than 3 tensors, over the limit"


@pytest.mark.parametrize("fixed", [False, True], ids=["bincode2", "bincode1"])
def test_an_id_that_is_no_u64_is_kept_as_metadata(tmp_path: Path, fixed: bool) -> None:
    uuid = "0b6a1c2e-1f3d-4a5b-9c8d-7e6f5a4b3c2d"
    item = {"a": Param(uuid, np.arange(4, dtype="<f4")), "b": Param("vvvvvvvvvvvvv", np.ones(2, "<f4")),
            "c": Param(id_text(42), np.zeros(1, "<f4"))}
    path = write_record(tmp_path, "m", item, Settings(version="0.14.0", recorder="Bin", fixed=fixed))
    with open_store(path) as store:
        assert [e.param_id for e in store.entries] == [None, None, 42]
        kept = {k: v for k, v in store.metadata.items() if k.startswith("burn.param_id.")}
        assert kept == {"burn.param_id.param.0": uuid, "burn.param_id.param.1": "vvvvvvvvvvvvv"}


def test_a_mapped_parameter_streams_in_pieces_of_the_size_asked(tmp_path: Path) -> None:
    values = np.arange(6, dtype="<f4")
    path = write_record(tmp_path, "m", {"w": Param(id_text(5), values)}, Settings(recorder="Bin"))
    with open_store(path) as store:
        assert store.byte_range("param.0") is not None  # mapped from the file, not decoded into memory
        assert [bytes(piece) for piece in store.iter_bytes("param.0", 8)] == \
            [values[0:2].tobytes(), values[2:4].tobytes(), values[4:6].tobytes()]
