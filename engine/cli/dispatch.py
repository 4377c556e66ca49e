"""What ``store-studio ARGS`` runs: a subcommand, the help, a usage error for a mistyped command, or the window.

The engine never imports the window: the application hands it in (``Window``), and everything that needs no
window is settled here first (``--version``, help, a mistyped subcommand), before Qt is imported.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import NoReturn, Protocol, Sequence

from . import COMMANDS, exit_with, main, parser, suggest_command, terminal
from .exits import OK, USAGE


class Window(Protocol):
    """The application's window, as the command line starts it."""

    def print_help(self) -> None:
        """Print the window's own options (after the commands' help)."""

    def open(self, args: list[str]) -> int:
        """Open the window with ``args`` (files and window options); the exit code when it closes."""


def dispatch(argv: Sequence[str] | None, window: Window) -> int:
    """Run one command line: a subcommand in the engine, anything else in ``window``."""
    args = list(sys.argv[1:] if argv is None else argv)
    terminal.prepare_streams()
    if (args and args[0] in COMMANDS) or args == ["--version"]:
        return main(args)  # before the window's modules are imported: a command needs none of them
    if args and args[0] in ("-h", "--help"):  # both halves: the commands, then the window's options
        parser().print_help()
        print()
        window.print_help()
        return OK
    typo = mistyped_command(args)
    if typo:
        terminal.err(typo)
        return USAGE
    return window.open(args)


def mistyped_command(args: list[str]) -> str | None:
    """``store-studio inpsect x.pt``: the first word is no file but close to a command, so it is a typo."""
    if not args or not re.fullmatch(r"[A-Za-z][A-Za-z-]*", args[0]) or Path(args[0]).exists():
        return None  # an option, a path (x.pt, ./model) or a real file: the window's to open
    close = suggest_command(args[0])
    return (f"store-studio: {args[0]!r} is neither a command nor a file; did you mean {close}? "
            f"(store-studio --help lists the commands)") if close else None


def run(window: Window) -> NoReturn:
    """The ``store-studio`` console script's body: dispatch ``sys.argv``, then exit with its code."""
    try:
        code = dispatch(None, window)
        sys.stdout.flush()
    except BrokenPipeError:
        code = reader_gone()
    exit_with(code)


def reader_gone() -> int:
    """``store-studio --help | head -1``: the reader closed the pipe early, which is no error (the commands
    say the same, ``engine.cli.main``). stdout goes to /dev/null so the interpreter's last flush of what is
    still buffered cannot raise again, as a traceback, at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return OK
