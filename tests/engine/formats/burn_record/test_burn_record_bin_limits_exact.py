"""Bin records at their limits, byte by byte (engine/formats/burn_record/bincode.py; issue 25: the whole run's
survivors of ``read``, ``_Codec.detect``, ``_Scanner._shape``/``_dtype`` and ``Metadata.settled_float``).

Promises (README "Migrating from Burn's recorders": Bin records in bincode 2 or bincode 1's fixed encoding, each
refusal one line naming the file and where; Burn converts every float tensor to the settings' float type) ->
- a metadata string longer than any Burn writes is refused naming which one ->
  ``test_settings_text_too_long_is_refused_in_words``
- a tensor of 64 dimensions is read, 65 are refused (test_burn_record_bin_exact) ->
  ``test_sixty_four_dimensions_are_read``
- a dtype index one past the version's table is refused in words ->
  ``test_a_dtype_index_past_the_table_is_refused_in_words``
- a float tensor of the settings' width is read as the settings' float type (Flex32 under f32) ->
  ``test_flex32_under_f32_settings_reads_as_f32``
- a bincode 1 record is read as bincode 1 whatever its first string's length ->
  ``test_a_fixed_record_with_a_long_float_name_is_read_as_fixed``
"""

from __future__ import annotations

import numpy as np

from engine import open_store
from tests.refusals import refusal

from burn_record_writers import DTYPES_0_16, Bincode, Settings, id_text

F32 = DTYPES_0_16.index("F32")
TWO = np.array([1.5, -2.0], "<f4").tobytes()


def param(b: Bincode, raw: bytes, shape: list[int], dtype_index: int = F32) -> bytes:
    return (b.text(id_text(3)) + b.uint(len(raw)) + raw + b.uint(len(shape)) + b"".join(b.uint(d) for d in shape)
            + b.uint(dtype_index, 4))


def write(tmp_path, raw: bytes):
    path = tmp_path / "m.bin"
    path.write_bytes(raw)
    return path


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
