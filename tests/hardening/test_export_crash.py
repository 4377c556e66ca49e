"""A converter killed at any moment never tears the destination, and its leftovers never become it.

The real CLI converts a source with non-zero data (a torn file would differ from both the old and
the new file); it is SIGKILLed when its partial file reaches each of 19 sizes, from "just created"
to "complete but not yet renamed", and once just after the rename. Every attempt starts from its own
old file and writes its own new one (the attempt number is in the metadata), so "old" and "new" can
never be confused across attempts. The destination folder is on disk and, where the machine has one,
on tmpfs, where fsync is nearly free and the export races the kill much faster.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from engine import ArrayStore, FormatError, export, open_store

REPO = Path(__file__).resolve().parents[2]
TENSORS, TENSOR_BYTES = 40, 1 << 20  # 40 MiB in 1 MiB tensors: the partial grows in small steps
KILL_POINTS = 20
TMPFS = Path("/dev/shm")


def partials(folder: Path, dest: Path) -> list[Path]:
    return sorted(folder.glob(f".{dest.name}.*.partial"))


def convert(source: Path, dest: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "gui.launch", "convert", str(source), str(dest), "--overwrite",
                             *extra], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill_when_partial_reaches(proc: subprocess.Popen[bytes], folder: Path, dest: Path, size: int) -> None:
    """SIGKILL as soon as the export's partial file has ``size`` bytes (or at once if the export ended)."""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        own = [p for p in partials(folder, dest) if f".{proc.pid}-" in p.name]
        try:
            if own and own[0].stat().st_size >= size:
                break
        except FileNotFoundError:
            break  # renamed into place this instant
        time.sleep(0.0005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def matches_source(dest: Path, expected: dict[str, np.ndarray], attempt: str | None = None) -> bool:
    """The destination opens and holds exactly the source's tensors (written by ``attempt``, if given)."""
    try:
        with open_store(dest) as store:
            return (attempt is None or store.metadata.get("attempt") == attempt) and store.names == list(expected) \
                and all(store.read(name).tobytes() == array.tobytes() for name, array in expected.items())
    except FormatError:
        return False


def put_old_file(dest: Path, attempt: int) -> bytes:
    """An old destination unlike any other attempt's, put in place without running an export in that folder
    (an export would clean the killed runs' partials itself, hiding whether the CLI does)."""
    side = dest.parent / f"old-{attempt}.bpk"
    export(ArrayStore({"old": np.full(1000, attempt, dtype=np.float32)}).entries, side)
    os.replace(side, dest)
    return dest.read_bytes()


@pytest.fixture(params=["disk", "tmpfs"])
def folder(request: pytest.FixtureRequest, tmp_path: Path):
    """An empty folder for the destination: the test's own temp folder, or one on tmpfs."""
    if request.param == "disk":
        yield tmp_path
        return
    if not sys.platform.startswith("linux"):
        pytest.skip("/dev/shm is Linux's tmpfs")
    assert TMPFS.is_dir(), "Linux always mounts a tmpfs at /dev/shm"
    path = Path(tempfile.mkdtemp(prefix="export-crash-", dir=TMPFS))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    arrays = {f"block{i}.weight": rng.standard_normal(TENSOR_BYTES // 4).astype(np.float32) for i in range(TENSORS)}
    path = tmp_path_factory.mktemp("source") / "big.safetensors"
    export(ArrayStore(arrays).entries, path)
    return path, arrays


def test_sigkill_at_20_points_leaves_the_old_file_or_a_complete_new_one(source, folder: Path) -> None:
    src, arrays = source
    dest = folder / "out.bpk"
    total = sum(a.nbytes for a in arrays.values())
    outcomes = []
    for point in range(KILL_POINTS):
        before = put_old_file(dest, point)
        proc = convert(src, dest, "--metadata", f"attempt={point}")
        last = point == KILL_POINTS - 1  # a size never reached: killed the moment the partial is renamed
        kill_when_partial_reaches(proc, folder, dest, 2 * total if last else total * point // (KILL_POINTS - 2))
        if dest.read_bytes() == before:
            outcomes.append("old")
        else:
            assert matches_source(dest, arrays, str(point)), f"kill point {point}: the destination is torn"
            outcomes.append("new")
        stale = partials(folder, dest)
        assert all(f".{proc.pid}-" in p.name for p in stale), "a later export left an earlier partial behind"
    assert outcomes.count("old") >= KILL_POINTS // 2, f"kills mostly missed the export: {outcomes}"
    assert outcomes[-1] == "new", "the kill just after the rename found the old file"
    finished = convert(src, dest)
    assert finished.wait(60) == 0, finished.stderr.read().decode() if finished.stderr else ""
    assert matches_source(dest, arrays)
    assert partials(folder, dest) == [], "the next run did not clean up the killed runs' partial files"


def test_a_leftover_partial_is_never_opened_as_the_destination(source, tmp_path: Path) -> None:
    """A killed run's partial looks like a valid file's beginning; the destination name never resolves to it."""
    src, arrays = source
    dest = tmp_path / "out.safetensors"
    proc = convert(src, dest)
    kill_when_partial_reaches(proc, tmp_path, dest, TENSOR_BYTES * 4)
    assert not dest.exists()
    [leftover] = partials(tmp_path, dest)
    with pytest.raises(FormatError):
        open_store(dest)
    assert leftover.exists()
    os.unlink(leftover)
