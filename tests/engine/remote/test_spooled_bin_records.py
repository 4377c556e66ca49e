"""A remote Bin record is downloaded whole to a temporary file before it is read (engine/formats/source.py
``spool``), from a real HTTP server on 127.0.0.1: without it a remote Bin record could not be read at all, or
would leave its download behind.

Promises (README, "Remote files") -> tests:
- a whole download (a remote Bin record, read from a memory map) goes to a temporary file in ``$TMPDIR``, and
  the window hears its progress -> test_a_remote_bin_record_is_spooled_reporting_each_piece
- the watcher can stop it, leaving nothing behind -> test_stopping_the_download_leaves_nothing
- ``STORE_STUDIO_MAX_DOWNLOAD`` bounds it, the message naming the file, the size and the variable
  -> test_a_bin_record_over_the_download_limit_is_refused_naming_the_variable
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from engine import humanize, open_store, watch_downloads

from tests.helpers.formats_burn_record_writers import Param, Settings, id_text, model_item, write_record


@pytest.fixture
def downloads(tmp_path, monkeypatch) -> Path:
    """Where temporary files go in these tests (``$TMPDIR``)."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def serve(site, path: Path) -> str:
    site.site.files["/" + path.name] = path.read_bytes()
    return site.url("/" + path.name)


def test_a_remote_bin_record_is_spooled_reporting_each_piece(site, tmp_path, downloads):
    values = np.arange(300_000, dtype="<f4")  # 1.2 MB: the first MiB (read at open) and the rest, two pieces
    path = write_record(tmp_path, "big", {"w": Param(id_text(1), values)}, Settings(recorder="Bin", version="0.17.0"))
    size = path.stat().st_size
    heard: list[tuple[int, int]] = []
    seen: set[str] = set()

    def watch(done: int, total: int) -> None:
        heard.append((done, total))
        seen.update(p.name.rsplit("-", 1)[0] + "-" for p in downloads.iterdir())

    with watch_downloads(watch), open_store(serve(site, path)) as store:
        (name,) = store.names
        assert np.array_equal(store.read(name), values)
    assert len(heard) >= 2 and heard[-1] == (size, size)
    assert all(total == size for _, total in heard)
    assert [done for done, _ in heard] == sorted({done for done, _ in heard}) and heard[0][0] > 0
    assert seen == {"store-studio-download-"}
    assert list(downloads.iterdir()) == []


def test_stopping_the_download_leaves_nothing(site, tmp_path, downloads):
    item, _ = model_item()
    url = serve(site, write_record(tmp_path, "model", item, Settings(recorder="Bin", version="0.17.0")))

    def stop(done: int, total: int) -> None:
        raise InterruptedError("cancelled")

    with watch_downloads(stop), pytest.raises(InterruptedError, match="cancelled"):
        open_store(url)
    assert list(downloads.iterdir()) == []


def test_a_bin_record_over_the_download_limit_is_refused_naming_the_variable(site, tmp_path, downloads, monkeypatch):
    item, _ = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="Bin", version="0.17.0"))
    monkeypatch.setenv("STORE_STUDIO_MAX_DOWNLOAD", "100")
    with pytest.raises(Exception) as caught:
        open_store(serve(site, path))
    assert str(caught.value) == (
        f"model.bin: this kind of file is read from a whole local copy: reading it means downloading all "
        f"{humanize.size(path.stat().st_size)}, over the limit of 100 B (set STORE_STUDIO_MAX_DOWNLOAD, e.g. "
        f"STORE_STUDIO_MAX_DOWNLOAD=1G, to allow it)")
    assert list(downloads.iterdir()) == []
