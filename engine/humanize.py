"""Numbers and names as people read them; shared by the CLI and the GUI."""

from __future__ import annotations

import unicodedata
from itertools import zip_longest

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
    """``[64, 3]``; a dimension set at run time (a template read from source: -1) shows as ``?``."""
    return "[" + ", ".join("?" if d < 0 else str(d) for d in dims) + "]"


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


# What ``printable`` escapes: C0 and C1 controls and DEL (Cc), format characters (Cf: bidi overrides and
# isolates that reorder text, zero-width characters that hide it), line and paragraph separators (Zl, Zp:
# some terminals break lines on them) and lone surrogates (Cs: bytes of a file name that are no UTF-8).
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# ls's (and C's) names for the controls that have one; every other hidden character is spelled in octal.
NAMED_ESCAPES = {"\a": r"\a", "\b": r"\b", "\t": r"\t", "\n": r"\n", "\v": r"\v", "\f": r"\f", "\r": r"\r"}
# What a backslash can begin in C, Python, bash's $'...' and Python's backslashreplace (``\u4e2d`` on a
# latin-1 terminal): a backslash before one of these (or a hidden character, or at the end) is doubled so
# that it cannot be read as an escape.
ESCAPE_STARTS = frozenset("\\'\"?abceEfnrtvxuUN01234567")


def is_hidden(char: str) -> bool:
    """Whether a terminal would obey ``char`` (or hide it) instead of showing it."""
    return not char.isprintable() and unicodedata.category(char) in HIDDEN_CATEGORIES


def printable(text: str) -> str:
    r"""``text`` as a terminal may show it: every hidden character escaped the way ``ls -b`` spells it.

    ``\n``, ``\t`` and the other C escapes, else the octal of the character's UTF-8 bytes (ESC ``\033``,
    DEL ``\177``, U+009B ``\302\233``; a byte a file name could not decode, its own octal, ``\200``). A name
    from a file or a server can then neither move the cursor, clear the screen, write the clipboard nor forge
    a second line. Unlike ``ls``, format characters (bidi overrides, zero-width spaces) are escaped too, and a
    backslash is doubled only where it could be read as the start of an escape (``\\n``, ``\\033``, ``\\u``,
    a final one): an escaped name still cannot be taken for another (C's and Python's rules read it back),
    and a regex such as ``^fc\.(\d+)`` reads as typed.
    """
    if text.isprintable() and "\\" not in text:
        return text
    spelled = []
    for char, following in zip_longest(text, text[1:], fillvalue=""):
        if char == "\\":
            spelled.append("\\\\" if _starts_escape(following) else "\\")
        else:
            spelled.append(_escaped(char) if is_hidden(char) else char)
    return "".join(spelled)


def _starts_escape(following: str) -> bool:
    """Whether a backslash before ``following`` ("": the end) could be read as the start of an escape."""
    return not following or following in ESCAPE_STARTS or is_hidden(following)


def _escaped(char: str) -> str:
    return NAMED_ESCAPES.get(char) or "".join(f"\\{byte:03o}" for byte in _utf8(char))


def _utf8(char: str) -> bytes:
    if "\udc80" <= char <= "\udcff":  # a byte os.fsdecode could not decode: the byte itself, as ls shows it
        return bytes([ord(char) - 0xDC00])
    return char.encode("utf-8", "surrogatepass")
