"""The record reader's own entry (engine/formats/burn_record/__init__.py ``open``, the interface every format module
has beside ``sniff``; the whole run's survivors of session 8): what it is handed that is no record is refused in
words naming the file, and a record's kind is told by exactly its first 4096 bytes, as the sniff tells it.

Promises (README "Migrating from Burn's recorders": records are recognised by content; bad input is one line naming
the file) ->
- a file that is no Burn record, handed to the reader itself, is refused naming it ->
  ``test_what_is_no_record_is_refused_in_words_naming_the_file``
- the kind is told by the first 4096 bytes, no more, of the file or of what they decompress to ->
  ``test_the_kind_is_told_by_the_first_4096_bytes``, ``test_a_gzip_files_kind_is_told_by_its_first_4096_bytes``
- a local Bin record is mapped where it is, never copied (only a remote one is downloaded whole) ->
  ``test_a_local_bin_record_is_read_in_place``
"""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import pytest

from engine import FormatError, open_store
from engine.formats import burn_record

from burn_record_writers import Param, Settings, id_text, json_record_with_float_at, write_record


def test_what_is_no_record_is_refused_in_words_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.mpk"
    path.write_text("plain text, no record " * 10)
    with pytest.raises(FormatError) as caught:
        burn_record.open(path)
    assert str(caught.value) == \
        "notes.mpk: not a Burn record (neither msgpack, JSON nor bincode after decompression)"


def test_the_kind_is_told_by_the_first_4096_bytes(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(json_record_with_float_at(4096))
    with burn_record.open(path) as store:
        assert store.values == {"n": 1} and store.metadata["burn.float"] == "f32"
    path.write_bytes(json_record_with_float_at(4097))
    assert burn_record.sniff(path.read_bytes()[:4096]) is False
    with pytest.raises(FormatError) as caught:
        burn_record.open(path)
    assert str(caught.value) == "r.json: not a Burn record (neither msgpack, JSON nor bincode after decompression)"


def test_a_gzip_files_kind_is_told_by_its_first_4096_bytes(tmp_path: Path) -> None:
    """Stored (level 0) deflate: after gzip's 10-byte header and the block's 5, the first 4096 bytes of the file
    hold the first 4081 bytes of the record."""
    path = tmp_path / "r.json.gz"
    path.write_bytes(gzip.compress(json_record_with_float_at(4081), compresslevel=0, mtime=0))
    with open_store(path) as store:
        assert store.values == {"n": 1} and store.kind == "JSON (gzip)"
    path.write_bytes(gzip.compress(json_record_with_float_at(4082), compresslevel=0, mtime=0))
    with pytest.raises(FormatError) as caught:
        open_store(path)
    assert str(caught.value) == "r.json.gz: a gzip file whose content is not a Burn record"


def test_a_local_bin_record_is_read_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path = write_record(tmp_path, "m", {"w": Param(id_text(3), np.ones(2, "<f4"))},
                        Settings(recorder="Bin"))
    with open_store(path) as store:
        assert store.read("param.0").tolist() == [1.0, 1.0]
        assert list(scratch.iterdir()) == []
