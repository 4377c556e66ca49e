"""Hugging Face Hub addresses: ``hf://[datasets/]ORG/REPO[@REV]/PATH`` and page URLs (``.../blob/REV/PATH``).

Both become the Hub's ``resolve`` URL (``{endpoint}/ORG/REPO/resolve/REV/PATH``), which serves the
file itself (redirecting large ones to a CDN), so opening one file needs no listing API.
``HF_ENDPOINT`` names the Hub (a mirror, or a private deployment). The token (``HF_TOKEN``, else
the one ``hf auth login`` saved, read with huggingface_hub's ``get_token``) belongs to that
endpoint's host alone: ``Target.token_origin`` names it, and the HTTP layer sends the token on a
request only when the request's own scheme, host and port are that origin (never to a redirect's
target on another host). A target's ``repr`` never shows the token.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from ..errors import FormatError

ENDPOINT_VARIABLE = "HF_ENDPOINT"
TOKEN_VARIABLE = "HF_TOKEN"
DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_REVISION = "main"
_HF = re.compile(r"(?i)hf://(?P<kind>datasets/|spaces/)?(?P<org>[^/@]+)/(?P<repo>[^/@]+)"
                 r"(?:@(?P<rev>[^/]+))?/(?P<path>.+)")
KINDS = ("datasets", "spaces")  # a repository of these kinds has its kind before ORG/REPO in every URL


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
    """``(scheme, host, port)``: what must match, all three, before a token is sent."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def target(text: str) -> Target:
    """Where to read ``text`` (an ``http(s)://`` or ``hf://`` URL) and whether the Hub's token goes along."""
    hub = endpoint()
    match = _HF.fullmatch(text)
    if text.lower().startswith("hf://"):
        if match is None:
            raise FormatError(text, "is not an hf://ORG/REPO[@REVISION]/PATH address")
        url = resolve_url(hub, (match["kind"] or "") + match["org"], match["repo"], match["rev"] or DEFAULT_REVISION,
                          match["path"])
    else:
        url = _page_to_resolve(text) if origin(text) == origin(hub) else text
    if origin(url) != origin(hub):
        return Target(text, url)
    return Target(text, url, token(), origin(hub))


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


def token() -> str | None:
    """The user's Hub token, or None; never logged. ``HF_TOKEN`` first (no import), then the saved login."""
    value = os.environ.get(TOKEN_VARIABLE)
    if value:
        return value.strip()
    try:
        from huggingface_hub import get_token  # imported only when a Hub file is opened
        return get_token()
    except Exception:  # no saved login, or huggingface_hub missing: read anonymously
        return None


def _join(url: str, name: str) -> str:
    """``name`` in ``url``'s folder (an ``hf://`` address too, which urljoin does not know)."""
    if url.lower().startswith("hf://"):
        return url.rsplit("/", 1)[0] + "/" + name
    parts = urlsplit(url)
    folder = posixpath.dirname(parts.path)
    return parts._replace(path=f"{folder}/{quote(name)}", query="", fragment="").geturl()
