"""Compressed zip entries, read as torch reads them: torch writes every entry stored, but a checkpoint
re-zipped by another tool has its data.pkl, byteorder, version and TorchScript class sources deflated (or bzip2-
or LZMA-compressed). They are inflated here, never past the size their header states; storages stay refused.

Promises (README, "PyTorch files" and "Limits") -> tests:
- a re-zipped checkpoint reads as torch.load reads it (deflate, bzip2, LZMA, any LZMA properties)
  -> test_a_rezipped_checkpoint_reads_as_torch_load, test_lzma_properties_are_read_from_the_entry
- a TorchScript archive whose class sources are deflated reads as the stored one
  -> test_deflated_class_sources_read_as_stored_ones
- compressed data.pkl: any ratio up to 16 MiB, 64 times past it, stated size never exceeded (a zip bomb stops
  there) -> test_the_expansion_limit_is_exact_at_16_mib, test_the_expansion_limit_is_exact_at_64_times,
  test_an_entry_stating_no_compressed_bytes_is_a_bomb_by_its_whole_size,
  test_an_entry_that_inflates_past_its_stated_size_is_refused,
  test_inflating_stops_one_byte_past_the_stated_size_before_later_damage
- LZMA's header sizes are unsigned (a 2 GiB dictionary, 64 KiB of properties)
  -> test_an_lzma_dictionary_of_2_gib_or_more_reads, test_an_lzma_properties_size_of_32_kib_or_more_leaves_no_stream
- encrypted entries, unknown methods and damaged streams are refused in one line naming the entry
  -> test_an_encrypted_entry_is_refused, test_a_method_torch_never_writes_is_refused,
  test_a_damaged_stream_is_refused, test_an_entry_whose_crc_differs_is_refused,
  test_a_compressed_entry_past_the_end_of_the_file_is_refused_naming_it
"""

from __future__ import annotations

import pickle
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.helpers.pytorch_checkpoints import raw_bytes, torch_flat

from engine.errors import FormatError
from engine.formats import open_store
from tests.helpers.pytorch_zip_entries import (
    BZIP2,
    DEFAULT_LZMA,
    DEFLATED,
    LZMA,
    PICKLE,
    STORED,
    Entry,
    packed,
    pickle_entry,
    small_checkpoint,
    zip_of,
)


def rezipped(source: Path, target: Path, method: int, lzma_props: tuple[int, int, int] = DEFAULT_LZMA) -> Path:
    """``source`` (written by torch) with every entry but the storages compressed with ``method``."""
    with zipfile.ZipFile(source) as archive:
        entries = [Entry(info.filename, data, STORED if "/data/" in info.filename else method,
                         None if "/data/" in info.filename else packed(data, method, lzma_props))
                   for info in archive.infolist() for data in [archive.read(info)]]
    target.write_bytes(zip_of(entries))
    return target








def refusal(path: Path) -> str:
    with pytest.raises(FormatError) as caught:
        open_store(path)
    assert caught.value.path == str(path)
    return caught.value.problem


@pytest.mark.parametrize("method", [DEFLATED, BZIP2, LZMA])
def test_a_rezipped_checkpoint_reads_as_torch_load(torch_files, tmp_path: Path, method: int) -> None:
    source = torch_files[("nested", "zip")]
    path = rezipped(source, tmp_path / f"rezipped{method}.pt", method)
    expected = torch_flat(torch.load(source, weights_only=True))
    with open_store(source) as original, open_store(path) as store:
        assert store.version == "zip" and store.names == list(expected)
        for name, tensor in expected.items():
            assert np.ascontiguousarray(store.read(name)).tobytes() == raw_bytes(tensor), name
        assert store.values == original.values and store.values["epoch"] == 42
        assert store.metadata == original.metadata and store.metadata["byteorder"] == "little"
        assert store.metadata["version"] == zipfile.ZipFile(source).read("nested_zip/version").decode().strip()
    if method == DEFLATED:  # torch's own reader inflates deflated entries too: it agrees
        assert torch_flat(torch.load(path, weights_only=True)).keys() == expected.keys()


@pytest.mark.parametrize("lzma_props", [(0, 0, 4), (0, 4, 4), (4, 0, 4), (1, 3, 1)])
def test_lzma_properties_are_read_from_the_entry(torch_files, tmp_path: Path, lzma_props) -> None:
    """lc, lp and pb packed in one byte (lc + 9 lp + 45 pb; liblzma allows lc + lp up to 4): decoding with
    other values garbles the pickle."""
    source = torch_files[("nested", "zip")]
    path = rezipped(source, tmp_path / "props.pt", LZMA, lzma_props)
    with open_store(source) as original, open_store(path) as store:
        assert store.names == original.names and store.values == original.values
        assert store.metadata == original.metadata


def test_a_big_endian_byteorder_entry_is_inflated_too(torch_files, tmp_path: Path) -> None:
    source = torch_files[("nested", "zip")]
    with zipfile.ZipFile(source) as archive:
        entries = [Entry(info.filename, b"big" if info.filename.endswith("/byteorder") else archive.read(info),
                         DEFLATED if info.filename.endswith("/byteorder") else STORED)
                   for info in archive.infolist()]
    path = tmp_path / "big.pt"
    path.write_bytes(zip_of(entries))
    with open_store(path) as store:
        assert store.metadata["byteorder"] == "big"
        assert store.read("weights.0").tolist() == [float(np.array(1.0, "<f4").view(">f4"))] * 2


def test_the_expansion_limit_is_exact_at_16_mib(tmp_path: Path) -> None:
    """Stating 16 MiB is allowed at any ratio (then the short stream is caught); one byte more is a bomb."""
    body = packed(PICKLE, DEFLATED)
    allowed = small_checkpoint(tmp_path / "free.pt", pickle_entry(stated_size=16 << 20))
    assert refusal(allowed) == (f"zip entry 'ckpt/data.pkl' decompresses to other bytes than its header states "
                                f"({len(PICKLE)} bytes, {16 << 20} stated)")
    bomb = small_checkpoint(tmp_path / "bomb.pt", pickle_entry(stated_size=(16 << 20) + 1))
    assert refusal(bomb) == (f"zip entry 'ckpt/data.pkl' would expand {((16 << 20) + 1) / len(body):.0f} times "
                             f"({len(body)} to {(16 << 20) + 1} bytes), over the limit of 64 (a zip bomb?)")


def test_the_expansion_limit_is_exact_at_64_times(tmp_path: Path) -> None:
    """Past 16 MiB an entry may state 64 times its compressed size: a stored-block deflate of 300 kB random bytes
    (a real pickle) states exactly 64 times, then one byte more."""
    plain = pickle.dumps({"blob": np.random.default_rng(0).bytes(300_000)}, protocol=4)
    deflater = zlib.compressobj(0, zlib.DEFLATED, -15)
    body = deflater.compress(plain) + deflater.flush()
    assert 64 * len(body) > 16 << 20
    at_limit = small_checkpoint(tmp_path / "at.pt", Entry("ckpt/data.pkl", plain, DEFLATED, body,
                                                          stated_size=64 * len(body)))
    assert refusal(at_limit) == (f"zip entry 'ckpt/data.pkl' decompresses to other bytes than its header states "
                                 f"({len(plain)} bytes, {64 * len(body)} stated)")
    past = small_checkpoint(tmp_path / "past.pt", Entry("ckpt/data.pkl", plain, DEFLATED, body,
                                                        stated_size=64 * len(body) + 1))
    assert refusal(past) == (f"zip entry 'ckpt/data.pkl' would expand 64 times ({len(body)} to "
                             f"{64 * len(body) + 1} bytes), over the limit of 64 (a zip bomb?)")


def test_an_entry_stating_no_compressed_bytes_is_a_bomb_by_its_whole_size(tmp_path: Path) -> None:
    size = (16 << 20) + 1
    path = small_checkpoint(tmp_path / "empty.pt", pickle_entry(body=b"", stated_size=size))
    assert refusal(path) == (f"zip entry 'ckpt/data.pkl' would expand {size} times (0 to {size} bytes), over the "
                             "limit of 64 (a zip bomb?)")


def test_a_stated_size_within_the_limit_reads(tmp_path: Path) -> None:
    path = small_checkpoint(tmp_path / "fine.pt", pickle_entry())
    with open_store(path) as store:
        assert store.values == {"epoch": 7, "name": "run"} and store.metadata == {"byteorder": "little"}


@pytest.mark.parametrize("flags", [1, 3, 9])
def test_an_encrypted_entry_is_refused(tmp_path: Path, flags: int) -> None:
    path = small_checkpoint(tmp_path / "locked.pt", pickle_entry(flags=flags))
    assert refusal(path) == "zip entry 'ckpt/data.pkl' is encrypted"


@pytest.mark.parametrize("flags", [2, 4, 6, 8])
def test_flag_bits_other_than_encryption_are_ignored(tmp_path: Path, flags: int) -> None:
    """Bits 1-2 are deflate's speed hint, bit 3 a trailing data descriptor: none changes the bytes."""
    path = small_checkpoint(tmp_path / "flags.pt", pickle_entry(flags=flags))
    with open_store(path) as store:
        assert store.values == {"epoch": 7, "name": "run"}


@pytest.mark.parametrize("method", [1, 6, 9, 93, 99])
def test_a_method_torch_never_writes_is_refused(tmp_path: Path, method: int) -> None:
    path = small_checkpoint(tmp_path / "method.pt", pickle_entry(body=PICKLE))
    data = bytearray(path.read_bytes())
    for at in (8, data.index(b"PK\x01\x02") + 10):  # the method, in the local and the central header
        data[at:at + 2] = struct.pack("<H", method)
    path.write_bytes(bytes(data))
    assert refusal(path) == (f"zip entry 'ckpt/data.pkl' uses compression method {method}, which PyTorch never "
                             "writes")


@pytest.mark.parametrize("length", [0, 4, 8])
def test_an_lzma_entry_too_short_for_its_properties_is_refused(tmp_path: Path, length: int) -> None:
    body = packed(PICKLE, LZMA)[:length]
    path = small_checkpoint(tmp_path / "short.pt", Entry("ckpt/data.pkl", PICKLE, LZMA, body))
    assert refusal(path) == "zip entry 'ckpt/data.pkl' uses compression method 14, which PyTorch never writes"


def test_an_lzma_entry_of_only_its_properties_is_short(tmp_path: Path) -> None:
    """Nine bytes hold the header and properties: read as an empty stream, which is short of the stated size."""
    body = packed(PICKLE, LZMA)[:9]
    path = small_checkpoint(tmp_path / "props_only.pt", Entry("ckpt/data.pkl", PICKLE, LZMA, body))
    assert refusal(path) == (f"zip entry 'ckpt/data.pkl' decompresses to other bytes than its header states "
                             f"(0 bytes, {len(PICKLE)} stated)")


def lzma_body(props_size: int = 5, dict_size: int = 1 << 16) -> bytes:
    """PICKLE as an LZMA entry whose 4-byte header and properties state ``props_size`` and ``dict_size``."""
    return struct.pack("<BBHBI", 9, 4, props_size, 93, dict_size) + packed(PICKLE, LZMA)[9:]


@pytest.mark.parametrize("dict_size", [1 << 31, (1 << 32) - 1])
def test_an_lzma_dictionary_of_2_gib_or_more_reads(tmp_path: Path, dict_size: int) -> None:
    """The dictionary size is an unsigned 32-bit number: one of 2 GiB or more is a size, not a negative number.
    A dictionary larger than the encoder's decodes the same stream."""
    path = small_checkpoint(tmp_path / "big_dict.pt", Entry("ckpt/data.pkl", PICKLE, LZMA, lzma_body(dict_size=dict_size)))
    with open_store(path) as store:
        assert store.values == {"epoch": 7, "name": "run"}


def test_an_lzma_properties_size_of_32_kib_or_more_leaves_no_stream(tmp_path: Path) -> None:
    """The properties' size is an unsigned 16-bit number: 65,535 bytes of properties leave nothing of this short
    entry to decode (read as a size, not as -1, which would decode from inside the header)."""
    path = small_checkpoint(tmp_path / "big_props.pt", Entry("ckpt/data.pkl", PICKLE, LZMA, lzma_body(0xFFFF)))
    assert refusal(path) == (f"zip entry 'ckpt/data.pkl' decompresses to other bytes than its header states "
                             f"(0 bytes, {len(PICKLE)} stated)")


@pytest.mark.parametrize(("method", "body", "words"), [
    (DEFLATED, b"\xff\xff\xff\xff", "Error -3 while decompressing data: invalid block type"),
    (BZIP2, b"BZh9garbage that is not a bzip2 stream", "Invalid data stream"),
    (LZMA, struct.pack("<BBHBI", 9, 4, 5, 255, 1 << 16) + b"\x00" * 16, "Internal error"),  # pb 5: forged
    (LZMA, struct.pack("<BBHBI", 9, 4, 5, 8 + 9 * 4, 1 << 16) + b"\x00" * 16, "Internal error"),  # lc + lp 12
    (LZMA, struct.pack("<BBHBI", 9, 4, 5, 93, 1 << 16) + b"\xff" * 16, "Corrupt input data"),
])
def test_a_damaged_stream_is_refused(tmp_path: Path, method: int, body: bytes, words: str) -> None:
    path = small_checkpoint(tmp_path / "damaged.pt", Entry("ckpt/data.pkl", PICKLE, method, body))
    assert refusal(path) == f"zip entry 'ckpt/data.pkl' does not decompress: {words}"


@pytest.mark.parametrize("method", [DEFLATED, BZIP2, LZMA])
def test_an_entry_that_inflates_past_its_stated_size_is_refused(tmp_path: Path, method: int) -> None:
    """Decompression stops one byte past the stated size: never the whole stream."""
    stated = len(PICKLE) - 5
    path = small_checkpoint(tmp_path / "long.pt", Entry("ckpt/data.pkl", PICKLE, method, stated_size=stated))
    assert refusal(path) == (f"zip entry 'ckpt/data.pkl' decompresses to other bytes than its header states "
                             f"(more than {stated} bytes, {stated} stated)")


def stored_block_then_damage(plain: bytes) -> bytes:
    """A deflate stream of one non-final stored block holding ``plain``, then a block of the reserved type 3."""
    return b"\x00" + struct.pack("<HH", len(plain), 0xFFFF ^ len(plain)) + plain + b"\xff"


@pytest.mark.parametrize("short_by", [2, 50])
def test_inflating_stops_one_byte_past_the_stated_size_before_later_damage(tmp_path: Path, short_by: int) -> None:
    """Stating two bytes (or more) less than a stored block holds: inflating stops one byte past the stated size,
    inside the block, so the damage after it is never reached and the entry is refused for its size."""
    plain = pickle.dumps(list(range(100)), protocol=2)
    stated = len(plain) - short_by
    path = small_checkpoint(tmp_path / "then_damage.pt", Entry("ckpt/data.pkl", plain, DEFLATED,
                                                               stored_block_then_damage(plain), stated_size=stated))
    assert refusal(path) == (f"zip entry 'ckpt/data.pkl' decompresses to other bytes than its header states "
                             f"(more than {stated} bytes, {stated} stated)")


def test_a_compressed_entry_past_the_end_of_the_file_is_refused_naming_it(tmp_path: Path) -> None:
    """A local header whose extra field runs past the end puts the compressed bytes beyond the file."""
    entry = pickle_entry()
    path = small_checkpoint(tmp_path / "past_end.pt", entry)
    data = bytearray(path.read_bytes())
    data[28:30] = struct.pack("<H", 0xFFFF)  # data.pkl's local header is first: its extra field's length
    path.write_bytes(bytes(data))
    start = 30 + len(entry.name) + 0xFFFF
    assert refusal(path) == (f"file is truncated: the zip entry 'ckpt/data.pkl' needs bytes {start}.."
                             f"{start + len(entry.body)} but the file has {len(data)}")


@pytest.mark.parametrize("method", [DEFLATED, BZIP2, LZMA])
def test_an_entry_whose_crc_differs_is_refused(tmp_path: Path, method: int) -> None:
    path = small_checkpoint(tmp_path / "crc.pt", Entry("ckpt/data.pkl", PICKLE, method,
                                                       crc=zlib.crc32(PICKLE) ^ 1))
    assert refusal(path) == (f"zip entry 'ckpt/data.pkl' decompresses to other bytes than its header states "
                             f"({len(PICKLE)} bytes, {len(PICKLE)} stated)")


def test_a_compressed_entry_whose_local_header_is_damaged_is_refused(tmp_path: Path) -> None:
    byteorder = Entry("ckpt/byteorder", b"little")
    path = tmp_path / "header.pt"
    path.write_bytes(zip_of([byteorder, pickle_entry()]))
    at = 30 + len(byteorder.name) + len(byteorder.body)
    data = bytearray(path.read_bytes())
    data[at:at + 4] = b"PK\x03\x05"
    path.write_bytes(bytes(data))
    assert refusal(path) == f"ckpt/data.pkl: the zip entry header at byte {at} is damaged"


def test_the_name_in_a_message_is_cut_at_80_characters(tmp_path: Path) -> None:
    folder = "f" * 100
    path = tmp_path / "long_name.pt"
    path.write_bytes(zip_of([Entry(f"{folder}/data.pkl", PICKLE, DEFLATED, flags=1),
                             Entry(f"{folder}/byteorder", b"little")]))
    assert refusal(path) == f"zip entry {repr(folder + '/data.pkl')[:80]} is encrypted"


# --- TorchScript class sources (code/) ------------------------------------------------------------

class Scaled(torch.nn.Module):
    """A scripted module with a parameter, a buffer and a plain attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)
        self.register_buffer("mask", torch.ones(2))
        self.scale = 2.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.mask * self.scale


def test_deflated_class_sources_read_as_stored_ones(tmp_path: Path) -> None:
    torch.manual_seed(5)
    stored = tmp_path / "scaled.pt"
    torch.jit.script(Scaled()).save(str(stored))
    expected = torch.jit.load(str(stored)).state_dict()
    path = rezipped(stored, tmp_path / "deflated.pt", DEFLATED)
    with zipfile.ZipFile(path) as archive:
        assert {info.compress_type for info in archive.infolist() if "/code/" in info.filename} == {DEFLATED}
    with open_store(stored) as original, open_store(path) as store:
        assert store.version == "TorchScript" and store.names == list(expected) == ["mask", "linear.weight",
                                                                                   "linear.bias"]
        for name, tensor in expected.items():
            assert store.read(name).tolist() == tensor.tolist(), name
        assert store.values == original.values and store.values["scale"] == 2.5


MODULE_PICKLE = b"\x80\x02c__torch__.m\nC\n)\x81}X\x08\x00\x00\x00training\x88sb."  # one module, training=True
MODULE_SOURCE = b"class C(Module):\n  __parameters__ = []\n  __buffers__ = []\n"


def scripted(path: Path, source: Entry) -> Path:
    """A TorchScript archive of one module object whose class source is ``source``."""
    path.write_bytes(zip_of([Entry("m/data.pkl", MODULE_PICKLE), Entry("m/constants.pkl", pickle.dumps((), 2)),
                             Entry("m/byteorder", b"little"), source]))
    return path


@pytest.mark.parametrize("method", [STORED, DEFLATED])
def test_a_class_source_at_the_byte_limit_reads_and_one_byte_less_is_refused(tmp_path: Path, method: int,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.formats.pytorch import torchscript
    path = scripted(tmp_path / "one.pt", Entry("m/code/__torch__/m.py", MODULE_SOURCE, method))
    monkeypatch.setattr(torchscript, "MAX_CODE_BYTES", len(MODULE_SOURCE))
    with open_store(path) as store:
        assert store.version == "TorchScript" and store.values == {"__class__": "__torch__.m.C", "training": True}
    monkeypatch.setattr(torchscript, "MAX_CODE_BYTES", len(MODULE_SOURCE) - 1)
    assert refusal(path) == (f"zip entry 'm/code/__torch__/m.py' claims {len(MODULE_SOURCE)} bytes, over the limit "
                             f"of {len(MODULE_SOURCE) - 1}")


def test_a_stored_class_source_past_the_end_of_the_file_is_refused(tmp_path: Path) -> None:
    path = scripted(tmp_path / "cut.pt", Entry("m/code/__torch__/m.py", MODULE_SOURCE, stated_size=1000))
    data = path.read_bytes()
    size, start = len(data), data.index(b"m/code/__torch__/m.py") + len(b"m/code/__torch__/m.py")
    assert refusal(path) == (f"file is truncated: the zip entry 'm/code/__torch__/m.py' needs bytes "
                             f"{start}..{start + 1000} but the file has {size}")


def test_a_class_source_whose_local_header_is_damaged_is_refused(tmp_path: Path) -> None:
    path = scripted(tmp_path / "damaged.pt", Entry("m/code/__torch__/m.py", MODULE_SOURCE))
    data = bytearray(path.read_bytes())
    at = data.index(b"PK\x03\x04m/code"[:4], data.index(b"m/byteorder") + 1)
    data[at:at + 4] = b"PK\x03\x05"
    path.write_bytes(bytes(data))
    assert refusal(path) == f"m/code/__torch__/m.py: the zip entry header at byte {at} is damaged"
