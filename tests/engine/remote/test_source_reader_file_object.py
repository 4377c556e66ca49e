"""``SourceReader`` (engine/formats/source.py) is a read-only, seekable file object over any byte source, local or
remote: the zip and tar readers hand it to ``zipfile`` and ``tarfile``, and a library
that checks the io contract before reading (``io.BufferedReader`` refuses a raw file that is not readable) reads
the same bytes through it. Without it a remote zip or tar checkpoint would fail to open, or read the wrong bytes.

Promises (README, "Remote files") -> tests:
- remote files open wherever paths do, read by ranges -> test_a_buffered_reader_reads_a_remote_file_by_ranges
"""

from __future__ import annotations

import io
import zipfile

import torch

from engine.sources.byte_source import SourceReader, open_source


def test_a_buffered_reader_reads_a_remote_file_by_ranges(site, tmp_path):
    torch.save({"w": torch.arange(1000.0)}, tmp_path / "m.pt")
    data = (tmp_path / "m.pt").read_bytes()
    site.site.files["/m.pt"] = data
    for where in (tmp_path / "m.pt", site.url("/m.pt")):
        source = open_source(where)
        with io.BufferedReader(SourceReader(source), buffer_size=512) as file:
            assert file.readable() and file.seekable() and not file.writable()
            assert file.read(100) == data[:100]
            assert file.seek(-10, io.SEEK_END) == len(data) - 10 and file.read() == data[-10:]
            assert file.seek(5) == 5 and file.read(3) == data[5:8]
            file.seek(0)
            with zipfile.ZipFile(file) as archive, zipfile.ZipFile(tmp_path / "m.pt") as local:
                assert archive.namelist() == local.namelist()
                assert archive.read(archive.namelist()[-1]) == local.read(local.namelist()[-1])
        source.close()
