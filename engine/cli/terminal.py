"""Everything the command line writes goes through here: text for a terminal, never control.

Names, class names, metadata, file names and URLs come from files and servers; printed raw, a newline in
one forges a second line and an ESC clears the screen or writes the clipboard. So each line is escaped
whole (``humanize.printable``) as it is written, whatever it holds, and one message stays one line; JSON
keeps its own escaping, and program text (a command line, Rust) the printers' escapes of its language.
"""

from __future__ import annotations

import io
import sys
from typing import Any, Sequence

from ..humanize import is_hidden, printable


def prepare_streams() -> None:
    """A terminal that cannot encode a character (``中`` on latin-1) shows ``\\u4e2d`` instead of
    ending the command with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def out(line: str) -> None:
    """One line on stdout, its hidden characters escaped."""
    print(printable(line))


def err(line: str) -> None:
    """One line on stderr (a result, a note, an error), its hidden characters escaped."""
    print(printable(line), file=sys.stderr)


def document(value: Any, *, ascii_only: bool = True) -> None:
    """``value`` as indented JSON on stdout: ``json.loads`` gives back every name as it was. JSON escapes
    C0 controls itself; DEL, and without ``ascii_only`` the C1 controls and format characters, it would
    write raw, so they are written as ``\\u`` escapes too."""
    import json  # only for --json and config: a plain conversion's start-up skips it
    text = json.dumps(value, indent=2, ensure_ascii=ascii_only, default=str)
    print("\n".join(_json_escaped(line) for line in text.split("\n")))


def _json_escaped(line: str) -> str:
    if line.isprintable():
        return line
    return "".join(_json_escape(char) if is_hidden(char) else char for char in line)


def _json_escape(char: str) -> str:
    """``\u202e``; a character past U+FFFF as its UTF-16 pair, as JSON spells it."""
    units = char.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}" for i in range(0, len(units), 2))


def code(text: str) -> None:
    """Program text the printers made (a shell command line, a Rust chain), printed as it is: its
    backslashes are its own syntax, and the printers spell a hidden character in the language's own escapes.
    One that slipped through is still shown escaped, never obeyed."""
    print("".join(printable(char) if char != "\n" and is_hidden(char) else char for char in text))


def aligned(rows: Sequence[Sequence[str]], right_from: int | None = None) -> list[str]:
    """Rows of cells as lines of columns two spaces apart, each padded to its column's escaped width (the
    width it takes once written); the columns from ``right_from`` on are right-aligned, the last unpadded
    when it is left-aligned."""
    own_widths = [[len(printable(cell)) for cell in row] for row in rows]
    widths = [max(column) for column in zip(*own_widths)]
    right = len(widths) if right_from is None else right_from
    return ["  ".join(_padded(cell, width - own, i >= right, i == len(widths) - 1)
                      for i, (cell, own, width) in enumerate(zip(row, row_widths, widths)))
            for row, row_widths in zip(rows, own_widths)]


def _padded(cell: str, gap: int, right: bool, last: bool) -> str:
    return " " * gap + cell if right else cell if last else cell + " " * gap
