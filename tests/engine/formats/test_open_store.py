"""How a file is opened by what its bytes say, and which writer a name asks for (engine/formats/__init__.py
``open_store``, the sniffs it asks, source.open_source), with the exact words of each refusal. Without these a file
would be opened by the wrong reader (its name, or bytes that only look like another format, deciding), or refused
without saying which file.

Promises (README "Formats"):
- files are recognised by content, not by name -> here::test_a_file_opens_by_its_bytes_whatever_its_name
- bad input is one line naming the file -> here::test_an_empty_or_unknown_file_is_one_line_naming_it
- the export writes Burnpack or SafeTensors, by the extension or ``--format`` ->
  here::test_the_destinations_extension_picks_the_writer, here::test_only_burnpack_and_safetensors_are_written
- a zip's signature makes a file PyTorch, whatever the rest of its first local header holds: one whose byte 8 (the
  compression method's low byte, which zip readers and torch.load take from the central directory) is ``{`` is no
  SafeTensors header -> test_a_zip_whose_byte_8_is_a_brace_opens_as_pytorch_as_torch_load_reads_it
- a tar checkpoint opens as PyTorch even when its first bytes would start a SafeTensors file with a header of 0
  bytes (8 zero bytes, then ``{``): no SafeTensors file has a 0-byte header, so the other readers still judge it
  -> test_a_tar_checkpoint_starting_with_eight_zero_bytes_and_a_brace_opens_as_pytorch
- a SafeTensors file cut off right after its header's ``{`` (9 bytes) is refused as a truncated SafeTensors file,
  also when its header length's first bytes are gzip's magic -> test_a_safetensors_file_cut_after_its_brace_is_truncated
- a file opened from a stack too deep for its nesting is refused in one line naming it, never a RecursionError
  -> test_a_file_opened_from_a_deep_stack_is_refused_naming_it
- anything that is neither a path, a URL nor an open byte source is refused with a TypeError, also after a byte
  source was handed over -> test_none_is_refused_as_a_type_error_after_a_source_was_handed_over
"""

from __future__ import annotations

import json
import struct
import sys
import tarfile
from pathlib import Path

import pytest
import torch

from engine import FormatError, open_store
from engine.formats import format_for_path, writer
from engine.sources.local import MappedFile
from tests.helpers.pytorch_checkpoints import tar_checkpoint


def safetensors_bytes() -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    header += b" " * (-(len(header) + 8) % 8)
    return struct.pack("<Q", len(header)) + header + struct.pack("<2f", 1.5, -2.0)


def test_a_file_opens_by_its_bytes_whatever_its_name(tmp_path):
    path = tmp_path / "weights.bpk"  # a Burnpack's extension, SafeTensors' bytes
    path.write_bytes(safetensors_bytes())
    with open_store(path) as store:
        assert (store.format, store.names, store.read("w").tolist()) == ("safetensors", ["w"], [1.5, -2.0])


@pytest.mark.parametrize(("content", "words"), [
    (b"", "file is empty"),
    (b"\x00" * 5000, "not a Burnpack, SafeTensors, GGUF, ONNX, PyTorch file or Burn record (its first bytes match none of them)"),
    (b"hello", "not a Burnpack, SafeTensors, GGUF, ONNX, PyTorch file or Burn record (its first bytes match none of them)"),
])
def test_an_empty_or_unknown_file_is_one_line_naming_it(tmp_path, content, words):
    path = tmp_path / "model.bin"
    path.write_bytes(content)
    with pytest.raises(FormatError) as caught:
        open_store(path)
    assert str(caught.value) == f"model.bin: {words}"


def test_a_source_handed_over_is_closed_when_it_cannot_be_opened(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"hello")
    source = MappedFile(path)
    with pytest.raises(FormatError):
        open_store(source)
    assert source.fileno() is None


def test_an_unknown_option_is_refused_before_the_file_is_read(tmp_path):
    with pytest.raises(TypeError) as caught:
        open_store(tmp_path / "absent.bin", zeta=1, alpha=2)
    assert str(caught.value) == "unknown open option(s): alpha, zeta"


def test_the_options_some_format_knows_are_taken_by_every_format(tmp_path):
    path = tmp_path / "m.safetensors"
    path.write_bytes(safetensors_bytes())
    with open_store(path, top_level_key=None) as store:
        assert store.names == ["w"]


@pytest.mark.parametrize(("name", "fmt"), [("out.bpk", "burnpack"), ("OUT.BPK", "burnpack"),
                                           ("out.safetensors", "safetensors"), ("a.b.SafeTensors", "safetensors"),
                                           ("out.pt", None), ("out", None), ("bpk", None)])
def test_the_destinations_extension_picks_the_writer(name, fmt):
    assert format_for_path(name) == fmt


def test_only_burnpack_and_safetensors_are_written():
    assert (writer("burnpack").NAME, writer("safetensors").NAME) == ("burnpack", "safetensors")
    with pytest.raises(ValueError) as caught:
        writer("pytorch")
    assert str(caught.value) == "cannot write 'pytorch': choose burnpack or safetensors"


TAR_BLOCK = 512


TAR_CHECKSUM = slice(148, 156)


def test_a_zip_whose_byte_8_is_a_brace_opens_as_pytorch_as_torch_load_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    torch.save({"w": torch.tensor([1.5, -2.0])}, path)
    raw = bytearray(path.read_bytes())
    raw[8] = ord("{")  # bytes 0-7 read as a header length of far over 100 MB: no SafeTensors file either
    path.write_bytes(raw)
    assert torch.load(path, weights_only=True)["w"].tolist() == [1.5, -2.0]
    with open_store(path) as store:
        assert (store.format, store.names, store.read("w").tolist()) == ("pytorch", ["w"], [1.5, -2.0])


def test_a_tar_checkpoint_starting_with_eight_zero_bytes_and_a_brace_opens_as_pytorch(tmp_path: Path) -> None:
    """The first block is a pax header, whose own name field tar readers ignore; it is set to 8 zeros and ``{``."""
    plain, expected = tar_checkpoint(tmp_path / "plain.tar")
    path = tmp_path / "model.pt"
    with tarfile.open(plain) as source, tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as archive:
        for i, member in enumerate(source.getmembers()):
            if i == 0:
                member.pax_headers = {"comment": "first"}  # makes tarfile write a pax header block first
            archive.addfile(member, source.extractfile(member))
    raw = bytearray(path.read_bytes())
    raw[:100] = b"\0" * 8 + b"{" + b"\0" * 91
    raw[TAR_CHECKSUM] = b" " * 8
    raw[TAR_CHECKSUM] = b"%06o\0 " % sum(raw[:TAR_BLOCK])
    path.write_bytes(raw)
    with open_store(path) as store:
        assert (store.format, store.names) == ("pytorch", list(expected))
        assert store.read("full").tolist() == expected["full"].tolist()


def test_a_safetensors_file_cut_after_its_brace_is_truncated(tmp_path: Path) -> None:
    """A header length of 35,615 starts with gzip's magic (1f 8b): still SafeTensors' first bytes, not a gzip's."""
    path = tmp_path / "model.safetensors"
    path.write_bytes((35615).to_bytes(8, "little") + b"{")
    with pytest.raises(FormatError) as caught:
        open_store(path)
    assert str(caught.value) == ("model.safetensors: file is truncated: the 35615-byte header needs bytes 8..35623 "
                                 "but the file has 9")


def _depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def test_a_file_opened_from_a_deep_stack_is_refused_naming_it(tmp_path: Path) -> None:
    """A checkpoint nested 90 levels (within the reader's 100) takes hundreds of frames to walk; opened with 150
    left (as from deep in a caller's recursion) it is refused as too deeply nested, with the file's name."""
    nested: dict = {"w": torch.tensor([1.0])}
    for _ in range(90):
        nested = {"a": nested}
    path = tmp_path / "deep.pt"
    torch.save(nested, path)
    open_store(path).close()  # with room it opens; and the reader's modules are imported before the stack is short
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_depth() + 150)
    try:
        with pytest.raises(FormatError) as caught:
            open_store(path)
    finally:
        sys.setrecursionlimit(limit)
    assert str(caught.value) == "deep.pt: is nested too deeply to read"


def test_none_is_refused_as_a_type_error_after_a_source_was_handed_over(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes((2).to_bytes(8, "little") + b"{}")
    with open_store(MappedFile(path)) as store:
        assert store.names == []
    with pytest.raises(TypeError):
        open_store(None)  # type: ignore[arg-type]
