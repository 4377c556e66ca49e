"""Where the window remembers things (geometry, splitters, recent files).

Always an INI file under the organization "Store Studio", so tests can point ``QSettings.setPath`` at a
temporary folder and never read or write a user's real settings.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

ORGANIZATION = "Store Studio"
APPLICATION = "Store Studio"
MAX_RECENT = 10


def app_settings() -> QSettings:
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION)


def recent_files() -> list[str]:
    value = app_settings().value("recentFiles", [])
    if isinstance(value, str):  # QSettings returns a lone string for a one-item list
        return [value]
    return [str(v) for v in value or []]


def remember_recent(path: str) -> list[str]:
    """Put ``path`` first in the recent list and return the new list."""
    paths = [path] + [p for p in recent_files() if p != path]
    paths = paths[:MAX_RECENT]
    app_settings().setValue("recentFiles", paths)
    return paths


def recent_urls() -> list[str]:
    """Addresses given to File › Open URL…, newest first (never a token: those come from the environment)."""
    value = app_settings().value("recentUrls", [])
    return [value] if isinstance(value, str) else [str(v) for v in value or []]


def remember_url(url: str) -> None:
    app_settings().setValue("recentUrls", ([url] + [u for u in recent_urls() if u != url])[:MAX_RECENT])


def clear_recent() -> None:
    """Forget recent files and recent addresses alike (the File menu's one Clear)."""
    app_settings().setValue("recentFiles", [])
    app_settings().setValue("recentUrls", [])


def export_folder() -> Path | None:
    """The folder the last export went to, if it still exists."""
    value = app_settings().value("exportFolder", "")
    folder = Path(str(value)) if value else None
    return folder if folder is not None and folder.is_dir() else None


def remember_export_folder(folder: Path) -> None:
    app_settings().setValue("exportFolder", str(folder))
