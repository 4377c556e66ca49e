"""A local Bin record is read in place even when its file got descriptor 0 (a process started with its standard
input closed, as a service or `store-studio <&-` is): only a source with no descriptor at all (a remote one) is
copied whole first, under the download limit. The equivalents file had said no opened file gets descriptor 0; a
session-12 helper showed one does.

Promise (README, "Remote files": only a remote file is downloaded whole, and only under STORE_STUDIO_MAX_DOWNLOAD)
-> test: test_a_bin_record_on_descriptor_0_is_read_in_place_not_downloaded
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine import open_store
from burn_record_writers import Settings, model_item, write_record
from tests.engine.formats.test_mapped_file_survivors_exact import stdin_closed


def test_a_bin_record_on_descriptor_0_is_read_in_place_not_downloaded(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    item, arrays = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="Bin"))
    monkeypatch.setenv("STORE_STUDIO_MAX_DOWNLOAD", "1")  # a whole-file copy of this record would be refused
    with stdin_closed(), open_store(path) as store:
        assert os.readlink("/proc/self/fd/0") == str(path)
        # a Bin record names no tensor: they come in the record's order, param.0, param.1...
        assert [store.read(name).tolist() for name in store.names] == [a.tolist() for a, _ in arrays.values()]
