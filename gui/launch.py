"""The ``store-studio`` entry point: CLI subcommands go to the engine, anything else opens the window.

Before Qt is imported, everything that needs no window is settled here: ``--version``, the desktop
files, a mistyped subcommand (a usage error, never a window) and whether a window can open at all.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from engine.cli import COMMANDS, exit_with, suggest_command, terminal
from engine.cli import main as cli_main
from engine.cli import parser as cli_parser
from engine.cli.exits import OK, USAGE


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    terminal.prepare_streams()
    if (args and args[0] in COMMANDS) or args == ["--version"]:
        return cli_main(args)  # before the window's modules are imported: a command needs none of them
    if args and args[0] in ("-h", "--help"):  # both halves: the commands, then the window's options
        cli_parser().print_help()
        print()
        from gui.app import parser as window_parser

        window_parser().print_help()
        return 0
    typo = mistyped_command(args)
    if typo:
        terminal.err(typo)
        return USAGE
    from gui.app import parser as window_parser

    options = window_parser().parse_args(args)
    if options.install_desktop or options.uninstall_desktop:
        return desktop_files(install=options.install_desktop)
    from gui.platform_check import startup_problem

    problem = startup_problem(list(COMMANDS), screenshot=options.screenshot is not None)
    if problem:
        terminal.err(problem)
        return USAGE
    from gui.app import main as window_main  # Qt is imported only when the window is wanted

    return window_main(args)


def mistyped_command(args: list[str]) -> str | None:
    """``store-studio inpsect x.pt``: the first word is no file but close to a command, so it is a typo."""
    if not args or not re.fullmatch(r"[A-Za-z][A-Za-z-]*", args[0]) or Path(args[0]).exists():
        return None  # an option, a path (x.pt, ./model) or a real file: the window's to open
    close = suggest_command(args[0])
    return (f"store-studio: {args[0]!r} is neither a command nor a file; did you mean {close}? "
            f"(store-studio --help lists the commands)") if close else None


def desktop_files(install: bool) -> int:
    from gui import desktop

    try:
        paths = desktop.install() if install else desktop.uninstall()
    except OSError as exc:
        terminal.err(f"store-studio: cannot {'write' if install else 'remove'} {exc.filename}: {exc.strerror}")
        return 1
    verb = "wrote" if install else "removed"
    for path in paths:
        terminal.out(f"{verb} {path}")
    if not paths:
        terminal.out("nothing to remove")
    return 0


def run() -> NoReturn:
    """The ``store-studio`` console script (and ``python -m gui.launch``)."""
    try:
        code = main()
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


if __name__ == "__main__":
    run()
