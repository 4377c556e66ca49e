"""Export: streaming, atomic, never losing the old file, checked by outcome on real files: the bytes written,
the metadata kept, the permissions a replaced file keeps, the scalars a Burnpack may hold, what is refused before a
byte is written and the words saying so. A user would lose a model (or a file they meant to keep) if any broke.

Promise -> test (README, "Export"):
- exports are atomic; sources never modified -> test_a_refused_export_leaves_the_folder_as_it_was,
  test_cancel_leaves_the_old_destination_and_no_temp_file
- a replaced file keeps its permissions -> test_a_replaced_file_keeps_its_permissions_and_a_new_one_gets_the_umask
- producer, format and version are written unless given -> test_metadata_gets_producer_format_and_version_unless_given
- bad destinations are one line saying what is wrong -> test_bad_destinations_are_refused_by_what_is_wrong
- partial files of killed exports are cleaned, and their live owners (this process too) are not signalled
  -> test_only_partials_of_dead_processes_are_removed
- the kernel copy is checked -> test_a_source_that_ends_early_is_an_error_naming_the_byte
- Burnpack scalars survive Burnpack to Burnpack; the export refuses a scalar that is not one of Burn's Int, UInt,
  Float, Bool, before writing a byte -> test_a_bare_number_is_refused_naming_the_scalar_and_nothing_is_written,
  test_each_kind_is_written_and_read_back; SafeTensors has no scalars -> test_safetensors_ignores_scalars
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import signal
import stat
import struct
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest
import safetensors.numpy

from engine import ArrayStore, ExportCancelled, ExportError, __version__, export, open_store
from engine.exporting import PARTIAL, _RangeCopier, _os_message, _partial_prefix

export_module = importlib.import_module("engine.exporting")  # the package re-exports the function under this name


def model(n: int = 4, size: int = 1000) -> ArrayStore:
    return ArrayStore({f"layer{i}.weight": np.full(size, i, np.float32) for i in range(n)})


def leftovers(folder) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".partial")]


def test_refuses_to_overwrite_unless_asked(tmp_path):
    dest = tmp_path / "out.bpk"
    dest.write_bytes(b"precious")
    with pytest.raises(ExportError, match="already exists"):
        export(model().entries, dest)
    assert dest.read_bytes() == b"precious"
    export(model().entries, dest, overwrite=True)
    with open_store(dest) as store:
        assert len(store) == 4


def test_progress_counts_bytes_up_to_the_total(tmp_path):
    calls = []
    export(model().entries, tmp_path / "out.safetensors", progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (16000, 16000)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


@pytest.mark.parametrize("fmt", ["bpk", "safetensors"])
def test_cancel_leaves_the_old_destination_and_no_temp_file(tmp_path, fmt):
    dest = tmp_path / f"out.{fmt}"
    dest.write_bytes(b"old contents")
    seen = []
    with pytest.raises(ExportCancelled):
        export(model().entries, dest, overwrite=True, progress=lambda d, t: seen.append(d), cancel=lambda: len(seen) >= 2)
    assert dest.read_bytes() == b"old contents"
    assert leftovers(tmp_path) == []


def test_unwritable_dtype_fails_before_anything_is_written(tmp_path):
    store = ArrayStore({"ok": np.zeros(2, np.float32), "c": np.zeros(2, np.complex128)})
    with pytest.raises(ExportError, match="'c'.*cannot hold"):
        export(store.entries, tmp_path / "out.bpk")
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_is_a_clear_error_and_loses_nothing(tmp_path, monkeypatch):
    source = tmp_path / "src.safetensors"
    export(model().entries, source)
    dest = tmp_path / "dest.bpk"
    dest.write_bytes(b"keep me")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export_module.os, "copy_file_range", full)
    with open_store(source) as store, pytest.raises(ExportError, match="disk is full"):
        export(store.entries, dest, overwrite=True)
    assert dest.read_bytes() == b"keep me" and leftovers(tmp_path) == []


def test_exporting_over_the_open_source_file_works(tmp_path):
    path = tmp_path / "model.bpk"
    export(model().entries, path)
    with open_store(path) as store:
        export(store.entries, path, overwrite=True, metadata={"note": "rewritten"})
        assert store.read("layer3.weight")[0] == 3  # the open store still reads its old bytes
    with open_store(path) as store:
        assert store.metadata["note"] == "rewritten" and store.read("layer2.weight")[5] == 2


def test_stale_partials_of_killed_exports_are_cleaned(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.bpk.{dead.pid}-abcd1234.partial"
    stale.write_bytes(b"torn")
    export(model().entries, tmp_path / "out.bpk")
    assert not stale.exists()


@contextmanager
def no_signal_arrives():
    """While open, a hang-up, terminate or user signal sent to this process fails the test that sent it, naming
    it: asking whether a partial file's owner is alive must not signal it, and when the owner is this very
    process a signal would otherwise end the whole test run, not fail one test."""
    def refuse(number, frame):
        raise AssertionError(f"{signal.Signals(number).name} was sent to this process")
    caught = (signal.SIGHUP, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)
    previous = {number: signal.signal(number, refuse) for number in caught}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def test_a_partial_owned_by_a_live_process_survives_another_export_to_the_same_folder(tmp_path):
    """Another export still writing (a child, this process, or a process of another user: pid 1) keeps its partial,
    and asking whether each is alive sends none of them a signal."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        owners = {"child": live.pid, "self": os.getpid(), "init": 1, "dead": dead.pid}
        files = {who: tmp_path / f".out.bpk.{pid}-{i:08x}.partial" for i, (who, pid) in enumerate(owners.items())}
        for who, path in files.items():
            path.write_bytes(who.encode())
        with no_signal_arrives():
            export(model().entries, tmp_path / "out.bpk")
        assert {who for who, path in files.items() if path.exists()} == {"child", "self", "init"}
        assert files["child"].read_bytes() == b"child"  # untouched, not only present
        assert live.poll() is None  # the child owner was not signalled either
    finally:
        live.kill()
        live.wait()


SIGNAL_WITNESS = """
import signal, sys, time
def said(number, frame):
    print(signal.Signals(number).name, flush=True)
    if number == signal.SIGUSR1:
        sys.exit(0)
for number in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
    signal.signal(number, said)
print("ready", flush=True)
time.sleep(120)
"""


def test_asking_whether_a_partial_s_owner_lives_sends_it_no_signal(tmp_path):
    """Cleaning stale partials asks the kernel whether each owner lives (signal 0): the owner, another export
    still writing, must receive nothing. The witness prints each signal it gets; SIGUSR1, sent last, ends it, and
    pending signals are handled lowest number first, so one sent during the export would print before it."""
    live = subprocess.Popen([sys.executable, "-c", SIGNAL_WITNESS], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline() == "ready\n"
        partial = tmp_path / f".out.bpk.{live.pid}-0000abcd.partial"
        partial.write_bytes(b"theirs")
        export(model().entries, tmp_path / "out.bpk")
        live.send_signal(signal.SIGUSR1)
        assert live.stdout.read() == "SIGUSR1\n" and live.wait() == 0
        assert partial.read_bytes() == b"theirs"
    finally:
        live.kill()
        live.wait()


def test_duplicate_names_are_refused(tmp_path):
    entries = model().entries
    with pytest.raises(ExportError, match="two tensors"):
        export(entries + entries[:1], tmp_path / "x.bpk")


def sparse_safetensors(path, nbytes: int) -> None:
    """A valid SafeTensors file with one huge tensor, sparse on disk (zeros cost no disk)."""
    header = json.dumps({"big": {"dtype": "F32", "shape": [nbytes // 4], "data_offsets": [0, nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + nbytes)


def read_chars() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar")).split()[1])


def test_opening_a_multi_gigabyte_file_reads_only_its_header(tmp_path):
    path = tmp_path / "huge.safetensors"
    sparse_safetensors(path, 8 << 30)
    before = read_chars()
    with open_store(path) as store:
        assert store.entries[0].nbytes == 8 << 30
    assert read_chars() - before < 64 << 10


CONVERT_RSS = """
import sys
from gui.launch import main
code = main(["convert", sys.argv[1], sys.argv[2]])
# VmHWM is this process's own peak; ru_maxrss would include the parent's peak from before exec
print(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).split()[1])
sys.exit(code)
"""


def test_converting_a_gibibyte_model_stays_small_in_memory(tmp_path):
    source = tmp_path / "big.safetensors"
    sparse_safetensors(source, 1 << 30)
    result = subprocess.run([sys.executable, "-c", CONVERT_RSS, str(source), str(tmp_path / "big.bpk")],
                            capture_output=True, text=True, check=True)
    peak_kib = int(result.stdout.split()[-1])
    assert peak_kib < 600 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"
    with open_store(tmp_path / "big.bpk") as store:
        assert store.entries[0].nbytes == 1 << 30


def _refuse(err: int):
    def refused(*args, **kwargs):
        raise OSError(err, os.strerror(err))
    return refused


@pytest.mark.parametrize("refused", [(), ("copy_file_range",), ("copy_file_range", "sendfile")],
                         ids=["copy_file_range", "sendfile", "buffer"])
def test_every_copy_way_writes_the_same_bytes_and_the_refused_ones_are_not_retried(tmp_path, monkeypatch, refused):
    """Across filesystems copy_file_range says EXDEV: sendfile copies in the kernel; where both fail, a buffer."""
    source = tmp_path / "src.safetensors"
    export(model(size=300_000).entries, source)  # 1.2 MB a tensor: more than one buffer's worth
    expected = tmp_path / "expected.bpk"
    export(model(size=300_000).entries, expected)
    calls = {"copy_file_range": 0, "sendfile": 0}
    for name in calls:
        real = _refuse(errno.EXDEV) if name in refused else getattr(os, name)

        def counted(*args, real=real, name=name):
            calls[name] += 1
            return real(*args)
        monkeypatch.setattr(export_module.os, name, counted)
    with open_store(source) as store:
        export(store.entries, tmp_path / "out.bpk")
    assert (tmp_path / "out.bpk").read_bytes() == expected.read_bytes()
    assert all(calls[name] == 1 for name in refused)  # refused once, then this export moves on
    carrier = next((name for name in calls if name not in refused), None)
    if carrier:
        assert calls[carrier] >= 4  # it carried the bytes (four tensors)


def test_a_source_that_shrinks_during_a_sendfile_copy_says_it_changed(tmp_path, monkeypatch):
    source = tmp_path / "src.safetensors"
    export(model(size=300_000).entries, source)
    monkeypatch.setattr(export_module.os, "copy_file_range", _refuse(errno.EXDEV))
    real = os.sendfile

    def shrink_after_first(out_fd, in_fd, offset, count):
        n = real(out_fd, in_fd, offset, count)
        os.truncate(source, 1000)
        return n
    monkeypatch.setattr(export_module.os, "sendfile", shrink_after_first)
    from engine.errors import FormatError
    with open_store(source) as store, pytest.raises(FormatError, match="changed on disk since it was opened"):
        export(store.entries, tmp_path / "out.bpk")
    assert not (tmp_path / "out.bpk").exists() and leftovers(tmp_path) == []


def arrays() -> dict[str, np.ndarray]:
    return {"b": np.arange(6, dtype="<f4").reshape(2, 3), "a": np.array([1, -2, 3], "<i8")}


def test_bytes_are_written_in_the_order_given_with_each_tensors_own_values(tmp_path):
    out = export(ArrayStore(arrays()).entries, tmp_path / "m.safetensors")
    assert out == tmp_path / "m.safetensors"
    loaded = safetensors.numpy.load_file(out)
    assert {k: v.tobytes() for k, v in loaded.items()} == {k: v.tobytes() for k, v in arrays().items()}
    with open_store(out) as store:
        assert store.names == ["b", "a"]  # written in the order given, read in data order


def test_copying_a_file_keeps_every_byte_of_every_tensor(tmp_path):
    """A copy from a file goes through the kernel (byte ranges), not through numpy: same bytes either way."""
    source = export(ArrayStore(arrays()).entries, tmp_path / "src.bpk")
    with open_store(source) as store:
        copy = export(store.entries, tmp_path / "copy.bpk", metadata={"k": "v"})
    with open_store(copy) as store:
        assert {n: store.read(n).tobytes() for n in store.names} == {k: v.tobytes() for k, v in arrays().items()}
        assert store.metadata["k"] == "v"


def test_metadata_gets_producer_format_and_version_unless_given(tmp_path):
    entries = ArrayStore(arrays()).entries
    with open_store(export(entries, tmp_path / "m.bpk")) as store:
        assert store.metadata == {"producer": "store-studio", "format": "burnpack", "version": __version__}
    with open_store(export(entries, tmp_path / "m.safetensors")) as store:
        assert store.metadata == {"producer": "store-studio"}
    given = {"producer": "burn", "format": "x", "version": "0.20.0", "k": "v"}
    with open_store(export(entries, tmp_path / "given.bpk", metadata=given)) as store:
        assert store.metadata == given


def test_scalars_go_to_burnpack_only(tmp_path):
    entries = ArrayStore(arrays()).entries
    with open_store(export(entries, tmp_path / "m.bpk", scalars={"epoch": {"Int": 3}})) as store:
        assert store.scalars == {"epoch": {"Int": 3}}
    with open_store(export(entries, tmp_path / "m.safetensors", scalars={"epoch": {"Int": 3}})) as store:
        assert store.scalars == {} and "epoch" not in store.metadata


def test_a_replaced_file_keeps_its_permissions_and_a_new_one_gets_the_umask(tmp_path):
    entries = ArrayStore(arrays()).entries
    dest = export(entries, tmp_path / "m.bpk")
    os.chmod(dest, 0o600)
    export(entries, dest, overwrite=True)
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
    old = os.umask(0o027)
    try:
        fresh = export(entries, tmp_path / "fresh.bpk")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o640


def test_a_refused_export_leaves_the_folder_as_it_was(tmp_path):
    entries = ArrayStore(arrays()).entries
    dest = tmp_path / "m.bpk"
    dest.write_bytes(b"old")
    with pytest.raises(ExportError) as info:
        export(entries, dest)
    assert str(info.value) == f"m.bpk already exists in {tmp_path}; nothing was written"
    assert dest.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["m.bpk"]


def test_bad_destinations_are_refused_by_what_is_wrong(tmp_path):
    entries = ArrayStore(arrays()).entries
    (tmp_path / "folder.bpk").mkdir()
    os.mkfifo(tmp_path / "pipe.bpk")
    (tmp_path / "link.bpk").symlink_to(tmp_path / "nowhere")
    cases = {
        tmp_path / "m.npz": "m.npz: choose a format (burnpack or safetensors); the extension names neither "
                            "(.pt and .pth files are read only)",
        tmp_path / "folder.bpk": f"{tmp_path / 'folder.bpk'}: is a folder",
        tmp_path / "missing" / "m.bpk": f"m.bpk: the folder {tmp_path / 'missing'} does not exist; create it first",
        tmp_path / "link.bpk": f"link.bpk already exists in {tmp_path}; nothing was written",
    }
    for dest, words in cases.items():
        with pytest.raises(ExportError) as info:
            export(entries, dest)
        assert str(info.value) == words
    with pytest.raises(ExportError) as info:
        export(entries, tmp_path / "pipe.bpk", overwrite=True)
    assert str(info.value) == "pipe.bpk is a FIFO, not a file: choose a file name to export to"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.bpk", "link.bpk", "pipe.bpk"]


def test_a_format_given_by_name_wins_over_the_extension(tmp_path):
    out = export(ArrayStore(arrays()).entries, tmp_path / "weights.bin", "safetensors")
    with open_store(out) as store:
        assert store.format == "safetensors"


def test_a_tensor_name_given_twice_is_refused_before_writing(tmp_path):
    entries = ArrayStore(arrays()).entries
    with pytest.raises(ExportError) as info:
        export([*entries, entries[0]], tmp_path / "m.bpk")
    assert str(info.value) == "m.bpk: two tensors would be named 'b'"
    assert list(tmp_path.iterdir()) == []


def test_only_partials_of_dead_processes_are_removed(tmp_path):
    dest = tmp_path / "m.bpk"
    prefix = _partial_prefix(dest)
    assert prefix == ".m.bpk."
    dead = tmp_path / f"{prefix}{2**22 + 7}-0a1b2c3d{PARTIAL}"  # above Linux's largest pid: no such process
    live = tmp_path / f"{prefix}{os.getpid()}-0a1b2c3d{PARTIAL}"
    other = tmp_path / f".other.bpk.{2**22 + 7}-0a1b2c3d{PARTIAL}"
    odd = tmp_path / f"{prefix}x-0a1b2c3d{PARTIAL}"
    for path in (dead, live, other, odd):
        path.write_bytes(b"partial")
    with no_signal_arrives():  # the owner of `live` is this process
        export(ArrayStore(arrays()).entries, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([dest.name, live.name, other.name, odd.name])


def test_a_long_destination_name_gets_a_partial_name_the_folder_accepts(tmp_path):
    dest = tmp_path / ("é" * 120 + ".bpk")  # 244 bytes: with the partial's suffix, over 255
    prefix = _partial_prefix(dest)
    assert prefix.startswith(".é") and prefix.endswith(".")
    assert len(f"{prefix}{2**22}-{'0' * 8}{PARTIAL}".encode()) <= os.pathconf(tmp_path, "PC_NAME_MAX")
    with open_store(export(ArrayStore(arrays()).entries, dest)) as store:
        assert store.names == ["b", "a"]


def test_a_source_that_ends_early_is_an_error_naming_the_byte(tmp_path):
    src = tmp_path / "src"
    src.write_bytes(bytes(range(10)))
    dst = tmp_path / "dst"
    copier = _RangeCopier()
    copier.ways = []  # the buffered way, as where the kernel refuses to copy
    with open(src, "rb") as i, open(dst, "wb") as o:
        assert copier.copy(i.fileno(), 2, o.fileno(), 5) == 5
        with pytest.raises(ExportError) as info:
            copier.copy(i.fileno(), 10, o.fileno(), 5)
    assert str(info.value) == "source ended early at byte 10"
    assert dst.read_bytes() == bytes([2, 3, 4, 5, 6])


@pytest.mark.parametrize("code, words", [
    (errno.ENOSPC, "m.bpk: the disk is full; nothing was changed (free space and try again)"),
    (errno.EACCES, "m.bpk: cannot write in {folder} (Permission denied); nothing was changed"),
    (errno.EROFS, "m.bpk: cannot write in {folder} (Read-only file system); nothing was changed"),
    (errno.EIO, "m.bpk: Input/output error; nothing was changed"),
])
def test_os_errors_say_what_happened_and_that_nothing_changed(tmp_path, code, words):
    assert _os_message(tmp_path / "m.bpk", OSError(code, os.strerror(code))) == words.format(folder=tmp_path)

ONE = ArrayStore({"w": np.arange(3, dtype=np.float32)}).entries


def test_a_bare_number_is_refused_naming_the_scalar_and_nothing_is_written(tmp_path):
    dest = tmp_path / "m.bpk"
    with pytest.raises(ExportError) as refused:
        export(ONE, dest, scalars={"lr": {"Float": 0.5}, "step": 7})
    assert str(refused.value) == ("m.bpk: scalar 'step' is not one of Int, UInt, Float, Bool: 7; "
                                  "nothing was written")
    assert list(tmp_path.iterdir()) == []


def test_a_true_that_claims_to_be_an_int_is_refused(tmp_path):
    with pytest.raises(ExportError, match=r"scalar 'flag' is not one of Int, UInt, Float, Bool"):
        export(ONE, tmp_path / "m.bpk", scalars={"flag": {"Int": True}})


def test_each_kind_is_written_and_read_back(tmp_path):
    scalars = {"epoch": {"UInt": 3}, "delta": {"Int": -2}, "lr": {"Float": 0.25}, "done": {"Bool": False}}
    with open_store(export(ONE, tmp_path / "m.bpk", scalars=scalars)) as store:
        assert store.scalars == scalars


def test_safetensors_ignores_scalars(tmp_path):
    with open_store(export(ONE, tmp_path / "m.safetensors", scalars={"step": 7})) as store:
        assert [e.name for e in store.entries] == ["w"] and store.scalars == {}
