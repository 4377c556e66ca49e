"""Model files on HTTP(S) servers and the Hugging Face Hub, read by byte ranges (see ``http`` and ``hub``).

Imported only when a URL is opened: the network stack (urllib3) never slows a local start-up.
"""

from __future__ import annotations

from . import hub
from .http import (
    MAX_DOWNLOAD_VARIABLE,
    RETRIES_VARIABLE,
    TIMEOUT_VARIABLE,
    DownloadedFile,
    RemoteFile,
    RemoteWarning,
    check_full_download,
    traffic,
)
from .http import open_remote as _open_target


def open_remote(url: str) -> "RemoteFile | DownloadedFile":
    """The byte source for an ``http(s)://`` or ``hf://`` URL (a Hub page URL reads its file)."""
    return _open_target(hub.target(url))


__all__ = ["MAX_DOWNLOAD_VARIABLE", "RETRIES_VARIABLE", "TIMEOUT_VARIABLE", "DownloadedFile", "RemoteFile",
           "RemoteWarning", "check_full_download", "open_remote", "traffic"]
