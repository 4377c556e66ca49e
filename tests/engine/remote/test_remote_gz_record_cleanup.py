"""A remote `.gz` record leaves nothing on disk once closed (README "Remote files and the Hugging Face Hub", what
is cached where: "nothing on disk persists ... a remote `.gz` record is inflated to a temporary file removed when
the tab closes, as for local records"): without it each remote record opened would leave its inflated copy on
disk. A real HTTP server on loopback serves a record
written by Burn's rules (burn_record_writers).

Promise -> test:
- the inflated copy exists only while the remote record is open, and reads as the local record ->
  test_a_remote_gz_record_inflates_to_one_temporary_file_removed_on_close (checked: leaving the temporary file
  in place on close fails it)
"""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from engine import open_store

from tests.helpers.formats_burn_record_writers import Settings, model_item, write_record


@pytest.mark.parametrize("recorder", ["NamedMpkGz", "JsonGz"])
def test_a_remote_gz_record_inflates_to_one_temporary_file_removed_on_close(site, tmp_path, monkeypatch, recorder):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    item, _ = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder=recorder))
    site.site.files["/" + path.name] = path.read_bytes()
    with open_store(path) as local:
        expected = {name: local.read(name).copy() for name in local.names}
    assert list(scratch.iterdir()) == []
    with open_store(site.url("/" + path.name)) as remote:
        assert len(list(scratch.iterdir())) == 1  # the inflated copy, while the record is open
        assert remote.names == list(expected)
        for name, values in expected.items():
            np.testing.assert_array_equal(remote.read(name), values)
    assert list(scratch.iterdir()) == []
