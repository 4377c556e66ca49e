"""The engine's own error types: the GUI and the CLI show their messages as they are."""

from __future__ import annotations

import os

from .sources.locations import RemoteLocation


class StoreStudioError(Exception):
    """Base of every error the engine raises on purpose."""


class FormatError(StoreStudioError, ValueError):
    """A file is malformed, hostile or of a kind we do not support.

    The message always starts with the file's name so a user knows which file is bad.
    """

    def __init__(self, path: str | os.PathLike | None, problem: str):
        self.path = os.fspath(path) if path is not None else None
        self.problem = problem
        where = (getattr(path, "name", "") if isinstance(path, RemoteLocation) else os.path.basename(self.path or "")) \
            or "<input>"
        super().__init__(f"{where}: {problem}")


class ExportError(StoreStudioError):
    """An export could not be done; the destination was left as it was."""


class ExportCancelled(ExportError):
    """The user cancelled an export; the destination was left as it was."""


class RecipeError(StoreStudioError, ValueError):
    """A recipe (filter, remap rule, adapter option) is invalid; the message names the rule."""


MAX_SHOWN_DEPTH = 8  # a value nested deeper is described by its depth, never printed


def shown(value: object, width: int = 80) -> str:
    """A value as an error message may print it: short, and safe for any hostile value.

    ``repr`` of a deeply nested value recurses (and can fail), and an integer past Python's
    4300-digit limit cannot be printed at all, so those are described instead.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a {value.bit_length()}-bit number"
    depth = nesting(value, MAX_SHOWN_DEPTH)
    if depth > MAX_SHOWN_DEPTH:
        return f"a {type(value).__name__} nested more than {MAX_SHOWN_DEPTH} levels deep"
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # a wide integer somewhere inside
        return f"a {type(value).__name__} holding numbers too long to print"
    return text if len(text) <= width else text[:width - 3] + "..."


def nesting(value: object, limit: int) -> int:
    """How deeply lists, tuples, dicts and sets nest in ``value`` (counting stops past ``limit``)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (list, tuple, dict, set, frozenset)):
            continue
        deepest = max(deepest, depth)
        if depth > limit:
            return depth
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return deepest
