"""The engine's own error types: the GUI and the CLI show their messages as they are."""

from __future__ import annotations

import os


class StoreStudioError(Exception):
    """Base of every error the engine raises on purpose."""


class FormatError(StoreStudioError, ValueError):
    """A file is malformed, hostile or of a kind we do not support.

    The message always starts with the file's name so a user knows which file is bad.
    """

    def __init__(self, path: str | os.PathLike | None, problem: str):
        self.path = os.fspath(path) if path is not None else None
        self.problem = problem
        where = os.path.basename(self.path) if self.path else "<input>"
        super().__init__(f"{where}: {problem}")


class ExportError(StoreStudioError):
    """An export could not be done; the destination was left as it was."""


class ExportCancelled(ExportError):
    """The user cancelled an export; the destination was left as it was."""


class RecipeError(StoreStudioError, ValueError):
    """A recipe (filter, remap rule, adapter option) is invalid; the message names the rule."""
