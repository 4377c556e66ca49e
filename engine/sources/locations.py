"""Where a model file is: a local path, or a remote location (an ``http(s)://`` or ``hf://`` URL).

A ``RemoteLocation`` stands where a ``Path`` does in a store (``store.path``, ``store.files``,
error messages): it has a ``name`` and a ``suffix``, and ``str()`` gives back the URL exactly as
the user wrote it (a recipe saves that, never a token or a redirect's signed URL). It is
path-like so that code showing ``Path(store.path).name`` keeps working, but it names no local
file: ``is_url`` tells the two apart, and nothing here imports a network library.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

URL_SCHEMES = ("http", "https", "hf")
_URL = re.compile(r"(?i)(https?|hf)://")


def is_url(value: object) -> bool:
    """True for a ``RemoteLocation``, and for text starting ``http://``, ``https://`` or ``hf://`` (never a ``Path``)."""
    return isinstance(value, RemoteLocation) or (isinstance(value, str) and _URL.match(value) is not None)


class RemoteLocation:
    """A remote file as the user named it; ``size`` is filled in once the server has said it.

    A plain class (equal and hashed by its URL alone): a dataclass would import ``dataclasses`` and build
    its methods for every command, ``--version`` included, since every error message can name one."""

    __slots__ = ("url", "size")

    def __init__(self, url: str, size: int | None = None):
        self.url = url
        self.size = size

    @property
    def name(self) -> str:
        return posixpath.basename(unquote(urlsplit(self.url).path)) or urlsplit(self.url).netloc

    @property
    def suffix(self) -> str:
        return Path(self.name).suffix

    @property
    def parent(self) -> "RemoteLocation":
        return RemoteLocation(self.url.rsplit("/", 1)[0] + "/")

    def __fspath__(self) -> str:
        return self.url

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemoteLocation({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemoteLocation) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)


Location = Path | RemoteLocation


def location(value: str | os.PathLike | RemoteLocation) -> Location:
    """A ``RemoteLocation`` for a URL (or one already made), else a ``Path``."""
    if isinstance(value, (RemoteLocation, Path)):  # made already (both immutable): parsing a path again costs
        return value                                # a tenth of opening a small file
    if is_url(value):
        return RemoteLocation(value)
    return Path(value)


