"""A hostile HTTP server on 127.0.0.1: each path is one way a server can try to exhaust or confuse a client.

Raw sockets, not ``http.server``: an attack is bytes a well-behaved library would never write (a chunked
body that never ends, a gzip body nobody asked for, headers trickled a byte at a time, numbers of 5,000
digits). Endless answers stop at ``ENDLESS`` bytes (or when the client hangs up) and trickles at
``TRICKLE_BYTES``, so that a client without its bounds fails the tests in seconds rather than hanging them.
``/ok.safetensors`` and ``/shard-N.safetensors`` are well-behaved range answers of a small real file; a TLS
client (an ``https://`` address) gets its handshake trickled.
"""

from __future__ import annotations

import gzip
import json
import re
import socketserver
import threading
import time
from itertools import chain
from typing import Callable, Iterator

import numpy as np
from safetensors.numpy import save as save_safetensors

ENDLESS = 512 << 20  # bytes an "endless" body sends at most: far over the 300 MiB a client may use
TRICKLE_BYTES = 100  # a trickle sends this many bytes, one each TRICKLE_PAUSE, then hangs up
TRICKLE_PAUSE = 0.2  # seconds between a trickle's bytes: the server's behaviour, not a wait in a test
INDEX_SHARDS = 8000
TLS_CLIENT_HELLO = b"\x16"  # the first byte a TLS client sends: a handshake record
_RANGE = re.compile(rb"(?im)^range: *bytes=([0-9]+)-([0-9]*)\r$")
_PATH = re.compile(rb"GET (\S+) HTTP/1\.1")
GZIP_MEMBER = gzip.compress(bytes(1 << 20))  # 1 MiB of zeros in 1 KiB; a gzip body may repeat members
GZIP_MEMBERS = 512  # a 512 KiB body that inflates to 512 MiB
OK_FILE = save_safetensors({"w": np.arange(6, dtype=np.float32).reshape(2, 3)})

Answer = Callable[["Request"], Iterator[bytes]]


class Request:
    def __init__(self, raw: bytes, port: int):
        self.raw = raw
        self.path = _PATH.match(raw)[1].decode("latin-1")
        self.port = port
        match = _RANGE.search(raw)
        self.range = (int(match[1]), int(match[2]) if match[2] else None) if match else None


def head(status: str, *headers: bytes) -> bytes:
    """A status line and headers; every answer closes its connection (the server reads one request each)."""
    lines = [b"HTTP/1.1 " + status.encode(), *headers, b"Connection: close"]
    return b"".join(line + b"\r\n" for line in lines) + b"\r\n"


def endless_chunks(piece: bytes) -> Iterator[bytes]:
    """A chunked body of ``piece`` again and again, up to ``ENDLESS`` bytes, never a last chunk."""
    chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
    for _ in range(ENDLESS // len(piece)):
        yield chunk


def trickle(data: bytes) -> Iterator[bytes]:
    for byte in data[:TRICKLE_BYTES]:
        time.sleep(TRICKLE_PAUSE)
        yield bytes([byte])


def ranged(data: bytes, request: Request) -> Iterator[bytes]:
    """A well-behaved 206 of the bytes asked for."""
    start, stop = request.range or (0, None)
    stop = min(len(data) - 1, stop if stop is not None else len(data) - 1)
    yield head("206 Partial Content", b"Content-Range: bytes %d-%d/%d" % (start, stop, len(data)),
               b"Content-Length: %d" % (stop + 1 - start))
    yield data[start:stop + 1]


def shards_index(request: Request) -> Iterator[bytes]:
    body = json.dumps({"weight_map": {f"t{i}": f"shard-{i}.safetensors" for i in range(INDEX_SHARDS)}}).encode()
    return ranged(body, request)


def shard(request: Request) -> Iterator[bytes]:
    number = int(request.path.rsplit("-", 1)[1].split(".")[0])
    return ranged(save_safetensors({f"t{number}": np.zeros(4, np.float32)}), request)


def redirect(location: bytes) -> Answer:
    return lambda request: iter([head("302 Found", b"Location: " + location.replace(b"PORT", b"%d" % request.port),
                                      b"Content-Length: 0")])


def answer(*parts: bytes) -> Answer:
    return lambda request: iter(parts)


NOT_FOUND = answer(head("404 Not Found", b"Content-Length: 0"))


ANSWERS: dict[str, Answer] = {
    "/ok.safetensors": lambda request: ranged(OK_FILE, request),
    "/model.safetensors.index.json": shards_index,
    # --- memory, disk and time ---
    "/endless-range.safetensors": lambda request: chain(
        [head("206 Partial Content", b"Content-Range: bytes 0-65535/1000000", b"Transfer-Encoding: chunked")],
        endless_chunks(bytes(64 << 10))),
    "/gzip.safetensors": answer(
        head("206 Partial Content", b"Content-Range: bytes 0-65535/1000000", b"Content-Encoding: gzip",
             b"Content-Length: %d" % (len(GZIP_MEMBER) * GZIP_MEMBERS)), *[GZIP_MEMBER] * GZIP_MEMBERS),
    "/no-ranges.safetensors": lambda request: chain(
        [head("200 OK", b"Content-Length: 70000", b"Transfer-Encoding: chunked")], endless_chunks(bytes(64 << 10))),
    "/slow-headers.safetensors": lambda request: chain([b"HTTP/1.1 206 Partial Content\r\n"],
                                                       trickle(b"X-Padding: " + b"a" * TRICKLE_BYTES)),
    "/slow-body.safetensors": lambda request: chain(
        [head("206 Partial Content", b"Content-Range: bytes 0-65535/65536", b"Content-Length: 65536")],
        trickle(bytes(TRICKLE_BYTES))),
    "/huge-404.safetensors": lambda request: chain([head("404 Not Found", b"Transfer-Encoding: chunked")],
                                                   endless_chunks(b"x" * (64 << 10))),
    "/huge-302.safetensors": lambda request: chain(
        [head("302 Found", b"Location: /ok.safetensors", b"Transfer-Encoding: chunked")],
        endless_chunks(b"x" * (64 << 10))),
    # --- headers that are not what they say ---
    "/length-superscript.safetensors": answer(head("200 OK", b"Content-Length: 1\xb2"), b"x"),
    "/length-arabic-indic.safetensors": answer(head("200 OK", "Content-Length: ٧٠".encode()), b"x"),
    "/length-5000-digits.safetensors": answer(head("200 OK", b"Content-Length: " + b"9" * 5000), b"x"),
    "/range-5000-digits.safetensors": answer(head("206 Partial Content", b"Content-Range: bytes 0-9/" + b"9" * 5000,
                                                  b"Content-Length: 10"), bytes(10)),
    "/range-superscript.safetensors": answer(head("206 Partial Content", b"Content-Range: bytes 0-9/1\xb2\xb3",
                                                  b"Content-Length: 10"), bytes(10)),
    "/range-outside.safetensors": answer(head("206 Partial Content", b"Content-Range: bytes 0-9/5",
                                              b"Content-Length: 10"), bytes(10)),
    "/location-port.safetensors": redirect(b"http://127.0.0.1:99999/ok.safetensors"),
    "/location-bracket.safetensors": redirect(b"http://[::1/ok.safetensors"),
    "/location-scheme.safetensors": redirect(b"ftp://127.0.0.1:PORT/ok.safetensors"),
    "/location-control.safetensors": redirect(b"http://127.0.0.1:PORT/ok\x1b[2J.safetensors"),
    "/redirect-loop.safetensors": redirect(b"/redirect-loop.safetensors"),
}


def slow_tls_handshake() -> Iterator[bytes]:
    """To a TLS client (an https:// address): a handshake record announcing 16 KiB, then trickled."""
    return chain([b"\x16\x03\x03\x40\x00"], trickle(bytes(TRICKLE_BYTES)))


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        raw = self.request.recv(65536)
        parts = slow_tls_handshake() if raw[:1] == TLS_CLIENT_HELLO else self._answer(raw)
        try:
            for part in parts:
                self.request.sendall(part)
        except OSError:  # the client hung up: what a bounded client does
            pass

    def _answer(self, raw: bytes) -> Iterator[bytes]:
        while b"\r\n\r\n" not in raw:
            data = self.request.recv(65536)
            if not data:
                return iter(())
            raw += data
        request = Request(raw, self.server.server_address[1])
        respond = ANSWERS.get(request.path) or (shard if request.path.startswith("/shard-") else NOT_FOUND)
        self.server.log.append(request)  # type: ignore[attr-defined]
        return respond(request)


class HostileServer(socketserver.ThreadingTCPServer):
    """Serves ``ANSWERS`` on 127.0.0.1 at a free port, one connection per request, until ``close``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.log: list[Request] = []
        self.base = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.shutdown()
        self.server_close()
