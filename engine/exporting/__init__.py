"""Streaming, atomic export of any tensors to Burnpack or SafeTensors.

One tensor at a time: raw byte ranges go file to file through the kernel, everything else
in chunks, so memory stays near the largest transformed tensor. The new file is written
beside the destination and renamed over it only when complete; any failure or cancel leaves
the destination exactly as it was. When an existing file is replaced, the new one is flushed
to disk first (fsync), so not even a power cut can lose the old file; a new destination skips
that wait, as cp does.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Sequence

from .. import dtypes
from ..burn_versions import NEWEST, BurnVersion
from ..errors import ExportCancelled, ExportError
from ..formats import format_for_path, writer
from ..sources.regular_files import file_kind
from ..store import TensorSource
from ..quantize import QuantizeSpec
from .written_forms import DEFAULT_DEQUANTIZE_TO, written_form
from .metadata import PRODUCER  # burn-store's meaning: who wrote the file (and `version`, its version)

Progress = Callable[[int, int], None]
Cancel = Callable[[], bool]
COPY_STEP = 64 << 20  # bytes per kernel copy between progress reports and cancel checks
BUFFER = 1 << 20  # bytes per step when the kernel cannot copy
PARTIAL = ".partial"
CLEANUP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def export(items: Iterable[TensorSource], dest: str | os.PathLike, format: str | None = None, *,
           metadata: dict[str, str] | None = None, scalars: dict[str, Any] | None = None,
           overwrite: bool = False, progress: Progress | None = None, cancel: Cancel | None = None,
           burn_version: BurnVersion = NEWEST, dequantize: bool = False,
           dequantize_to: str = DEFAULT_DEQUANTIZE_TO, quantize: QuantizeSpec | None = None) -> Path:
    """Write ``items`` (in order) to ``dest`` and return its path.

    ``format`` defaults to the destination's extension. ``metadata`` is stored as given, plus
    ``producer`` (and ``format`` for Burnpack) unless given. ``scalars`` only go to Burnpack.
    ``progress(done, total)`` is called with bytes; ``cancel()`` returning true stops the export.
    A Burnpack is written for Burn ``burn_version`` (its Bool spelling and quantization scheme);
    ``dequantize`` writes quantized tensors as their F32 values instead of their quantized bytes. GGUF's block
    types are written as ``written_forms`` says (Q8_0 and Q4_0 kept in a Burnpack, others as ``dequantize_to``), and
    ``quantize`` writes the float tensors it selects as Burn's block quantization of them.
    """
    dest = Path(dest)
    fmt = format or format_for_path(dest)
    if fmt is None:
        raise ExportError(f"{dest.name}: choose a format (burnpack or safetensors); the extension names neither "
                          "(.pt and .pth files are read only)")
    if quantize is not None and fmt != "burnpack":
        raise ExportError(f"{dest.name}: only a Burnpack holds quantized tensors; choose a .bpk to quantize")
    items = [written_form(i, fmt, burn_version, dequantize, dequantize_to, quantize) for i in items]
    module = writer(fmt)
    _check(items, fmt, dest, overwrite, burn_version)
    problem = module.scalar_problem(scalars) if fmt == "burnpack" and scalars else None
    if problem:
        raise ExportError(f"{dest.name}: {problem}; nothing was written")
    meta = header_metadata(fmt, metadata)
    total = sum(item.nbytes for item in items)
    with atomic_file(dest) as out:
        offsets = (module.write_header(out, items, meta, scalars or {}, burn_version) if fmt == "burnpack"
                   else module.write_header(out, items, meta, {}))
        done, copier = 0, _RangeCopier()
        for item, offset in zip(items, offsets):
            _pad_to(out, offset)
            for n in _copy(item, out, cancel, copier):
                done += n
                if progress:
                    progress(done, total)
            if getattr(item, "release", None):
                item.release()
    return dest


@contextmanager
def atomic_file(dest: Path) -> Iterator[BinaryIO]:
    """A new file, written beside ``dest`` and renamed over it only when the block ends without an error.

    Any failure, cancel, SIGTERM or SIGHUP removes the partial file and leaves ``dest`` as it was (an
    ``OSError`` becomes an ``ExportError`` naming ``dest``); a replaced file's permissions are kept, and so is
    its content through a power cut (the new one is flushed to disk first); a symlink at ``dest`` is
    replaced by the file, its target left alone. Exports and saved recipes are written through this.
    """
    replacing = os.path.lexists(dest)
    mode = stat.S_IMODE(os.stat(dest).st_mode) if dest.exists() else None
    _clean_stale_partials(dest)
    partial = dest.with_name(f"{_partial_prefix(dest)}{os.getpid()}-{os.urandom(4).hex()}{PARTIAL}")
    try:
        with _signals_clean_up():
            with partial.open("xb") as out:
                yield out
                out.flush()
                if mode is not None:  # a replaced file keeps its permissions (a private model stays private)
                    os.fchmod(out.fileno(), mode)
                if replacing:  # only an old file can be lost to a power cut; flush before it is replaced
                    os.fsync(out.fileno())
            os.replace(partial, dest)
    except BaseException as exc:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass  # the real error matters more than a leftover (the next export here removes it)
        if isinstance(exc, _Terminated):
            exc.deliver()
        if isinstance(exc, OSError):
            raise ExportError(_os_message(dest, exc)) from exc
        raise
    _fsync_dir(dest.parent)


class _Terminated(BaseException):
    """SIGTERM or SIGHUP arrived during an export: clean up like Ctrl+C, then let the signal act."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum

    def deliver(self) -> None:
        signal.raise_signal(self.signum)  # the previous handler is back: by default, the process ends
        raise ExportCancelled(f"export stopped by signal {self.signum}; the destination was left as it was")


def header_metadata(fmt: str, metadata: dict[str, str] | None) -> dict[str, str]:
    """The metadata a ``fmt`` file's header records: ``metadata`` plus, unless given, ``producer`` and, for
    Burnpack, ``format`` and ``version`` (burn-store's default_metadata keys; see engine/metadata_keys.py)."""
    meta = {"producer": PRODUCER, **({"format": "burnpack"} if fmt == "burnpack" else {}), **(metadata or {})}
    if fmt == "burnpack":
        from ..version import __version__
        meta.setdefault("version", __version__)
    return meta


@contextmanager
def _signals_clean_up() -> Iterator[None]:
    """While writing, SIGTERM and SIGHUP raise (so the partial file is removed) instead of killing at once."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can take signals; a window's worker is cleaned up by the next export
        return

    def handler(signum: int, frame: Any) -> None:
        raise _Terminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig in CLEANUP_SIGNALS
                if signal.getsignal(sig) is signal.SIG_DFL}  # None (set outside Python) cannot be restored
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _partial_prefix(dest: Path) -> str:
    """``.NAME.`` of the partial files beside ``dest``, NAME shortened when a partial name would be too long."""
    room = _name_max(dest.parent) - len(f"..{2**22}-{'0' * 8}{PARTIAL}")
    name = dest.name.encode("utf-8", "surrogateescape")
    if len(name) > room:
        name = name[:room].decode("utf-8", "ignore").encode("utf-8")
    return f".{name.decode('utf-8', 'surrogateescape')}."


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _check(items: Sequence[TensorSource], fmt: str, dest: Path, overwrite: bool,
           burn_version: BurnVersion = NEWEST) -> None:
    """Everything that can be known before a byte is written."""
    seen: set[str] = set()
    for item in items:
        if item.name in seen:
            raise ExportError(f"{dest.name}: two tensors would be named {item.name!r}")
        seen.add(item.name)
        reason = dtypes.writable_to(item.dtype, fmt, burn_version, tuple(item.shape))
        if reason:
            raise ExportError(f"{dest.name}: tensor {item.name!r}: {reason}")
    check_destination(dest, overwrite)


def check_destination(dest: Path, overwrite: bool) -> None:
    """Whether a new file may be written at ``dest`` (an export's or a saved recipe's), before a byte is written:
    not a folder, FIFO, device or socket, an existing name only with ``overwrite``, in a folder that exists."""
    if dest.is_dir():
        raise ExportError(f"{dest}: is a folder")
    if os.path.lexists(dest) and not overwrite:  # a dangling symlink is a name that exists too
        raise ExportError(f"{dest.name} already exists in {dest.absolute().parent}; nothing was written")
    if dest.exists() and not dest.is_file():
        raise ExportError(f"{dest.name} is a {_kind(dest)}, not a file: choose a file name to export to")
    if not dest.parent.is_dir():
        folder = dest.absolute().parent
        raise ExportError(f"{dest.name}: {folder} is not a folder" if os.path.lexists(folder) else
                          f"{dest.name}: the folder {folder} does not exist; create it first")


def _kind(path: Path) -> str:
    return file_kind(os.stat(path).st_mode)


def _pad_to(out: Any, offset: int) -> None:
    gap = offset - out.tell()
    if gap < 0:
        raise AssertionError("writer offsets went backwards")
    if gap:
        out.write(bytes(gap))


def _copy(item: TensorSource, out: Any, cancel: Cancel | None, copier: _RangeCopier):
    """Write one tensor's bytes, yielding how many were written after each step."""
    expected = item.nbytes
    written = 0
    source = item.byte_range()
    if source is not None:
        out.flush()
        fd, offset, length = source
        dst = out.fileno()
        verify = getattr(item, "verify", None)  # the source file may change under a long copy
        while written < length:
            if cancel and cancel():
                raise ExportCancelled("export cancelled; the destination was left as it was")
            try:
                n = copier.copy(fd, offset + written, dst, min(COPY_STEP, length - written))
            finally:
                if verify:
                    verify()  # a changed source says so, rather than "ended early"
            written += n
            yield n
        out.seek(0, os.SEEK_END)
    else:
        for chunk in item.iter_bytes():
            if cancel and cancel():
                raise ExportCancelled("export cancelled; the destination was left as it was")
            out.write(chunk)
            written += len(chunk)
            yield len(chunk)
    if written != expected:
        raise ExportError(f"tensor {item.name!r} gave {written} bytes, expected {expected}")


class _RangeCopier:
    """Moves byte ranges file to file without the bytes entering Python where the kernel can.

    ``copy_file_range`` first (it can share extents: no copy at all on btrfs/XFS); it fails across
    filesystems (EXDEV, as from a disk to a tmpfs) and on some of them, and the first failure
    switches this export to ``sendfile``, which copies file to file on any Linux filesystem; where
    that fails too, positioned reads into one reused 1 MiB buffer, small enough to stay in cache.
    """

    FALLBACK = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF, errno.ESPIPE}

    def __init__(self) -> None:
        self.ways = [way for way, available in ((self._copy_file_range, hasattr(os, "copy_file_range")),
                                                (self._sendfile, hasattr(os, "sendfile"))) if available]
        self.buffer: memoryview | None = None

    def copy(self, src: int, offset: int, dst: int, count: int) -> int:
        while self.ways:
            try:
                n = self.ways[0](src, offset, dst, count)
                if n > 0:
                    return n
            except OSError as exc:
                if exc.errno not in self.FALLBACK:
                    raise
            self.ways.pop(0)  # 0 bytes or refused: this way cannot copy here; the next one takes over at once
        return self._through_buffer(src, offset, dst, count)

    @staticmethod
    def _copy_file_range(src: int, offset: int, dst: int, count: int) -> int:
        return os.copy_file_range(src, dst, count, offset)

    @staticmethod
    def _sendfile(src: int, offset: int, dst: int, count: int) -> int:
        return os.sendfile(dst, src, offset, count)  # writes at dst's position and moves it, as write does

    def _through_buffer(self, src: int, offset: int, dst: int, count: int) -> int:
        if self.buffer is None:
            self.buffer = memoryview(bytearray(BUFFER))
        view = self.buffer[:min(count, BUFFER)]
        n = os.preadv(src, [view], offset)
        if n <= 0:
            raise ExportError(f"source ended early at byte {offset}")
        done = 0
        while done < n:
            done += os.write(dst, view[done:n])
        return n


def _clean_stale_partials(dest: Path) -> None:
    """Remove partial files a killed export of the same destination left behind."""
    prefix = _partial_prefix(dest)
    try:
        candidates = [p for p in dest.parent.iterdir() if p.name.startswith(prefix) and p.name.endswith(PARTIAL)]
    except OSError:
        return
    for path in candidates:
        pid = path.name[len(prefix):-len(PARTIAL)].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass  # not ours to fail an export over


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _os_message(dest: Path, exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return f"{dest.name}: the disk is full; nothing was changed (free space and try again)"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{dest.name}: cannot write in {dest.absolute().parent} ({exc.strerror}); nothing was changed"
    return f"{dest.name}: {exc.strerror or exc}; nothing was changed"
