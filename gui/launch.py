"""The ``store-studio`` entry point: CLI subcommands go to the engine, anything else opens the window."""

from __future__ import annotations

import sys
from typing import Sequence

from engine.cli import COMMANDS
from engine.cli import main as cli_main
from engine.cli import parser as cli_parser
from gui.app import parser as window_parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in COMMANDS:
        return cli_main(args)
    if args and args[0] in ("-h", "--help"):  # both halves: the commands, then the window's options
        cli_parser().print_help()
        print()
        window_parser().print_help()
        return 0
    from gui.app import main as window_main  # Qt is imported only when the window is wanted

    return window_main(args)


if __name__ == "__main__":
    sys.exit(main())
