"""Remote rows: open a 1 GB model over loopback (bytes fetched, time) and convert from a URL.

A real HTTP/1.1 server in a thread serves the generated files from disk (``Range`` with
``sendfile``, ``HEAD`` with the headers the Hub sends), under ``/org/repo/resolve/main/`` so
that ``huggingface_hub.get_safetensors_metadata`` (pointed at it with ``HF_ENDPOINT``) runs its
own code path against the same bytes. Nothing touches the internet.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import models

RESOLVE = "/org/repo/resolve/main/"
ONE_GB = models.Spec("remote", 1408, 9, 16000)  # 1.04 GB of f32: the transformer of models.py, narrower
MEMORY_ALLOWANCE_MIB = 64  # a remote conversion's stream and range cache, over a local one's memory
_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class _Files(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # as web servers and CDNs do: without it, each answer's last segment waits for the client's delayed ACK
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args) -> None:
        pass

    def _target(self) -> Path | None:
        path = self.path.split("?")[0]
        if not path.startswith(RESOLVE):
            return None
        file = self.server.folder / path[len(RESOLVE):]  # type: ignore[attr-defined]
        return file if file.is_file() else None

    def _head(self, file: Path, status: int, start: int, stop: int) -> None:
        size = file.stat().st_size
        self.send_response(status)
        self.send_header("ETag", '"' + hashlib.sha1(f"{file.name}{size}".encode()).hexdigest() + '"')
        self.send_header("X-Repo-Commit", "0" * 40)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(stop - start))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
        self.end_headers()

    def do_HEAD(self) -> None:  # noqa: N802
        file = self._target()
        if file is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._head(file, 200, 0, file.stat().st_size)

    def do_GET(self) -> None:  # noqa: N802
        file = self._target()
        if file is None:
            return self.do_HEAD()
        size = file.stat().st_size
        match = _RANGE.fullmatch(self.headers.get("Range") or "")
        start, stop = (int(match[1]), min(size, int(match[2]) + 1 if match[2] else size)) if match else (0, size)
        self._head(file, 206 if match else 200, start, stop)
        self.server.served += stop - start  # type: ignore[attr-defined]  # counted before the client can have it
        self.wfile.flush()
        with open(file, "rb") as f:
            sent = start
            while sent < stop:
                n = os.sendfile(self.connection.fileno(), f.fileno(), sent, min(stop - sent, 1 << 24))
                if n <= 0:
                    break
                sent += n


class FileServer:
    def __init__(self, folder: Path):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
        self.httpd.daemon_threads = True
        self.httpd.folder = folder  # type: ignore[attr-defined]
        self.httpd.served = 0  # type: ignore[attr-defined]
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, name: str) -> str:
        return self.endpoint + RESOLVE + name

    def served(self) -> int:
        return self.httpd.served  # type: ignore[attr-defined]

    def bytes_of(self, fn) -> int:
        before = self.served()
        fn()
        return self.served() - before

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


DOWNLOAD_THEN_CONVERT = """
import subprocess, sys
url, file, out = sys.argv[1:4]
subprocess.run(["curl", "-sSf", "-o", file, url], check=True)
subprocess.run([sys.executable, "-m", "gui.launch", "convert", file, out], check=True)
"""


def bench_remote(rows: list, Row, measure, files: dict[str, Path], out_folder: Path, ours_convert: list[str]) -> None:
    """Rows: open each format over loopback (bytes and time; vs get_safetensors_metadata for SafeTensors), and
    convert from the URL against downloading with curl then converting the file."""
    from engine import open_store

    folder = files["safetensors"].parent
    shutil.copyfile(files["safetensors"], folder / "model.safetensors")  # the Hub's single-file name
    server = FileServer(folder)
    os.environ["HF_ENDPOINT"] = server.endpoint
    try:
        from huggingface_hub import HfApi
        api = HfApi(endpoint=server.endpoint, token=False)

        def list_remote(name: str) -> None:
            with open_store(server.url(name)) as store:
                [(e.name, e.shape) for e in store.entries]

        def theirs() -> None:
            meta = api.get_safetensors_metadata("org/repo")
            [(k, v.shape) for k, v in meta.files_metadata["model.safetensors"].tensors.items()]

        gb = files["safetensors"].stat().st_size / 1e9
        ref_bytes = server.bytes_of(theirs)
        ref = measure.best_of(theirs)
        ours_bytes = server.bytes_of(lambda: list_remote("model.safetensors"))
        ours = measure.best_of(lambda: list_remote("model.safetensors"))
        label = f"open+list remote .safetensors ({gb:.2g} GB, loopback)"
        rows.append(Row(f"{label}: bytes fetched", ours_bytes, ref_bytes, "get_safetensors_metadata", "<= 1.0x",
                        ours_bytes <= ref_bytes, "B"))
        rows.append(Row(f"{label}: time", ours.seconds, ref.seconds, "get_safetensors_metadata", "<= 1.5x",
                        ours.seconds <= 1.5 * ref.seconds))
        for fmt in ("bpk", "pt"):
            name = files[fmt].name
            fetched = server.bytes_of(lambda: list_remote(name))
            took = measure.best_of(lambda: list_remote(name))
            size = files[fmt].stat().st_size
            rows.append(Row(f"open+list remote .{fmt} ({size / 1e9:.2g} GB): bytes fetched", fetched, None, "",
                            "< 4 MiB", fetched < 4 << 20, "B"))
            rows.append(Row(f"open+list remote .{fmt} ({size / 1e9:.2g} GB): time", took.seconds, None, "", "", None))
        for fmt in ("safetensors", "pt"):
            name = files[fmt].name
            dst = out_folder / "from_url.bpk"
            ours_runs, ref_runs = [], []
            for _ in range(measure.REPEATS["child"]):  # in turn, so both meet the shared machine's same moods
                ours_runs.append(measure.child([*ours_convert, server.url(name), str(dst)], repeat=1, fresh=dst))
                ref_runs.append(measure.child(measure.python(DOWNLOAD_THEN_CONVERT, server.url(name),
                                                             str(out_folder / f"dl.{fmt}"),
                                                             str(out_folder / "downloaded.bpk")),
                                              repeat=1, fresh=out_folder / "downloaded.bpk"))
            ours, ref = (min(runs, key=lambda r: r.seconds) for runs in (ours_runs, ref_runs))
            ours_cpu, ref_cpu = (min(r.cpu_seconds for r in runs) for runs in (ours_runs, ref_runs))
            (out_folder / f"dl.{fmt}").unlink(missing_ok=True)
            same = dst.read_bytes() == (out_folder / "downloaded.bpk").read_bytes()
            label = f"convert URL .{fmt} -> .bpk ({files[fmt].stat().st_size / 1e9:.2g} GB, loopback)"
            rows.append(Row(f"{label} vs curl then convert", ours.seconds, ref.seconds, "curl + convert", "<= 1.0x",
                            ours.seconds <= ref.seconds and same, note="" if same else "OUTPUT DIFFERS"))
            rows.append(Row(f"{label}: CPU (user+system)", ours_cpu, ref_cpu, "curl + convert", "<= 1.0x",
                            ours_cpu <= ref_cpu))
            allowance = MEMORY_ALLOWANCE_MIB
            rows.append(Row(f"{label} peak memory", ours.peak_mib, ref.peak_mib, "curl + convert",
                            f"<= ref + {allowance} MiB", ours.peak_mib <= ref.peak_mib + allowance, "MiB"))
    finally:
        server.close()
        (folder / "model.safetensors").unlink(missing_ok=True)
