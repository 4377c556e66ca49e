"""Remote files read by byte ranges over HTTP(S): the remote ``ByteSource``.

Opening asks for the first 64 KiB (``Range: bytes=0-65535``); the answer also says the file's
size (``Content-Range``) and identity (``ETag``, ``Last-Modified``). Reads of values are range
requests through a small in-memory cache of the ranges read so far (index reads hit it; tensor
data larger than a quarter of it goes straight through), so opening a model fetches only its
index. Streaming (``chunks``: a conversion) goes by a ``_Stream`` instead: requests in file
order, growing to 32 MiB, read a few 2 MiB pieces ahead on a thread and never kept in the cache,
so a conversion costs a few dozen requests and its memory stays at those pieces.

Why urllib3 (and not fsspec, requests or huggingface_hub's client): it is the well-kept HTTP
core under requests, loads in ~85 ms (requests ~215 ms, fsspec's HTTP file system needs aiohttp,
~350 ms and an event-loop thread), pools keep-alive connections across threads, and with
``redirect=False`` each redirect hop is ours to follow: the Hub's bearer token is attached per
hop only when that hop's scheme, host and port are the Hub endpoint's (``hub.Target``), so a CDN
or any other host never receives it, whatever a library's default. fsspec's HTTP file records a
file's ETag but does not compare it between reads; here every answer's size, ETag and
Last-Modified are compared with those seen at open, and a change is refused as a changed local
file is. The block cache is a few lines here (ranges kept in an LRU by bytes), sized for how
formats read: one 64 KiB read covers a header, and streaming bypasses it.

Faults end in one ``FormatError`` line: 401/403/404 say what they mean (a token needed or
refused, not found); a dropped connection or a 5xx is retried (``STORE_STUDIO_HTTP_RETRIES``,
default 3; the interrupted range is asked for again from its first missing ``PIECE``),
then reported; a silent server times out (``STORE_STUDIO_HTTP_TIMEOUT`` seconds, default 30).
A server that ignores ``Range`` is read by one full download into an unlinked temporary file
(so nothing is left behind), with a warning, up to ``STORE_STUDIO_MAX_DOWNLOAD`` bytes (default
2 GiB; suffixes K, M, G, T); above it the file is refused with the variable to raise. Also the
block cache and ``prefetch`` (a zip's storage headers, 8 requests at once) are here.

Every server is presumed hostile, so every answer is bounded. Its body is read only as far as
what was asked (the range, else the declared length, within the download limit), never
decoded (``Accept-Encoding: identity``; an encoded body is refused), and an error's or a
redirect's body at most ``ERROR_BODY`` bytes; a body that goes on past that loses its
connection instead of being drained. Each answer has one deadline: urllib3's timeouts bound
each wait for a byte, so a server trickling a byte a second never trips them; here the time an
answer keeps us waiting, headers and body together, is added up (``_Deadline``) and may reach
the timeout plus a second per ``SLOWEST_RATE`` bytes of body asked for, so a slow but real
download finishes while a trickle is cut; a watchdog thread then shuts the socket, which ends
the blocked read at once. Headers are data: numbers are ASCII digits of bounded length, and
a redirect's ``Location`` is checked as the address it names (``hub.origin``). A remote file
opens at most ``MAX_SIBLINGS`` files beside it (a sharded index's shards).
"""

from __future__ import annotations

import bisect
import math
import os
import queue
import re
import socket
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator
from urllib.parse import urljoin

import numpy as np
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from .. import humanize
from ..errors import FormatError, shown
from ..version import __version__
from . import CHUNK, hub
from .downloads import report
from .local import MappedFile
from .locations import RemoteLocation

READ_AHEAD = 64 << 10  # the smallest request: a header read is one round trip
PIECE = 2 << 20  # a stream hands its bytes over this many at a time: small enough to overlap fetching with writing
STREAM_FIRST = 1 << 20  # a new stream's first request: a small tensor read out of file order wastes little
STREAM_SPAN = 32 << 20  # a stream's requests double up to this; each answer is checked to be the file opened
STREAM_PIECES = 4  # pieces a stream holds ready ahead of its reader
SKIP = 1 << 20  # a gap this small ahead of a stream (a zip's headers between storages) is read through
LOOKBACK = 8  # cached ranges before a read's start that may still hold it (read-ahead windows overlap a little)
COALESCE = 16 << 10  # prefetched ranges closer than this are fetched as one
PREFETCH_REQUESTS = 8  # at once, as many as the connection pool keeps per host
CACHE_BYTES = 32 << 20  # ranges kept per open file
DOWNLOAD_PIECE = 1 << 20  # a whole download is written this many bytes at a time
ERROR_BODY = 4 << 10  # of an error's or a redirect's body, read at most this much (its connection is then kept)
SLOWEST_RATE = 64 << 10  # bytes a second: an answer may take the timeout plus a second per this many bytes asked
MAX_SIBLINGS = 1000  # shard files one remote index opens: each costs requests and memory, whatever the index says
MAX_REDIRECTS = 10
RETRIES_VARIABLE = "STORE_STUDIO_HTTP_RETRIES"
TIMEOUT_VARIABLE = "STORE_STUDIO_HTTP_TIMEOUT"
MAX_DOWNLOAD_VARIABLE = "STORE_STUDIO_MAX_DOWNLOAD"
DEFAULT_RETRIES = 3
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_DOWNLOAD = 2 << 30
RETRY_STATUS = {429, 500, 502, 503, 504}
REDIRECTS = {301, 302, 303, 307, 308}
# Numbers in headers: ASCII digits only (int() also reads "1²" and Arabic-Indic digits), 19 at most (under 2**63).
_NUMBER = r"([0-9]{1,19})"
_HEADER_FORMS = {"Content-Length": (re.compile(_NUMBER), "a length"),
                 "Content-Range": (re.compile(rf"bytes (?:{_NUMBER}-{_NUMBER}|\*)/{_NUMBER}"),
                                   "a byte range (bytes FIRST-LAST/SIZE)")}
_SIZE = re.compile(r"(?i)\s*([0-9]{1,19})\s*([kmgt]?)i?b?\s*")


class RemoteWarning(UserWarning):
    """Something a user should know about a remote file that does not stop reading it."""


class Traffic:
    """Bytes and requests sent over the network by this process (the benchmark and tests read it)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.requests = 0
        self._lock = threading.Lock()

    def add(self, nbytes: int = 0, requests: int = 0) -> None:
        with self._lock:
            self.bytes += nbytes
            self.requests += requests


traffic = Traffic()
_pool: urllib3.PoolManager | None = None
_pool_lock = threading.Lock()


class _Dropped(Exception):
    """A transient failure (a connection reset, a timeout, a 5xx): worth another try."""


class _Deadline:
    """The seconds one answer may keep us waiting, headers and body together; a trickling server cannot reset it.

    Only time spent blocked on the server counts (a stream's reader writing to a slow disk costs the server
    nothing); each read of ``n`` bytes adds ``n / SLOWEST_RATE`` seconds, so a large body that arrives at a
    real rate is never cut. The socket is set by the connection that reads the answer's headers. (Connecting is
    bounded apart: by the connect timeout, which CPython's TLS handshake holds as a deadline of its own.)
    """

    def __init__(self, seconds: float):
        self.left = seconds
        self.expired = False
        self.sock: socket.socket | None = None  # set before any wait

    @contextmanager
    def waiting(self, nbytes: int = 0) -> Iterator[None]:
        """Wait on the server for up to ``nbytes`` of body (none: the headers) within what is left."""
        self.left += nbytes / SLOWEST_RATE
        started = time.monotonic()
        _watchdog.arm(self, started + self.left)
        try:
            yield
        finally:
            _watchdog.disarm(self)
            self.left -= time.monotonic() - started

    def expire(self) -> None:
        """Shut the socket: the read blocked on it returns at once (the descriptor is closed by its owner)."""
        self.expired = True
        try:
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)  # the plain socket's: TLS's would unwrap first
        except OSError:  # already closed
            pass

    def dropped(self, exc: BaseException) -> _Dropped:
        return _Dropped("timed out" if self.expired else _reason(exc))

    def check(self) -> None:
        """Raise if the deadline passed: a socket shut mid-answer may read as an answer that simply ended."""
        if self.expired:
            raise _Dropped("timed out")


class _Watchdog:
    """One thread that expires the deadlines that pass while their answer is being waited for."""

    def __init__(self) -> None:
        self._due: dict[_Deadline, float] = {}  # armed deadline -> when (time.monotonic)
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: _Deadline, until: float) -> None:
        with self._changed:
            self._due[deadline] = until
            if self._thread is None or not self._thread.is_alive():  # started on first use (and again in a fork)
                self._thread = threading.Thread(target=self._run, name="store-studio-deadlines", daemon=True)
                self._thread.start()
            self._changed.notify()

    def disarm(self, deadline: _Deadline) -> None:
        with self._changed:
            self._due.pop(deadline, None)

    def _run(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                for deadline in [d for d, until in self._due.items() if until <= now]:
                    del self._due[deadline]
                    deadline.expire()
                self._changed.wait(min(self._due.values(), default=now + 60.0) - now)


_watchdog = _Watchdog()
_requesting = threading.local()  # .deadline: the deadline of the request this thread is making


class _HeadersOnTime:
    """A connection that reads an answer's headers under the deadline of the request this thread is making:
    a server trickling its headers (slow loris) is cut there."""

    sock: socket.socket

    def getresponse(self):  # type: ignore[no-untyped-def]
        deadline: _Deadline = _requesting.deadline
        deadline.sock = self.sock
        with deadline.waiting():
            return super().getresponse()  # type: ignore[misc]


class _Connection(_HeadersOnTime, HTTPConnection):
    pass


class _TlsConnection(_HeadersOnTime, HTTPSConnection):
    pass


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(HTTPSConnectionPool):
    ConnectionCls = _TlsConnection


def pool() -> urllib3.PoolManager:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = urllib3.PoolManager(num_pools=16, maxsize=8, retries=False,
                                        headers={"User-Agent": f"store-studio/{__version__}"})
            _pool.pool_classes_by_scheme = {"http": _Pool, "https": _TlsPool}
        return _pool


class _Answer:
    """A server's answer, its body read only through ``read``: never past what was asked, always by its deadline."""

    def __init__(self, response: urllib3.BaseHTTPResponse, deadline: _Deadline):
        self.response = response
        self.status = response.status
        self.headers = response.headers
        self._deadline = deadline

    def read(self, length: int) -> bytes:
        """At most ``length`` bytes of the body (fewer: it ended); ``_Dropped`` if it breaks off or runs late."""
        try:
            with self._deadline.waiting(length):
                data = self.response.read(length)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._deadline.dropped(exc) from None
        self._deadline.check()
        traffic.add(len(data))
        return data

    def read_exactly(self, length: int) -> bytes:
        data = self.read(length)
        if len(data) != length:
            raise _Dropped("the server closed the connection early")
        return data

    def goes_on(self) -> bool:
        """Whether the body holds more than was read (a server sending past its declared length)."""
        try:
            return not self.response.closed and bool(self.read(1))
        except _Dropped:  # it broke off instead of ending: nothing more came
            return False

    def finish(self, rest: int = 0) -> None:
        """Give the connection back, after reading up to ``rest`` more bytes (a small rest is cheaper to read than
        a new connection); a body that goes on past that is never drained: its connection is closed. (A body
        read to its end gave its connection back to the pool already: ``close`` then leaves it open.)"""
        if rest and not self.response.closed:
            try:
                self.read(rest)
            except _Dropped:
                pass
        self.response.close()
        self.response.release_conn()


def retries() -> int:
    return int(_number(RETRIES_VARIABLE, DEFAULT_RETRIES))


def timeout_seconds() -> float:
    return _number(TIMEOUT_VARIABLE, DEFAULT_TIMEOUT)


def timeout() -> urllib3.Timeout:
    seconds = timeout_seconds()
    return urllib3.Timeout(connect=min(seconds, 10.0), read=seconds)


def max_download() -> int:
    text = os.environ.get(MAX_DOWNLOAD_VARIABLE)
    match = _SIZE.fullmatch(text) if text else None
    if match is None:
        return DEFAULT_MAX_DOWNLOAD
    return int(match[1]) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[match[2].lower()]


def _number(variable: str, default: float) -> float:
    try:
        value = float(os.environ[variable])
    except (KeyError, ValueError):
        return default
    return max(0.0, value) if math.isfinite(value) else default


def check_full_download(where: RemoteLocation, size: int, why: str) -> None:
    """Refuse a whole-file download over the user's limit, naming the variable that raises it."""
    limit = max_download()
    if size > limit:
        raise FormatError(where, f"{why}: reading it means downloading all {humanize.size(size)}, over the limit of "
                                 f"{humanize.size(limit)} (set {MAX_DOWNLOAD_VARIABLE}, e.g. "
                                 f"{MAX_DOWNLOAD_VARIABLE}={-(-size >> 30)}G, to allow it)")


def open_remote(target: hub.Target) -> "RemoteFile | DownloadedFile":
    """The remote file at ``target``, read by ranges; or, if its server ignores ranges, a downloaded copy."""
    location = RemoteLocation(target.shown)
    for failure in range(retries() + 1):
        answer, url, _ = _get(location, target, target.url, f"bytes=0-{READ_AHEAD - 1}")
        try:
            if answer.status == 200:
                return _download(location, target, answer)
            return RemoteFile(location, target, url, answer)
        except _Dropped as exc:  # the first block broke off: ask again
            reason = str(exc)
        finally:
            answer.finish()
    raise FormatError(location, f"the connection failed {retries() + 1} times while reading the first bytes ({reason})")


class RemoteFile:
    """A file on an HTTP(S) server, read by byte ranges: the same methods as the local ``MappedFile``."""

    def __init__(self, location: RemoteLocation, target: hub.Target, url: str, first: _Answer):
        self.path = location
        self._target = target
        self._url = url  # where the redirects ended (the Hub's CDN): later ranges go there directly
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, bytes] = OrderedDict()  # start -> bytes, least recently used first
        self._starts: list[int] = []  # the cache's starts, sorted
        self._cached = 0
        self._changed = False
        self._stream: _Stream | None = None  # where the last ``chunks`` left off, reading on
        self._stream_lock = threading.Lock()  # one reader at a time uses it
        self.closed = False
        self._siblings = 0
        start, last, total = _content_range(location, first)
        self.size = total
        location.size = total
        self._etag = first.headers.get("ETag")
        self._modified = first.headers.get("Last-Modified")
        if first.status == 206 and total:
            if start != 0 or last != min(READ_AHEAD, total) - 1:
                raise FormatError(location, "the server answered the first byte range with other bytes")
            self._remember(0, first.read_exactly(last + 1))

    # --- the ByteSource protocol ----------------------------------------------------------
    @property
    def name(self) -> str:
        return self.path.name

    @property
    def identity(self) -> tuple[int, str | None, str | None]:
        return self.size, self._etag, self._modified

    def fileno(self) -> int | None:
        return None

    def sibling(self, name: str) -> "RemoteFile | DownloadedFile":
        self._siblings = _open_sibling(self.path, self._siblings)
        return open_remote(self._target.sibling(name))

    def prefetch(self, ranges: list[tuple[int, int]]) -> None:
        """Fetch the small ranges a reader is about to ask for, ``PREFETCH_REQUESTS`` at a time, into the cache."""
        with self._lock:
            missing = sorted({(o, n) for o, n in ranges if n > 0 and self._lookup(o, n) is None})
        if len(missing) < 2:
            return
        wanted: list[tuple[int, int]] = []
        for offset, length in missing:  # neighbours a few KiB apart (small tensors' headers) come in one request
            if wanted and offset - sum(wanted[-1]) < COALESCE:
                start = wanted[-1][0]
                wanted[-1] = (start, max(sum(wanted[-1]), offset + length) - start)
            else:
                wanted.append((offset, length))
        with ThreadPoolExecutor(PREFETCH_REQUESTS, thread_name_prefix="store-studio-prefetch") as pool:
            for (offset, length), data in zip(wanted, pool.map(lambda r: self._fetch_piece(*r), wanted)):
                with self._lock:
                    self._remember(offset, data)

    def verify(self) -> None:
        if self._changed:
            raise changed_on_server(self.path)

    def release(self, offset: int, length: int) -> None:
        """Nothing is mapped: values read are private memory, freed with their arrays."""

    def pread(self, offset: int, length: int, what: str = "data") -> bytes:
        self._check_range(offset, length, what)
        return self._cached_read(offset, length, READ_AHEAD)

    def _cached_read(self, offset: int, length: int, ahead: int) -> bytes:
        """Bytes through the cache; a miss fetches at least ``ahead`` bytes around them in one request."""
        if length == 0:
            return b""
        with self._lock:
            hit = self._lookup(offset, length)
        if hit is not None:
            return hit
        if length >= CACHE_BYTES // 4:
            data = self._fetch(offset, length)
            return data if isinstance(data, bytes) else data.tobytes()
        start, stop = self._window(offset, offset + length, ahead)
        data = self._fetch(start, stop - start)
        with self._lock:
            self._remember(start, data)
        return data[offset - start:offset - start + length]

    def array(self, offset: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        """A read-only array of the bytes at ``offset``: one range request (or the cache), nothing else."""
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if count == 0:
            return np.zeros(shape, dtype)
        nbytes = count * dtype.itemsize
        self._check_range(offset, nbytes, "a tensor")
        raw = self.pread(offset, nbytes) if nbytes < CACHE_BYTES // 4 else self._fetch(offset, nbytes)
        array = np.frombuffer(raw, np.uint8) if isinstance(raw, bytes) else raw
        array = array.view(dtype).reshape(shape)
        array.flags.writeable = False
        return array

    def chunks(self, offset: int, length: int, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        """The bytes in pieces of at most ``chunk_size``, read in file order by one ``_Stream``.

        Bytes already in the cache (a header's neighbours, read at open) come from it; the rest
        from the file's stream, which continues where the last ``chunks`` ended: a conversion
        reads tensors in file order, so one stream of growing requests serves them all, its
        next pieces on their way while the caller writes this one (the network and the disk work
        at once, as downloading then converting cannot). Streamed bytes never enter the cache,
        so memory stays at the stream's few pieces whatever the file's size.
        """
        self._check_range(offset, length, "data")
        if length == 0:
            return
        with self._lock:
            hit = self._lookup(offset, length)
        if hit is not None:
            for start in range(0, length, chunk_size):
                yield hit[start:start + chunk_size]
            return
        if not self._stream_lock.acquire(blocking=False):  # another reader streams this file: one of its own
            stream = _Stream(self, offset)
            try:
                yield from stream.read(offset, length, chunk_size)
            finally:
                stream.close()
            return
        try:
            if self._stream is None or not self._stream.reaches(offset):
                self._end_stream()
                self._stream = _Stream(self, offset)
            try:
                yield from self._stream.read(offset, length, chunk_size)
            except BaseException:  # failed, cancelled or abandoned: the next read starts a fresh stream
                self._end_stream()
                raise
        finally:
            self._stream_lock.release()

    def _end_stream(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def close(self) -> None:
        self.closed = True
        stream = self._stream
        if stream is not None:  # without its lock: a reader in another thread then hears "closed", never waits
            stream.close()
        with self._lock:
            self._cache.clear()
            self._starts.clear()
            self._cached = 0

    # --- reading ----------------------------------------------------------------------------
    def _check_range(self, offset: int, length: int, what: str) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FormatError(self.path, f"file is truncated: {what} needs bytes {offset}..{offset + length} "
                                         f"but the file has {self.size}")
        if self.closed:
            raise FormatError(self.path, "is closed")

    def _window(self, start: int, stop: int, ahead: int) -> tuple[int, int]:
        """At least ``ahead`` bytes around a read, forward (or, at the end of the file, backward)."""
        stop = min(self.size, max(stop, start + ahead))
        return max(0, min(start, stop - ahead)), stop

    def _lookup(self, offset: int, length: int) -> bytes | None:
        """The cached bytes, if one range holds them all (ranges are found by start: a zip's hundreds of headers)."""
        index = bisect.bisect_right(self._starts, offset)
        for start in reversed(self._starts[max(0, index - LOOKBACK):index]):
            data = self._cache[start]
            if offset + length <= start + len(data):
                self._cache.move_to_end(start)
                return data[offset - start:offset - start + length]
        return None

    def _remember(self, start: int, data: bytes) -> None:
        old = self._cache.pop(start, None)
        if old is None:
            bisect.insort(self._starts, start)
        self._cached += len(data) - (len(old) if old is not None else 0)
        self._cache[start] = data
        while self._cached > CACHE_BYTES and len(self._cache) > 1:
            dropped_start, dropped = self._cache.popitem(last=False)
            self._starts.pop(bisect.bisect_left(self._starts, dropped_start))
            self._cached -= len(dropped)

    def _fetch(self, start: int, length: int) -> bytes | np.ndarray:
        """``length`` bytes from ``start``: one request up to ``CHUNK``, larger reads piece by piece into one array."""
        if length <= CHUNK:
            return self._fetch_piece(start, length)
        buffer = np.empty(length, np.uint8)
        for done in range(0, length, CHUNK):
            n = min(CHUNK, length - done)
            buffer[done:done + n] = np.frombuffer(self._fetch_piece(start + done, n), np.uint8)
        return buffer

    def _fetch_piece(self, start: int, length: int) -> bytes:
        """One range request, asked again (a bounded number of times) when the connection drops."""
        failures = 0
        while True:
            try:
                data = self._request_range(start, length)
                self.verify()
                return data
            except _Dropped as exc:
                failures += 1
                if failures > retries():
                    raise FormatError(self.path, f"the connection failed {failures} times while reading bytes "
                                                 f"{start}..{start + length} ({exc})") from None
                time.sleep(min(2.0, 0.1 * 2 ** failures))

    def _request_range(self, start: int, length: int) -> bytes:
        answer = self.open_range(start, length)
        try:
            return answer.read_exactly(length)
        finally:
            answer.finish()

    def open_range(self, start: int, length: int) -> _Answer:
        """The answer to one range request, its body unread, checked to hold those bytes of the file opened."""
        answer, _, _ = _get(self.path, self._target, self._url, f"bytes={start}-{start + length - 1}")
        try:
            if answer.status != 206:
                raise FormatError(self.path, f"the server stopped answering byte ranges (HTTP {answer.status})")
            self._check_same(answer)
            first, last, _ = _content_range(self.path, answer)
            if first != start or last != start + length - 1:
                raise FormatError(self.path, f"the server sent bytes {first}..{last} when asked for {start}.."
                                             f"{start + length - 1}")
        except BaseException:
            answer.finish()
            raise
        return answer

    def _check_same(self, answer: _Answer) -> None:
        """Refuse an answer from a file other than the one opened (size, ETag or Last-Modified changed)."""
        _, _, total = _content_range(self.path, answer)
        etag, modified = answer.headers.get("ETag"), answer.headers.get("Last-Modified")
        if total != self.size or (self._etag and etag != self._etag) or (self._modified and modified != self._modified):
            self._changed = True
            raise changed_on_server(self.path)


class _Stream:
    """A remote file's bytes from one offset on, in file order, read on a thread a few pieces ahead.

    Requests grow from ``STREAM_FIRST`` to ``STREAM_SPAN`` bytes as reading goes on in order, so a
    whole conversion costs a few dozen requests; each answer is checked to come from the file as
    opened (size, ETag, Last-Modified), and one that breaks off is asked again from its first
    missing piece, a bounded number of times. ``STREAM_PIECES`` pieces wait at most: memory stays
    at a few ``PIECE`` whatever the file's size.
    """

    def __init__(self, file: RemoteFile, start: int):
        self.file = file
        self.position = start  # the next byte ``read`` hands over
        self._left = memoryview(b"")  # the rest of the piece the last read stopped in
        self._ready: queue.Queue[bytes | BaseException] = queue.Queue(STREAM_PIECES)
        self._stop = threading.Event()
        threading.Thread(target=self._run, args=(start,), name="store-studio-stream", daemon=True).start()

    def reaches(self, offset: int) -> bool:
        """Whether ``offset`` is at or a little ahead of this stream (a small gap is read through)."""
        return self.position <= offset <= self.position + SKIP

    def read(self, offset: int, length: int, chunk_size: int) -> Iterator[memoryview]:
        while self.position < offset:
            self._take(offset - self.position)
        end = offset + length
        while self.position < end:
            yield self._take(min(chunk_size, end - self.position))

    def close(self) -> None:
        """Stop reading ahead: the thread ends after its current piece (its answer is dropped, or drained if short)."""
        self._stop.set()
        while True:
            try:
                self._ready.get_nowait()
            except queue.Empty:
                break
        try:  # for a reader in another thread (its file closed under it): an answer, never a wait
            self._ready.put_nowait(FormatError(self.file.path, "was closed while it was being read"))
        except queue.Full:
            pass

    def _take(self, limit: int) -> memoryview:
        if not self._left:
            piece = self._ready.get()
            if isinstance(piece, BaseException):
                raise piece
            self._left = memoryview(piece)
        data, self._left = self._left[:limit], self._left[limit:]
        self.position += len(data)
        return data

    # --- the reading thread -------------------------------------------------------------------
    def _run(self, position: int) -> None:
        span = STREAM_FIRST
        try:
            while position < self.file.size and not self._stop.is_set():
                stop = min(self.file.size, position + span)
                position = self._read_span(position, stop)
                span = min(STREAM_SPAN, span * 2)
        except BaseException as exc:  # handed to the reader, who raises it
            self._put(exc)

    def _read_span(self, start: int, stop: int) -> int:
        failures = 0
        while start < stop and not self._stop.is_set():
            answer = self.file.open_range(start, stop - start)
            try:
                while start < stop and not self._stop.is_set():
                    piece = answer.read_exactly(min(PIECE, stop - start))
                    self.file.verify()
                    self._put(piece)
                    start += len(piece)
                    failures = 0
            except _Dropped as exc:
                failures += 1
                if failures > retries():
                    raise FormatError(self.file.path, f"the connection failed {failures} times while reading bytes "
                                                      f"{start}..{stop} ({exc})") from None
                time.sleep(min(2.0, 0.1 * 2 ** failures))
            finally:  # a small rest (a stream stopped near its end) is read to keep the connection
                answer.finish(stop - start if stop - start <= SKIP else 0)
        return start

    def _put(self, item: "bytes | BaseException") -> None:
        """Wait for room (the reader takes pieces, or ``close`` empties the queue)."""
        if not self._stop.is_set():
            self._ready.put(item)


class DownloadedFile(MappedFile):
    """A remote file whose server ignores byte ranges, downloaded whole and read like a local one.

    The copy is unlinked as soon as it is open, so it disappears with the process whatever happens.
    """

    def __init__(self, location: RemoteLocation, target: hub.Target, copy: str):
        try:
            super().__init__(copy)
        finally:
            os.unlink(copy)
        self.path = location  # type: ignore[assignment]
        self._target = target
        self._siblings = 0
        self.note = f"The server ignores byte ranges: the whole file ({humanize.size(self.size)}) was downloaded to " \
                    "read it."

    def sibling(self, name: str) -> "RemoteFile | DownloadedFile":  # type: ignore[override]
        self._siblings = _open_sibling(self.path, self._siblings)
        return open_remote(self._target.sibling(name))


def _open_sibling(where: RemoteLocation, opened: int) -> int:
    """How many siblings a remote file has opened with one more; past ``MAX_SIBLINGS`` the file is refused."""
    if opened >= MAX_SIBLINGS:
        raise FormatError(where, f"names more than {MAX_SIBLINGS} shard files, the most a remote index is read with "
                                 "(each is a request and a header in memory); download the model to open it")
    return opened + 1


def changed_on_server(where: RemoteLocation) -> FormatError:
    return FormatError(where, "changed on the server since it was opened (its ETag, Last-Modified or size differ); "
                              "reopen it to read the new contents")


def _download(location: RemoteLocation, target: hub.Target, answer: _Answer) -> DownloadedFile:
    """The whole file from an answer that ignored ``Range``: never more than its declared length (nor the limit)."""
    if "Content-Length" not in answer.headers:
        raise FormatError(location, "the server ignores byte ranges and does not say the file's size")
    size = _header_numbers(location, answer, "Content-Length")[0]
    check_full_download(location, size, "the server ignores byte ranges (HTTP Range)")
    warnings.warn(f"{location.name}: the server ignores byte ranges; downloading all {humanize.size(size)} to read it",
                  RemoteWarning, stacklevel=3)
    fd, name = tempfile.mkstemp(prefix="store-studio-download-")
    try:
        with os.fdopen(fd, "wb") as out:
            received = 0
            report(0, size)
            while received < size:
                try:
                    chunk = answer.read(min(DOWNLOAD_PIECE, size - received))
                except _Dropped as exc:
                    raise FormatError(location, f"the download broke off after {received} of {size} bytes "
                                                f"({exc})") from None
                if not chunk:
                    break
                out.write(chunk)
                received += len(chunk)
                report(received, size)  # the window's status bar; it raises to cancel, which removes the copy
        if received != size:
            raise FormatError(location, f"the download ended after {received} of {size} bytes")
        if answer.goes_on():
            raise FormatError(location, f"the server sent more than the {size} bytes its Content-Length header "
                                        "declares")
        copy = DownloadedFile(location, target, name)
    except BaseException:
        if os.path.exists(name):
            os.unlink(name)
        raise
    location.size = size
    return copy


def _get(location: RemoteLocation, target: hub.Target, url: str, byte_range: str) \
        -> tuple[_Answer, str, bool]:
    """A GET of ``byte_range`` following redirects hop by hop; the answer, where it came from, and if the token went.

    Transient failures (no connection, a timeout, 429/5xx) are retried; other refusals end in one line.
    """
    for failure in range(retries() + 1):
        try:
            return _get_once(location, target, url, byte_range)
        except _Dropped as exc:
            reason = str(exc)
            if url != target.url:  # a CDN address may have expired: start again from the file's own URL
                url = target.url
            if failure < retries():
                time.sleep(min(2.0, 0.1 * 2 ** (failure + 1)))
    raise FormatError(location, f"the server could not be reached after {retries() + 1} tries ({reason})")


def _get_once(location: RemoteLocation, target: hub.Target, url: str, byte_range: str) \
        -> tuple[_Answer, str, bool]:
    for _ in range(MAX_REDIRECTS + 1):
        headers = {"Range": byte_range, "Accept-Encoding": "identity"}
        # the address was checked (hub.target, _redirect): the parse that decides is the one urllib3 connects by
        sent_token = bool(target.token) and hub.origin(url) == target.token_origin
        if sent_token:
            headers["Authorization"] = f"Bearer {target.token}"
        answer = _request(url, headers)
        if answer.status in REDIRECTS and answer.headers.get("Location"):
            answer.finish(ERROR_BODY)
            url = _redirect(location, url, answer.headers["Location"])
            continue
        if answer.status in RETRY_STATUS:
            answer.finish(ERROR_BODY)
            raise _Dropped(f"HTTP {answer.status}")
        if answer.status not in (200, 206, 416):
            answer.finish(ERROR_BODY)
            raise FormatError(location, _refusal(answer.status, sent_token, target.token_origin is not None))
        encoding = answer.headers.get("Content-Encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            answer.finish()
            raise FormatError(location, f"the server sent the file encoded (Content-Encoding: {shown(encoding)}) "
                                        "although asked for its bytes as they are (Accept-Encoding: identity)")
        return answer, url, sent_token
    raise FormatError(location, f"the server redirected more than {MAX_REDIRECTS} times")


def _request(url: str, headers: dict[str, str]) -> _Answer:
    """One GET, its headers read by its deadline; the body is left unread and never decoded."""
    deadline = _Deadline(timeout_seconds())
    _requesting.deadline = deadline
    try:
        response = pool().request("GET", url, headers=headers, redirect=False, retries=False, preload_content=False,
                                  decode_content=False, timeout=timeout())
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise deadline.dropped(exc) from None
    finally:
        _requesting.deadline = None
    traffic.add(requests=1)
    answer = _Answer(response, deadline)
    if deadline.expired:  # the headers were cut short: what came is not the server's whole answer
        answer.finish()
        raise _Dropped("timed out")
    return answer


def _redirect(location: RemoteLocation, url: str, to: str) -> str:
    """The address a redirect's ``Location`` names, refused in one line unless it is one this app would request."""
    try:
        joined = urljoin(url, to)
        hub.origin(joined)
    except ValueError as exc:  # hub.AddressError, or urljoin's own (an unclosed IPv6 bracket)
        reason = exc if isinstance(exc, hub.AddressError) else "is not a valid address"
        raise FormatError(location, f"the server redirected to {hub.shown_address(to)} (its Location header), "
                                    f"which {reason}") from None
    return joined


def _refusal(status: int, sent_token: bool, hub_file: bool) -> str:
    login = "set HF_TOKEN or log in with `hf auth login`" if hub_file else "this server wants credentials"
    if status == 401:
        return ("the server refused the token (HTTP 401): it is wrong or expired" if sent_token
                else f"needs a token (HTTP 401): {login}")
    if status == 403:
        return ("access refused with the token given (HTTP 403): the repository is gated or private and this "
                "token has no access" if sent_token else f"access refused (HTTP 403): a gated or private file; {login}")
    if status == 404:
        return "not found on the server (HTTP 404)"
    return f"the server answered HTTP {status}"


def _content_range(location: RemoteLocation, answer: _Answer) -> tuple[int, int, int]:
    """``(first, last, total)`` of a 206 or 416 answer (a 416's, ``bytes */TOTAL``, holds no bytes: 0, -1)."""
    if answer.headers.get("Content-Range") is None:
        raise FormatError(location, "the server's answer to a byte range does not say which bytes it holds")
    first, last, total = _header_numbers(location, answer, "Content-Range")
    if first is None or last is None:
        return 0, -1, total
    if not first <= last < total:
        raise FormatError(location, f"the server's Content-Range header {shown(answer.headers['Content-Range'])} "
                                    "names bytes outside the file")
    return first, last, total


def _header_numbers(location: RemoteLocation, answer: _Answer, name: str) -> tuple[int | None, ...]:
    """The numbers a header holds (None for an optional one absent), or one line naming the header and its value."""
    form, what = _HEADER_FORMS[name]
    value = answer.headers[name]
    match = form.fullmatch(value.strip())
    if match is None:
        raise FormatError(location, f"the server's {name} header {shown(value)} is not {what} in ASCII digits (at "
                                    "most 19 each)")
    return tuple(None if group is None else int(group) for group in match.groups())


def _reason(exc: BaseException) -> str:
    """A short cause for a network failure (never a URL with a query, which may hold a signature)."""
    if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ConnectTimeoutError, TimeoutError)):
        return "timed out"
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return "cannot connect"
    if isinstance(exc, urllib3.exceptions.NameResolutionError):
        return "unknown host"
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        return "connection dropped"
    if isinstance(exc, urllib3.exceptions.SSLError):
        return "TLS failed"
    if isinstance(exc, urllib3.exceptions.InvalidHeader):
        return "malformed headers"
    return type(exc).__name__
