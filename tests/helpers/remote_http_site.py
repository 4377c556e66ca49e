"""A real HTTP/1.1 server on 127.0.0.1 for remote-file tests: byte ranges, ETag, redirects, a bearer-protected
path and faults injected per path. It serves bytes given in memory (files written by real torch and
safetensors, read back); every request is logged with its Range and Authorization headers.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RANGE = re.compile(r"bytes=(\d+)-(\d*)")


@dataclass
class Request:
    path: str
    range: str | None
    authorization: str | None
    host: str
    client_port: int  # one per connection: requests on a kept-alive connection share it


@dataclass
class Site:
    """What a server serves; tests change it while it runs (e.g. replace a file between reads)."""

    files: dict[str, bytes] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)  # path -> Location (absolute or relative)
    tokens: dict[str, str] = field(default_factory=dict)  # path -> the bearer token it needs
    no_ranges: set[str] = field(default_factory=set)  # paths answered whole, ignoring Range
    drops: dict[str, int] = field(default_factory=dict)  # path -> how many answers break off halfway
    errors: dict[str, list[int]] = field(default_factory=dict)  # path -> statuses answered first, in turn
    stall: set[str] = field(default_factory=set)  # paths never answered until the site is stopped
    pauses: dict[str, tuple[int, threading.Event]] = field(default_factory=dict)  # path -> (after bytes, resume)
    swaps: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # path -> (answers before, new contents)
    no_etag: set[str] = field(default_factory=set)  # paths answered without an ETag (identity by Last-Modified, size)
    modified: dict[str, str] = field(default_factory=dict)  # path -> its Last-Modified, when not the default
    log: list[Request] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def bytes_served(self) -> int:
        return sum(self.served)

    served: list[int] = field(default_factory=list)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    site: Site

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        site = self.server.site  # type: ignore[attr-defined]
        path = self.path.split("?")[0]
        site.log.append(Request(path, self.headers.get("Range"), self.headers.get("Authorization"),
                                self.headers.get("Host", ""), self.client_address[1]))
        if path in site.stall:
            site.stop.wait()
            self.close_connection = True
            return
        if path in site.swaps:  # the file is replaced on the server after this many more answers
            before, contents = site.swaps[path]
            if before == 0:
                site.files[path] = contents
                del site.swaps[path]
            else:
                site.swaps[path] = (before - 1, contents)
        if site.errors.get(path):
            return self._empty(site.errors[path].pop(0))
        if path in site.redirects:
            return self._empty(302, {"Location": site.redirects[path]})
        if path in site.tokens:
            given = self.headers.get("Authorization")
            if given is None:
                return self._empty(401)
            if given != f"Bearer {site.tokens[path]}":
                return self._empty(403)
        data = site.files.get(path)
        if data is None:
            return self._empty(404)
        etag = '"' + hashlib.sha1(data).hexdigest() + '"'
        match = RANGE.fullmatch(self.headers.get("Range") or "")
        if match is None or path in site.no_ranges:
            return self._send(200, data, {"ETag": etag})
        start = int(match[1])
        stop = min(len(data) - 1, int(match[2])) if match[2] else len(data) - 1
        if start >= len(data):
            return self._empty(416, {"Content-Range": f"bytes */{len(data)}"})
        headers = {"ETag": etag, "Content-Range": f"bytes {start}-{stop}/{len(data)}",
                   "Last-Modified": site.modified.get(path, "Mon, 23 Nov 2026 10:00:00 GMT")}
        if path in site.no_etag:
            del headers["ETag"]
        body = memoryview(data)[start:stop + 1]  # no copy: tests measure the client's memory in this process
        if site.drops.get(path):
            site.drops[path] -= 1
            return self._send(206, body, headers, cut=len(body) // 2)
        self._send(206, body, headers)

    def _empty(self, status: int, headers: dict[str, str] | None = None) -> None:
        self._send(status, b"", headers or {})

    def _send(self, status: int, body: "bytes | memoryview", headers: dict[str, str], cut: int | None = None) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        sent = body if cut is None else body[:cut]
        pause = self.server.site.pauses.get(self.path.split("?")[0])  # type: ignore[attr-defined]
        if pause is not None and len(sent) > pause[0]:  # a slow server: part of a long answer, then nothing until
            # the test resumes it; shorter answers (a header's) go whole, or the connection they keep would stall
            self.wfile.write(sent[:pause[0]])
            self.wfile.flush()
            while not pause[1].wait(0.05) and not self.server.site.stop.is_set():  # type: ignore[attr-defined]
                pass
            sent = sent[pause[0]:]
        self.wfile.write(sent)
        self.server.site.served.append(len(sent))  # type: ignore[attr-defined]
        if cut is not None:
            self.wfile.flush()
            self.close_connection = True


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """A client that hung up on a broken answer is what the fault tests want; no traceback."""


class Server:
    """One site on ``host`` at a free port, served from a thread until ``close``."""

    def __init__(self, site: Site, host: str = "127.0.0.1", name: str | None = None):
        self.site = site
        self.httpd = QuietServer((host, 0), Handler)
        self.httpd.site = site  # type: ignore[attr-defined]
        self.base = f"http://{name or host}:{self.httpd.server_address[1]}"
        # close() waits for serve_forever to look at its stop flag, which it does once per poll: socketserver's
        # default (0.5 s) made each test that closes a server wait up to half a second, 35 of the remote tests'
        # 44 s.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.site.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
