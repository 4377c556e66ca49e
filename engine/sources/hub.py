"""Hugging Face Hub addresses: ``hf://[datasets/]ORG/REPO[@REV]/PATH`` and page URLs (``.../blob/REV/PATH``).

Both become the Hub's ``resolve`` URL (``{endpoint}/ORG/REPO/resolve/REV/PATH``), which serves the
file itself (redirecting large ones to a CDN), so opening one file needs no listing API.
``HF_ENDPOINT`` names the Hub (a mirror, or a private deployment). The token (``HF_TOKEN``, else
the one ``hf auth login`` saved, read with huggingface_hub's ``get_token``) belongs to that
endpoint's host alone: ``Target.token_origin`` names it, and the HTTP layer sends the token on a
request only when the request's own scheme, host and port are that origin (never to a redirect's
target on another host). A target's ``repr`` never shows the token, and no message holds it.

One parser decides and connects: ``origin`` reads an address with urllib3's ``parse_url``, the parse
the connection is opened by. Where the standard library's ``urlsplit`` (which the rest of the code,
and a reader's eye, use) reads another host or port, as it does past a backslash or a control
character (``http://a:1\\@b:2/`` connects to ``a:1`` but reads as ``b:2``), the address is refused
before any request: a check and a connection that parse differently would send the token elsewhere.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from ..errors import FormatError, shown

ENDPOINT_VARIABLE = "HF_ENDPOINT"
TOKEN_VARIABLE = "HF_TOKEN"
DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_REVISION = "main"
_HF = re.compile(r"(?i)hf://(?P<kind>datasets/|spaces/)?(?P<org>[^/@]+)/(?P<repo>[^/@]+)"
                 r"(?:@(?P<rev>[^/]+))?/(?P<path>.+)")
KINDS = ("datasets", "spaces")  # a repository of these kinds has its kind before ORG/REPO in every URL
SCHEMES = ("http", "https")
_HEADER_TOKEN = re.compile(r"[\x21-\x7e]+")  # visible ASCII: a token outside it cannot go in a request header
SHOWN_ADDRESS = 200  # characters of a refused address a message shows
_ODD_CHARACTERS = {"\\": "a backslash", "\t": "a tab", "\n": "a line break", "\r": "a line break"}


class AddressError(ValueError):
    """An address this app does not request: the reason, to be told with whatever named the address."""


@dataclass(frozen=True)
class Target:
    """A remote file: ``shown`` as the user named it, ``url`` as first requested, and who may get the token."""

    shown: str
    url: str
    token: str | None = field(default=None, repr=False)
    token_origin: tuple[str, str, int] | None = None

    def sibling(self, name: str) -> "Target":
        """The file ``name`` (relative, already checked) in the same folder, with the same token rule."""
        return Target(_join(self.shown, name), _join(self.url, name), self.token, self.token_origin)


def endpoint() -> str:
    return (os.environ.get(ENDPOINT_VARIABLE) or DEFAULT_ENDPOINT).rstrip("/")


def origin(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of the connection urllib3 opens for ``url``: all three must match before a token
    is sent. Raises ``AddressError`` for an address that is not requested at all (see the module's docstring)."""
    _refuse_odd_characters(url)
    try:
        connected = parse_url(url)
        seen = urlsplit(url)
        seen_port = seen.port
    except (LocationParseError, ValueError):
        raise AddressError("is not a valid address (its host or port cannot be read, or the port is out of "
                           "range)") from None
    scheme = (connected.scheme or "").lower()
    if scheme not in SCHEMES:
        raise AddressError("is not an http:// or https:// address")
    if connected.auth is not None or "@" in seen.netloc:
        raise AddressError("holds a user name or password before '@', which is never sent")
    if not connected.host:
        raise AddressError("names no host")
    port = connected.port or (443 if scheme == "https" else 80)
    host = (seen.hostname or "").lower()
    if (seen.scheme, f"[{host}]" if ":" in host else host, seen_port or port) != (scheme, connected.host, port):
        raise AddressError("is read with different hosts or ports by different URL parsers")
    return scheme, connected.host, port


def _refuse_odd_characters(url: str) -> None:
    """Refuse what parsers disagree on: ``urlsplit`` drops tabs and line breaks that urllib3 keeps, and urllib3
    ends the host at a backslash (as browsers do) where ``urlsplit`` reads on."""
    odd = next((c for c in url if c == "\\" or c.isspace() or not c.isprintable()), None)
    if odd is not None:
        what = _ODD_CHARACTERS.get(odd) or ("a space" if odd.isspace() else "a control character")
        raise AddressError(f"holds {what}, which URL parsers read differently (write it percent-encoded)")


def shown_address(url: str) -> str:
    """An address as a message shows it: control characters escaped, no query (a CDN's signature), cut short."""
    return shown(url.split("?", 1)[0], SHOWN_ADDRESS)


def target(text: str) -> Target:
    """Where to read ``text`` (an ``http(s)://`` or ``hf://`` URL) and whether the Hub's token goes along.

    Raises ``FormatError`` for an address that two parsers read differently, and for a token that a request
    header cannot carry (naming where it came from, never its value)."""
    hub = endpoint()
    try:
        hub_origin = origin(hub)
    except AddressError as exc:
        raise FormatError(text, f"{ENDPOINT_VARIABLE} ({shown_address(hub)}) {exc}") from None
    match = _HF.fullmatch(text)
    if text.lower().startswith("hf://"):
        if match is None:
            raise FormatError(text, "is not an hf://ORG/REPO[@REVISION]/PATH address")
        url = resolve_url(hub, (match["kind"] or "") + match["org"], match["repo"], match["rev"] or DEFAULT_REVISION,
                          match["path"])
    else:
        try:
            text_origin = origin(text)
        except AddressError as exc:
            raise FormatError(text, f"{shown_address(text)} {exc}") from None
        url = _page_to_resolve(text) if text_origin == hub_origin else text
    if origin(url) != hub_origin:
        return Target(text, url)
    return Target(text, url, token(text), hub_origin)


def resolve_url(hub: str, org: str, repo: str, revision: str, path: str) -> str:
    return f"{hub}/{quote(org)}/{quote(repo)}/resolve/{quote(revision, safe='')}/{quote(path)}"  # org may be kind/org


def _page_to_resolve(url: str) -> str:
    """A Hub page (``ORG/REPO/blob/REV/PATH``) as the file's ``resolve`` URL; other URLs as they are."""
    parts = urlsplit(url)
    segments = parts.path.split("/")
    at = 4 if len(segments) > 1 and segments[1] in KINDS else 3  # /[datasets/]ORG/REPO/blob/REV/PATH
    if len(segments) > at + 2 and segments[at] == "blob":
        segments[at] = "resolve"
        return parts._replace(path="/".join(segments), query="", fragment="").geturl()
    return url


def token(where: str) -> str | None:
    """The user's Hub token for reading ``where``, or None; never logged, never in a message.

    ``HF_TOKEN`` first (no import), then the saved login. A token a request header cannot carry (a newline, a
    control or a non-ASCII character) is refused naming where it came from: sent, it would fail inside the HTTP
    library with an error that prints the header, token and all."""
    value = os.environ.get(TOKEN_VARIABLE)
    if value:
        return _header_token(value.strip(), TOKEN_VARIABLE, where)
    try:
        from huggingface_hub import get_token  # imported only when a Hub file is opened
        saved = get_token()
    except Exception:  # no saved login, or huggingface_hub missing: read anonymously
        return None
    return _header_token(saved, "the token `hf auth login` saved", where) if saved else None


def _header_token(value: str, source: str, where: str) -> str | None:
    """``value`` if a header can carry it (None if empty); the refusal names ``source``, never the value."""
    if value and not _HEADER_TOKEN.fullmatch(value):
        raise FormatError(where, f"{source} is not a valid token: it holds a space, a control or a non-ASCII "
                                 "character, which a request header cannot carry; set it to the token alone")
    return value or None


def _join(url: str, name: str) -> str:
    """``name`` in ``url``'s folder (an ``hf://`` address too, which urljoin does not know)."""
    if url.lower().startswith("hf://"):
        return url.rsplit("/", 1)[0] + "/" + name
    parts = urlsplit(url)
    folder = posixpath.dirname(parts.path).rstrip("/")  # a file at the server's root: "/name", never "//name"
    return parts._replace(path=f"{folder}/{quote(name)}", query="", fragment="").geturl()
