"""How a file is opened by what its bytes say, and which writer a name asks for (engine/formats/__init__.py), with
the exact words of each refusal.

Promises (README "Formats"; the audit of issue 25):
- files are recognised by content, not by name -> here::test_a_file_opens_by_its_bytes_whatever_its_name
- bad input is one line naming the file -> here::test_an_empty_or_unknown_file_is_one_line_naming_it
- the export writes Burnpack or SafeTensors, by the extension or ``--format`` ->
  here::test_the_destinations_extension_picks_the_writer, here::test_only_burnpack_and_safetensors_are_written
"""

from __future__ import annotations

import json
import struct

import pytest

from engine import FormatError, open_store
from engine.formats import format_for_path, writer
from engine.sources.local import MappedFile


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
    (b"\x00" * 5000, "not a Burnpack, SafeTensors, PyTorch file or Burn record (its first bytes match none of them)"),
    (b"hello", "not a Burnpack, SafeTensors, PyTorch file or Burn record (its first bytes match none of them)"),
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
