"""The ``store-studio`` command line: one module per subcommand, each with ``register``.

Every failure ends here as one line on stderr and an exit code from ``exits`` (0 success, 1 a
problem with a file, 2 a usage error, 3 validation against a template); a user never sees a
traceback, not even for a bug (set STORE_STUDIO_TRACEBACK=1 to see it when reporting one).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import warnings
from types import ModuleType
from typing import Iterable, NoReturn, Sequence

from ..errors import StoreStudioError
from ..version import __version__
from . import exits, terminal
from .exits import UsageError

# Each subcommand is a module named after it, imported only when it is run or listed: a command pays for
# its own imports alone, and --version for none (numpy and the formats are most of a start-up).
COMMANDS = ("inspect", "convert", "diff", "recipe", "config", "migrate")
TRACEBACK_VARIABLE = "STORE_STUDIO_TRACEBACK"


def subcommand(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors (which quote the words typed, file names among them) are
    escaped like every other line the command line writes."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        terminal.err(f"{self.prog}: error: {message}")
        sys.exit(exits.USAGE)


def parser(commands: Iterable[str] = COMMANDS) -> argparse.ArgumentParser:
    """The command line with ``commands`` registered (all of them for help and usage errors)."""
    root = Parser(prog="store-studio", description="Inspect and convert Burnpack, SafeTensors and PyTorch model "
                  "files.", epilog=exits.SUMMARY)
    root.add_argument("--version", action="version", version=f"store-studio {__version__}")
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in commands:
        subcommand(name).register(sub)
    for name, command in sub.choices.items():  # every --help ends with examples and what its exit codes mean
        examples = "\n".join(f"  {line}" for line in getattr(subcommand(name), "EXAMPLES", ()))
        command.epilog = (f"examples:\n{examples}\n\n" if examples else "") + exits.SUMMARY
        command.formatter_class = argparse.RawDescriptionHelpFormatter  # the examples keep their lines
    return root


def suggest_command(word: str) -> str | None:
    """The subcommand ``word`` is most likely a typo of (``inpsect`` -> ``inspect``), if any is close."""
    import difflib  # only for a mistyped command: every other start-up skips it
    close = difflib.get_close_matches(word, sorted(COMMANDS), n=1, cutoff=0.6)
    return close[0] if close else None


def needed(args: Sequence[str]) -> tuple[str, ...]:
    """The subcommands a command line needs registered: the one it names, none for --version, else all."""
    if args and args[0] in COMMANDS:
        return (args[0],)
    return () if list(args) == ["--version"] else COMMANDS


def main(argv: Sequence[str] | None = None) -> int:
    terminal.prepare_streams()
    words = list(sys.argv[1:] if argv is None else argv)
    args = parser(needed(words)).parse_args(words)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = show_warning  # e.g. a server that ignores byte ranges: one line, no source
            return int(args.run(args) or 0)
    except UsageError as exc:
        return fail(f"store-studio {args.command}: {exc}", exits.USAGE)
    except StoreStudioError as exc:
        return fail(f"store-studio: {exc}", exits.FILE_PROBLEM)
    except BrokenPipeError:  # output piped into `head`: not an error
        sys.stderr.close()
        return exits.OK
    except OSError as exc:  # a file the engine did not wrap: name it in full, folder included
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(f"store-studio: {where}{exc.strerror or exc}", exits.FILE_PROBLEM)
    except KeyboardInterrupt:
        return fail("store-studio: interrupted", exits.INTERRUPTED)
    except Exception as exc:  # a bug: one line a user can paste into a report, the traceback on request
        if os.environ.get(TRACEBACK_VARIABLE):
            raise
        return fail(f"store-studio: unexpected error ({type(exc).__name__}: {exc}); please report it with the "
                    f"command you ran ({TRACEBACK_VARIABLE}=1 shows the details)", exits.FILE_PROBLEM)


def show_warning(message: Warning | str, *args: object, **kwargs: object) -> None:
    terminal.err(f"store-studio: warning: {message}")


def fail(message: str, code: int) -> int:
    """``message`` as one line on stderr (a name in it may hold newlines and escapes), and ``code``."""
    terminal.err(message)
    return code


def exit_with(code: int) -> NoReturn:
    """End the process with ``code`` as ``sys.exit`` does (atexit handlers, flushed output, threads joined), with
    every object alive now frozen out of the garbage collector, so the interpreter's teardown does not walk them:
    without it the benchmark row "start-up: store-studio inspect (tiny file)" takes about 7% longer
    (tests/benchmarks/run.py, bench_startup)."""
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    exit_with(main())
