"""The ``store-studio`` entry point: the engine's command line (``engine.cli``), with this package's window.

The engine dispatches; what is the window's alone is here: its options and help, the desktop files, whether a
window can open at all. Qt is imported only when the window is wanted.
"""

from __future__ import annotations

from typing import NoReturn, Sequence

from engine import EXIT_USAGE, command_line, run_command_line, terminal


class Window:
    """The window as ``engine.cli.dispatch`` starts it."""

    def print_help(self) -> None:
        from gui.app import parser as window_parser

        window_parser().print_help()

    def open(self, args: list[str]) -> int:
        from gui.app import parser as window_parser

        options = window_parser().parse_args(args)
        if options.install_desktop or options.uninstall_desktop:
            return desktop_files(install=options.install_desktop)
        from engine import COMMANDS
        from gui.platform_check import startup_problem

        problem = startup_problem(list(COMMANDS), screenshot=options.screenshot is not None)
        if problem:
            terminal.err(problem)
            return EXIT_USAGE
        from gui.app import main as window_main  # Qt is imported only when the window is wanted

        return window_main(args)


def main(argv: Sequence[str] | None = None) -> int:
    return command_line(argv, Window())


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
    run_command_line(Window())


if __name__ == "__main__":
    run()
