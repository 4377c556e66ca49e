"""Sources on read-only media open and convert, and opening never writes anything beside the source.

Tests run as root, which ignores permission bits, so chmod alone proves nothing: the source folder
is also bind-mounted read-only, where the kernel refuses any write (EROFS) even to root. The
folder's listing, sizes and mtimes (the folder's own mtime changes if a file is so much as created
and deleted in it) are compared before and after.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from engine import export, open_store

REPO = Path(__file__).resolve().parents[2]
SAMPLES = ["sample_cnn.bpk", "sample_cnn.safetensors", "sample_cnn.pt"]


def snapshot(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry's mode, size and mtime, and the folder's own."""
    entries = {p.name: p.stat() for p in folder.iterdir()}
    entries["."] = folder.stat()
    return {name: (s.st_mode, s.st_size, s.st_mtime_ns) for name, s in entries.items()}


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """The samples, chmod 0444 in a chmod 0555 folder, seen through a read-only bind mount."""
    folder = tmp_path / "models"
    folder.mkdir()
    for name in SAMPLES:
        shutil.copy(REPO / "resources/samples" / name, folder / name)
        (folder / name).chmod(0o444)
    folder.chmod(0o555)
    view = tmp_path / "read-only-view"
    view.mkdir()
    bound = subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True, text=True)
    if bound.returncode:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.strip()}")
    try:
        remounted = subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True, text=True)
        if remounted.returncode:
            pytest.skip(f"cannot make a read-only mount here: {remounted.stderr.strip()}")
        with pytest.raises(OSError):
            (view / "probe").write_bytes(b"")  # the kernel, not permission bits, refuses writes here
        yield view
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)
        folder.chmod(0o755)


@pytest.mark.parametrize("name", SAMPLES)
def test_opening_and_reading_a_read_only_source_writes_nothing_beside_it(read_only_folder: Path, name: str) -> None:
    before = snapshot(read_only_folder)
    with open_store(read_only_folder / name) as store:
        assert len(store) > 0
        for entry in store.entries:
            store.read(entry.name)
            assert sum(len(chunk) for chunk in store.iter_bytes(entry.name)) == entry.nbytes
    assert snapshot(read_only_folder) == before
    assert stat.S_IMODE((read_only_folder / name).stat().st_mode) == 0o444


@pytest.mark.parametrize("name", SAMPLES)
def test_a_read_only_source_converts_elsewhere_and_stays_untouched(read_only_folder: Path, name: str,
                                                                   tmp_path: Path) -> None:
    before = snapshot(read_only_folder)
    dest = tmp_path / "out" / f"{name}.safetensors"
    dest.parent.mkdir()
    with open_store(read_only_folder / name) as store:
        export(store.entries, dest)
    result = subprocess.run([sys.executable, "-m", "gui.launch", "convert", str(read_only_folder / name),
                             str(tmp_path / "out" / "cli.bpk")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert snapshot(read_only_folder) == before
    with open_store(read_only_folder / name) as source, open_store(dest) as copy:
        assert copy.names == source.names
        for entry in source.entries:
            assert copy.read(entry.name).tobytes() == source.read(entry.name).tobytes()
