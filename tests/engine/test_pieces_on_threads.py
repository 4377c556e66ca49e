"""Diff and statistics split a large tensor into pieces run on the machine's cores (else a diff of a large model
takes the time of one core): the pieces
must give the single thread's results to the last digit, on real files, and a file changed on disk while
they run must still be caught with the same error. ``run_pieces`` itself must run pieces on two threads,
keep their order, raise the first failure and never wait for a pool busy with another job."""

from __future__ import annotations

import importlib
import os
import threading

import ml_dtypes
import numpy as np
import pytest
import torch
from safetensors.numpy import save_file
from safetensors.torch import save_file as save_torch_file

from engine import FormatError, open_store
from engine import stats as stats_module
from engine.stats import StatsCancelled, compute_stats, stats_for
from engine.surgery import diff
from engine.values import parallel

diff_module = importlib.import_module("engine.surgery.diff")  # the package exports the function as `diff`
CHUNK = 1_000  # with pieces of 3 chunks, a 10,007-value tensor is 4 pieces, the last one short
BARRIER_SECONDS = 30  # only a broken run_pieces waits this long: two threads meet at once when it works


@pytest.fixture
def two_threads(monkeypatch):
    """Pieces of 3 chunks run on two threads, whatever this machine's core count."""
    monkeypatch.setattr(parallel, "THREADS", 2)
    monkeypatch.setattr(diff_module, "PIECE_ELEMENTS", 3 * CHUNK)
    monkeypatch.setattr(stats_module, "PIECE_ELEMENTS", 3 * CHUNK)


def single_thread(monkeypatch, run):
    """``run()`` with one thread and one piece a tensor: the path every small tensor takes."""
    with monkeypatch.context() as patch:
        patch.setattr(parallel, "THREADS", 1)
        patch.setattr(diff_module, "PIECE_ELEMENTS", 1 << 40)
        patch.setattr(stats_module, "PIECE_ELEMENTS", 1 << 40)
        return run()


def pair(tmp_path, a: dict, b: dict, torch_files: bool = False):
    (save_torch_file if torch_files else save_file)(a, tmp_path / "a.safetensors")
    (save_torch_file if torch_files else save_file)(b, tmp_path / "b.safetensors")
    return tmp_path / "a.safetensors", tmp_path / "b.safetensors"


def diff_files(a_path, b_path, **options):
    with open_store(a_path) as a, open_store(b_path) as b:
        return diff(a, b, chunk_elements=CHUNK, **options).tensors


def mixed_tensors(dtype, rng) -> tuple[dict, dict]:
    """Every value differs; some equal chunks; NaN and infinities; smaller than a chunk; an odd size."""
    size = 10_007
    a = (rng.standard_normal(size) * 50).astype(dtype)
    every = (a + dtype(3)).astype(dtype)
    some = a.copy()
    some[4_000:5_500] += dtype(7)  # chunks 0-3 and 6-10 equal, skipped by their bytes
    some[-1] += dtype(1)
    special = a.copy()
    if np.dtype(dtype).kind == "f":
        a_special = a.copy()
        a_special[[10, 3_500, 9_000]] = [np.nan, np.inf, -np.inf]
        special[[10, 3_500, 9_000]] = [np.nan, np.inf, np.inf]  # NaN=NaN equal, inf=inf equal, -inf vs inf not
        special[7_000] += dtype(2)
    else:
        a_special = a.copy()
        special[7_000] += dtype(2)
    small = a[:777]
    left = {"every": a, "some": a, "special": a_special, "small": small, "same": a}
    right = {"every": every, "some": some, "special": special, "small": small + dtype(1), "same": a.copy()}
    return left, right


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.int8, np.uint8])
def test_diff_in_pieces_is_the_single_threads_to_the_last_digit(tmp_path, monkeypatch, two_threads, dtype):
    left, right = mixed_tensors(dtype, np.random.default_rng(3))
    a, b = pair(tmp_path, left, right)
    threaded = diff_files(a, b)
    alone = single_thread(monkeypatch, lambda: diff_files(a, b))
    assert threaded == alone  # every field, floats compared exactly
    by = {t.name: t for t in threaded}
    assert by["same"].status == "identical" and by["every"].status == "different"
    for name in ("every", "some", "small"):  # and they are the values' differences
        gaps = np.abs(left[name].astype(np.float64) - right[name].astype(np.float64))
        assert by[name].max_abs == pytest.approx(gaps.max(), rel=1e-6)
        assert by[name].mean_abs == pytest.approx(gaps.mean(), rel=1e-6)
    without_values = diff_files(a, b, values=False)
    assert [t.status for t in without_values] == [t.status for t in threaded]


def test_bfloat16_files_written_by_torch_diff_in_pieces_as_on_one_thread(tmp_path, monkeypatch, two_threads):
    values = torch.randn(10_007) * 10
    changed = values.clone()
    changed[5_000:] += 0.5
    changed[3] = float("nan")
    a, b = pair(tmp_path, {"w": values.to(torch.bfloat16), "v": values.to(torch.bfloat16)},
                {"w": changed.to(torch.bfloat16), "v": values.to(torch.bfloat16)}, torch_files=True)
    threaded = diff_files(a, b)
    assert threaded == single_thread(monkeypatch, lambda: diff_files(a, b))
    by = {t.name: t for t in threaded}
    assert by["v"].status == "identical" and by["w"].status == "different" and by["w"].max_abs == np.inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_diff_adds_block_sums_in_order_as_one_thread_does(tmp_path, two_threads, dtype):
    """The mean is the sum, in float64 and in tensor order, of each block's sum: exactly, not nearly. Each
    chunk's differences are of another magnitude, so adding the sums in any other grouping rounds otherwise."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(10_007).astype(dtype)
    scale = 10.0 ** rng.integers(-8, 9, size=11).repeat(CHUNK)[:x.size]
    y = (x + rng.standard_normal(x.size) * scale).astype(dtype)
    a, b = pair(tmp_path, {"w": x}, {"w": y})
    (t,) = diff_files(a, b)
    gaps = np.abs(x - y)
    total = 0.0
    for start in range(0, gaps.size, CHUNK):  # chunks of CHUNK values, each one block (BLOCK_ELEMENTS > CHUNK)
        total += float(gaps[start:start + CHUNK].sum())
    assert t.max_abs == float(gaps.max()) and t.mean_abs == total / gaps.size


def test_a_file_changed_on_disk_during_a_diff_in_pieces_says_so(tmp_path, two_threads):
    """The first tensor compares; then the second file is cut short: every piece of the next tensor reads
    past its end or sees it changed, and the diff stops with the single thread's message."""
    values = np.arange(10_007, dtype=np.float32)
    a, b = pair(tmp_path, {"first": values, "second": values}, {"first": values + 1, "second": values + 2})
    seen = []

    def cut_after_first(done: int, total: int) -> None:
        seen.append(done)
        os.truncate(b, os.path.getsize(b) - 20_000)

    with open_store(a) as x, open_store(b) as y:
        with pytest.raises(FormatError, match="b.safetensors: changed on disk since it was opened"):
            diff(x, y, chunk_elements=CHUNK, progress=cut_after_first)
    assert seen == [values.nbytes]


def stats_of_file(path, name="w", cancel=None):
    with open_store(path) as store:
        return stats_for(store.entry(name), chunk_elements=CHUNK, cancel=cancel)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.uint8, np.bool_])
def test_statistics_in_pieces_are_the_single_threads_to_the_last_digit(tmp_path, monkeypatch, two_threads, dtype):
    rng = np.random.default_rng(11)
    values = (rng.standard_normal(10_007) * 40 + 3).astype(dtype)
    if np.dtype(dtype).kind == "f":
        values[[5, 4_000, 9_999]] = [np.nan, np.inf, -np.inf]
    save_file({"w": values, "small": values[:777]}, tmp_path / "one.safetensors")
    for name in ("w", "small"):
        threaded = stats_of_file(tmp_path / "one.safetensors", name)
        assert threaded == single_thread(monkeypatch, lambda: stats_of_file(tmp_path / "one.safetensors", name))
        assert threaded.count == (10_007 if name == "w" else 777)
    in_memory = compute_stats(values, chunk_elements=CHUNK)
    assert in_memory == single_thread(monkeypatch, lambda: compute_stats(values, chunk_elements=CHUNK))
    assert in_memory == stats_of_file(tmp_path / "one.safetensors")


def test_bfloat16_statistics_from_torch_in_pieces_as_on_one_thread(tmp_path, monkeypatch, two_threads):
    values = (torch.randn(10_007) * 3).to(torch.bfloat16)
    values[17] = float("nan")
    save_torch_file({"w": values}, tmp_path / "one.safetensors")
    threaded = stats_of_file(tmp_path / "one.safetensors")
    assert threaded == single_thread(monkeypatch, lambda: stats_of_file(tmp_path / "one.safetensors"))
    wide = values.float().numpy()
    assert threaded.nan == 1 and threaded.min == float(np.nanmin(wide)) and threaded.max == float(np.nanmax(wide))
    assert compute_stats(values.view(torch.uint16).numpy().view(ml_dtypes.bfloat16), chunk_elements=CHUNK) == threaded


def test_a_file_cut_short_during_statistics_in_pieces_says_it_changed(tmp_path, two_threads):
    """The cancel check runs before every chunk, on every thread: the fifth one cuts the file short, and the
    pieces still reading stop with the single thread's message."""
    path = tmp_path / "a.safetensors"
    save_file({"w": np.arange(10_007, dtype=np.float32)}, path)
    calls = []
    lock = threading.Lock()

    def cut_at_fifth_chunk() -> bool:
        with lock:
            calls.append(1)
            if len(calls) == 5:
                os.truncate(path, 20_000)
        return False

    with pytest.raises(FormatError, match="a.safetensors: changed on disk since it was opened"):
        stats_of_file(path, cancel=cut_at_fifth_chunk)


def test_statistics_in_pieces_can_be_cancelled(tmp_path, two_threads):
    save_file({"w": np.arange(10_007, dtype=np.float32)}, tmp_path / "a.safetensors")
    calls = []
    with pytest.raises(StatsCancelled):
        stats_of_file(tmp_path / "a.safetensors", cancel=lambda: calls.append(1) or len(calls) > 3)
    assert len(calls) < 11  # pieces stop: no piece starts after the failure, nor a chunk after a cancel


def test_pieces_run_on_two_threads_and_come_back_in_order(monkeypatch):
    """Each thread builds its worker once; the caller's worker waits until a second thread has built its own,
    which only a pool helper taking a piece can do."""
    monkeypatch.setattr(parallel, "THREADS", 2)
    met = threading.Barrier(2, timeout=BARRIER_SECONDS)
    threads = []

    def make_worker():
        threads.append(threading.get_ident())
        met.wait()
        return lambda piece: (piece, piece * piece)

    assert parallel.run_pieces(9, make_worker) == [(i, i * i) for i in range(9)]
    assert len(set(threads)) == 2 and threading.get_ident() in threads


def test_the_first_failing_piece_is_raised_and_no_piece_starts_after_it(monkeypatch):
    monkeypatch.setattr(parallel, "THREADS", 2)
    started = []

    def make_worker():
        def work(piece: int) -> int:
            started.append(piece)
            if piece >= 2:
                raise ValueError(f"piece {piece}")
            return piece
        return work

    with pytest.raises(ValueError, match="piece 2"):
        parallel.run_pieces(50, make_worker)
    assert len(started) <= 4  # pieces 0, 1 and at most one failing piece per thread


def test_a_pool_busy_with_another_job_does_not_stall_the_caller(monkeypatch):
    """The helper is held by another job: the caller does every piece itself and returns."""
    monkeypatch.setattr(parallel, "THREADS", 2)
    release = threading.Event()
    busy = parallel._helpers().submit(release.wait)
    try:
        assert parallel.run_pieces(5, lambda: lambda piece: piece + 1) == [1, 2, 3, 4, 5]
    finally:
        release.set()
        busy.result()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_runs_pieces_on_threads_of_its_own(monkeypatch):
    """A child forked after the pool started has none of its threads: it makes a pool of its own rather
    than queueing pieces for helpers that do not exist."""
    monkeypatch.setattr(parallel, "THREADS", 2)
    assert parallel.run_pieces(4, lambda: lambda piece: piece) == [0, 1, 2, 3]  # the parent's pool exists
    parent_pool = parallel._helpers()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether its pool is new and two threads met in it, then leave at once
        try:
            met = threading.Barrier(2, timeout=BARRIER_SECONDS)

            def make_worker():
                met.wait()
                return lambda piece: piece

            ok = parallel.run_pieces(6, make_worker) == list(range(6)) and parallel._helpers() is not parent_pool
            os.write(write, b"ok" if ok else b"no")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 2) == b"ok"


@pytest.mark.parametrize("far", [None, 50, 9_500])
def test_allclose_over_pieces_is_numpys_whichever_piece_holds_the_one_far_value(tmp_path, monkeypatch, two_threads, far):
    """A block found not allclose tells the other pieces to skip the check: the answer stays numpy's for the
    whole tensor, whether the one value out of tolerance is in the first piece, the last, or nowhere."""
    x = np.random.default_rng(9).standard_normal(10_007).astype(np.float32)
    y = x * np.float32(1 + 1e-7)  # within rtol 1e-5 everywhere, yet different
    if far is not None:
        y[far] += np.float32(1.0)
    a, b = pair(tmp_path, {"w": x}, {"w": y})
    (threaded,) = diff_files(a, b)
    assert threaded.allclose is bool(np.allclose(y, x)) is (far is None)
    assert threaded.status == "different"
    assert [threaded] == single_thread(monkeypatch, lambda: diff_files(a, b))
