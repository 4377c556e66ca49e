"""Numbers as people read them; shared by the CLI and the GUI."""

from __future__ import annotations

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size(nbytes: int) -> str:
    """``2.25 KiB``, ``1.3 GiB``; exact bytes below 1 KiB."""
    value = float(nbytes)
    for unit in UNITS:
        if value < 1024 or unit == UNITS[-1]:
            return f"{nbytes:,} B" if unit == "B" else f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
        value /= 1024
    raise AssertionError


def shape(dims: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def count(n: int) -> str:
    return f"{n:,}"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 tensor``, ``2 tensors``, ``1,000 tensors``: a count with its noun, never ``1 tensors``."""
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"


def with_article(word: str) -> str:
    """``an int``, ``a float``: the article English puts before a type's name (by its first letter)."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def quoted(text: str) -> str:
    """``'^fc\\.'`` as typed: repr() would double every backslash of a regex."""
    return f"'{text}'"


def duration(seconds: float) -> str:
    """``12 s``, ``3 min 5 s``, ``1 h 2 min``: a time left as people say it."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
