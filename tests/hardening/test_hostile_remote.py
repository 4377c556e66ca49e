"""Hostile servers and addresses end in one line, within bounds, on real servers on 127.0.0.1: without it a link from
a stranger could leak a user's Hub token or exhaust their memory, disk or time.

Each class has its own test: the Hub token never reaches another host whatever the address's spelling
(``remote_http_site`` servers log every request's Authorization); a token a header cannot carry is refused naming
its variable; a server that tries to exhaust memory, disk or time (``hard_hostile_http``) is read within 300 MiB,
2 s of CPU (3 s for 8,000 shards) and a file-size limit, measured in a child as ``test_hostile_classes`` does;
headers that are not what they say end in one line, exit 1; and what held before (redirect loops, a
redirect's token rule, shard paths climbing out) still holds.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from safetensors.numpy import save as save_safetensors

from engine.cli import main
from engine.sources.http import MAX_SIBLINGS
from tests.helpers import hard_child as child
from tests.helpers.hard_hostile_http import INDEX_SHARDS, HostileServer
from tests.helpers.remote_http_site import Server, Site

TOKEN = "hf_secret_token_4c5d"
ARRAYS = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}
FILE = "/org/repo/resolve/main/m.safetensors"
FILE_SIZE_LIMIT = 16 << 20  # RLIMIT_FSIZE in the child: a download past it kills the child with SIGXFSZ


@pytest.fixture(autouse=True)
def quick_network(monkeypatch, tmp_path):
    """No saved login; faults tried once; a 1 s timeout, so that a trickle is cut in a second or two."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", "/nonexistent-store-studio-test-home")
    monkeypatch.setenv("STORE_STUDIO_HTTP_RETRIES", "0")
    monkeypatch.setenv("STORE_STUDIO_HTTP_TIMEOUT", "1")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # a whole download's copy goes here


@pytest.fixture
def hub(monkeypatch):
    """The Hub endpoint, serving a gated file that wants ``TOKEN``."""
    server = Server(Site())
    server.site.files[FILE] = save_safetensors(ARRAYS)
    server.site.tokens[FILE] = TOKEN
    monkeypatch.setenv("HF_ENDPOINT", server.base)
    yield server
    server.close()


@pytest.fixture
def elsewhere():
    """Another origin (its own port): it serves the same file to anyone, and logs whether a token came."""
    server = Server(Site())
    server.site.files[FILE] = save_safetensors(ARRAYS)
    yield server
    server.close()


@pytest.fixture
def hostile():
    server = HostileServer()
    yield server
    server.close()


def one_line(error: str) -> str:
    lines = error.splitlines()
    assert len(lines) == 1 and "unexpected error" not in error and "Traceback" not in error, error
    return lines[0]


# --- 1. the token goes to the Hub alone ----------------------------------------------------------------

# Authorities a check and a connection could read differently: HUB and ELSEWHERE are the two servers' host:port.
SPELLINGS = {
    "backslash": "ELSEWHERE\\@HUB",  # urllib3 connects to ELSEWHERE, urlsplit reads HUB: the token would go to ELSEWHERE
    "userinfo": "HUB@ELSEWHERE",
    "tab": "ELSEWHERE\t@HUB",
    "space": "ELSEWHERE @HUB",
    "escape": "ELSEWHERE\x1b@HUB",
    "line break": "ELSEWHERE\n@HUB",
    "nul": "ELSEWHERE\x00@HUB",
    "ideographic space": "ELSEWHERE\u3000@HUB",
}
HEADER_SAFE = ("backslash", "userinfo", "tab", "space", "escape")  # a Location header can carry these as they are
ROUTES = [(route, spelling) for route in ("address", "page", "redirect") for spelling in SPELLINGS
          if route != "redirect" or spelling in HEADER_SAFE]


@pytest.mark.parametrize("route, spelling", ROUTES)
def test_the_token_never_reaches_another_host_whatever_the_address_spelling(route, spelling, hub, elsewhere,
                                                                              monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    authority = SPELLINGS[spelling].replace("ELSEWHERE", elsewhere.base[7:]).replace("HUB", hub.base[7:])
    address = f"http://{authority}{FILE}"
    if route == "page":
        address = address.replace("/resolve/", "/blob/")
    if route == "redirect":
        hub.site.redirects["/org/repo/resolve/main/moved.safetensors"] = address
        assert main(["inspect", "hf://org/repo/moved.safetensors"]) == 1
    else:
        assert main(["inspect", address]) == 1
    line = one_line(capsys.readouterr().err)
    assert re.search(r"holds (a backslash|a tab|a space|a line break|a control character|a user name)", line), line
    assert TOKEN not in line
    assert elsewhere.site.log == []  # refused before any request
    assert [r.path for r in hub.site.log] == (["/org/repo/resolve/main/moved.safetensors"] if route == "redirect"
                                              else [])


@pytest.mark.parametrize("token", ["hf_abc\ndef", "hf_abc\r\nX-Injected: 1", "hf_abc\x1b[2Jdef", "hf_abc def",
                                   "hf_abcé", "hf_abc\u4e2ddef"])
def test_a_token_a_header_cannot_carry_is_refused_naming_its_variable_never_its_value(token, hub, monkeypatch,
                                                                                      capsys):
    monkeypatch.setenv("HF_TOKEN", token)
    assert main(["inspect", "hf://org/repo/m.safetensors"]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith("store-studio: m.safetensors: HF_TOKEN is not a valid token"), line
    assert "abc" not in line and "def" not in line
    assert hub.site.log == []


def test_a_saved_login_a_header_cannot_carry_is_refused_naming_where_it_came_from(hub, tmp_path, monkeypatch):
    """In a child: huggingface_hub reads HF_HOME when it is imported."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "token").write_text("hf_abc\x1b]52;c;aGk=\x07def")  # where `hf auth login` saves it
    run = child.cli("inspect", "hf://org/repo/m.safetensors")
    assert run.status == 1, run.describe()
    line = one_line(run.output)
    assert line == ("store-studio: m.safetensors: the token `hf auth login` saved is not a valid token: it holds a "
                    "space, a control or a non-ASCII character, which a request header cannot carry; set it to the "
                    "token alone"), line
    assert hub.site.log == []


# --- 2. every read is bounded ------------------------------------------------------------------------

INSPECT_WITHIN_A_FILE_SIZE_LIMIT = f"""
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, ({FILE_SIZE_LIMIT}, {FILE_SIZE_LIMIT}))
from engine.cli import main
sys.exit(main(["inspect", sys.argv[1]]))
"""
BOUNDS = {  # path -> (exit status, what its last line says)
    "/endless-range.safetensors": (1, r"endless-range\.safetensors: not a Burnpack, SafeTensors"),
    "/gzip.safetensors": (1, r"gzip\.safetensors: the server sent the file encoded \(Content-Encoding: 'gzip'\)"),
    "/no-ranges.safetensors": (1, r"no-ranges\.safetensors: the server sent more than the 70000 bytes its "
                                  r"Content-Length header declares"),
    "/slow-headers.safetensors": (1, r"slow-headers\.safetensors: .*\(timed out\)"),
    "/slow-body.safetensors": (1, r"slow-body\.safetensors: .*\(timed out\)"),
    "/slow-tls.safetensors": (1, r"slow-tls\.safetensors: .*\(timed out\)"),  # over https://: the handshake
    "/huge-404.safetensors": (1, r"huge-404\.safetensors: not found on the server \(HTTP 404\)"),
    "/huge-302.safetensors": (0, r"1 tensor · 6 parameters"),  # the redirect's endless body unread, followed
    "/model.safetensors.index.json": (1, rf"names more than {MAX_SIBLINGS} shard files"),
}


@pytest.mark.parametrize("path", BOUNDS)
def test_a_hostile_server_is_read_within_bounds_and_ends_in_one_line(path, hostile, tmp_path):
    status, says = BOUNDS[path]
    address = hostile.url(path).replace("http://", "https://" if "tls" in path else "http://")
    run = child.snippet(INSPECT_WITHIN_A_FILE_SIZE_LIMIT, address)
    assert run.status == status and "Traceback" not in run.output and "unexpected" not in run.output, run.describe()
    assert re.search(says, run.output.strip().splitlines()[-1]), run.describe()
    if status:  # a warning (the download of a server ignoring ranges) may come first
        assert run.output.strip().splitlines()[-1].startswith("store-studio: "), run.describe()
    many_shards = path.endswith(".index.json")
    assert run.within_limits(3.0 if many_shards else child.MAX_CPU), run.describe()
    assert list(tmp_path.iterdir()) == []  # no downloaded copy left behind
    if many_shards:  # the index, then each shard's first block, up to the cap: not INDEX_SHARDS of them
        assert MAX_SIBLINGS < len(hostile.log) <= MAX_SIBLINGS + 2 < INDEX_SHARDS


def test_the_headers_of_a_remote_index_s_shards_are_bounded_together(hub, capsys):
    """One shard's 60 MB header is read; the next one's 50 MB would pass the 100 MB over: refused from its length."""
    folder = "/org/repo/resolve/main/"
    first = save_safetensors(ARRAYS, metadata={"padding": "x" * 60_000_000})
    hub.site.files.update({folder + "a.safetensors": first,
                           folder + "b.safetensors": (50_000_000).to_bytes(8, "little") + b'{"b": ',
                           folder + "model.safetensors.index.json": b'{"weight_map": {"w": "a.safetensors", '
                                                                    b'"v": "b.safetensors"}}'})
    assert main(["inspect", "hf://org/repo/model.safetensors.index.json"]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.endswith("model.safetensors.index.json: the shards' headers together exceed 100000000 bytes, the "
                         "limit of one file's header"), line
    assert [r.range for r in hub.site.log if r.path.endswith("b.safetensors")] == ["bytes=0-65535"]


def test_every_request_asks_for_the_bytes_as_stored(hostile):
    assert main(["inspect", hostile.url("/huge-302.safetensors")]) == 0
    assert len(hostile.log) == 2 and all(b"\r\nAccept-Encoding: identity\r\n" in r.raw for r in hostile.log)


# --- 3. headers are data ----------------------------------------------------------------------------

HEADERS = {  # path -> what the one line says
    "/length-superscript.safetensors": r"Content-Length header '1²' is not a length in ASCII digits",
    "/length-arabic-indic.safetensors": r"Content-Length header .* is not a length in ASCII digits",
    "/length-5000-digits.safetensors": r"Content-Length header '9{20,}.*\.\.\. is not a length",
    "/range-5000-digits.safetensors": r"Content-Range header 'bytes 0-9/9{20,}.*\.\.\. is not a byte range",
    "/range-superscript.safetensors": r"Content-Range header 'bytes 0-9/1²³' is not a byte range",
    "/range-outside.safetensors": r"Content-Range header 'bytes 0-9/5' names bytes outside the file",
    "/location-port.safetensors": r"redirected to 'http://127\.0\.0\.1:99999/ok\.safetensors' \(its Location "
                                  r"header\), which is not a valid address",
    "/location-bracket.safetensors": r"redirected to 'http://\[::1/ok\.safetensors' \(its Location header\), which "
                                     r"is not a valid address",
    "/location-scheme.safetensors": r"redirected to 'ftp://.*' \(its Location header\), which is not an http:// or "
                                    r"https:// address",
    "/location-control.safetensors": r"redirected to .* \(its Location header\), which holds a control character",
}


@pytest.mark.parametrize("path", HEADERS)
def test_a_malformed_header_ends_in_one_line_naming_it(path, hostile, capsys):
    assert main(["inspect", hostile.url(path)]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"store-studio: {path[1:]}: ") and re.search(HEADERS[path], line), line
    assert "\x1b" not in line


@pytest.mark.parametrize("address", ["http://127.0.0.1:99999/m.safetensors", "http://127.0.0.1:8a/m.safetensors",
                                     "http://[::1/m.safetensors", "http:///m.safetensors"])
def test_an_address_that_cannot_be_read_ends_in_one_line(address, capsys):
    assert main(["inspect", address]) == 1
    line = one_line(capsys.readouterr().err)
    assert re.search(r"m\.safetensors: '.*' (is not a valid address|names no host)", line), line


# --- what held and must keep holding ------------------------------------------------------------------

@pytest.mark.parametrize("to, status", [("http://localhost:HUB_PORT", 1),  # the Hub's file wants the token: 401
                                        ("http://127.0.0.1:ELSEWHERE_PORT", 0),
                                        ("https://127.0.0.1:HUB_PORT", 1)])  # TLS to a plain server fails
def test_a_redirect_to_another_host_port_or_scheme_goes_without_the_token(to, status, hub, elsewhere, monkeypatch,
                                                                           capsys):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    to = to.replace("HUB_PORT", hub.base.rsplit(":", 1)[1]).replace("ELSEWHERE_PORT", elsewhere.base.rsplit(":", 1)[1])
    hub.site.redirects["/org/repo/resolve/main/moved.safetensors"] = to + FILE
    assert main(["inspect", "hf://org/repo/moved.safetensors"]) == status
    if status:
        assert TOKEN not in one_line(capsys.readouterr().err)
    tokens = [(r.host, r.authorization) for r in hub.site.log + elsewhere.site.log]
    assert tokens[0] == (hub.base[7:], f"Bearer {TOKEN}") and all(a is None for _, a in tokens[1:]), tokens


def test_a_redirect_loop_ends_in_one_line(hostile, capsys):
    assert main(["inspect", hostile.url("/redirect-loop.safetensors")]) == 1
    assert one_line(capsys.readouterr().err).endswith("the server redirected more than 10 times")
    assert len(hostile.log) == 11


def test_a_remote_shard_climbing_out_of_the_index_folder_is_refused_unread(hub, capsys):
    hub.site.files["/org/repo/resolve/main/model.safetensors.index.json"] = (
        b'{"weight_map": {"w": "../../../../secret.safetensors"}}')
    hub.site.files["/secret.safetensors"] = save_safetensors(ARRAYS)
    assert main(["inspect", "hf://org/repo/model.safetensors.index.json"]) == 1
    assert "lies outside the index's folder" in one_line(capsys.readouterr().err)
    assert [r.path for r in hub.site.log] == ["/org/repo/resolve/main/model.safetensors.index.json"]
