"""A real full disk and a real file-size limit: a clear one-line error, and nothing lost or left behind."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest

from engine import ArrayStore, export

REPO = Path(__file__).resolve().parents[2]


def run_convert(source: Path, dest: Path,
                preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gui.launch", "convert", str(source), str(dest), "--overwrite"],
                          cwd=REPO, capture_output=True, text=True, timeout=60, preexec_fn=preexec)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """4 MiB of non-zero data, on the ordinary disk."""
    rng = np.random.default_rng(3)
    path = tmp_path / "model.safetensors"
    export(ArrayStore({f"w{i}": rng.standard_normal(1 << 18).astype(np.float32) for i in range(4)}).entries, path)
    return path


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs: a disk that really fills up (needs mount rights; skipped without them)."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def old_destination(folder: Path) -> tuple[Path, bytes]:
    dest = folder / "out.bpk"
    export(ArrayStore({"old": np.arange(4096, dtype=np.float32)}).entries, dest)
    return dest, dest.read_bytes()


def test_a_really_full_disk_is_a_clear_error_and_loses_nothing(source: Path, tiny_disk: Path) -> None:
    dest, old = old_destination(tiny_disk)
    free_before = os.statvfs(tiny_disk).f_bfree
    result = run_convert(source, dest)
    assert result.returncode == 1
    assert result.stderr.strip() == ("store-studio: out.bpk: the disk is full; nothing was changed "
                                     "(free space and try again)")
    assert dest.read_bytes() == old
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["out.bpk"], "the partial file was left behind"
    assert os.statvfs(tiny_disk).f_bfree == free_before, "the partial file's space was not given back"


def test_a_file_size_limit_is_a_clear_error_and_loses_nothing(source: Path, tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes writes past 1 MiB fail with EFBIG (Python ignores SIGXFSZ)."""
    folder = tmp_path / "dest"
    folder.mkdir()
    dest, old = old_destination(folder)

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    result = run_convert(source, dest, limit_file_size)
    assert result.returncode == 1
    assert result.stderr.strip() == "store-studio: out.bpk: File too large; nothing was changed"
    assert dest.read_bytes() == old
    assert sorted(p.name for p in folder.iterdir()) == ["out.bpk"], "the partial file was left behind"
