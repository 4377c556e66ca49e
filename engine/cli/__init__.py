"""The ``store-studio`` command line: one module per subcommand, each with ``register``.

Exit codes: 0 success, 1 a file or export problem (one line on stderr), 2 a usage error,
3 tensors missing against `convert --template` (unless `--allow-partial`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ..errors import StoreStudioError
from . import config, convert, diff, inspect, migrate, recipe

SUBCOMMANDS = (inspect, convert, diff, recipe, config, migrate)
COMMANDS = {module.NAME for module in SUBCOMMANDS}


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="store-studio", description="Inspect and convert Burnpack, SafeTensors "
                                   "and PyTorch model files.")
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(sub)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return int(args.run(args) or 0)
    except StoreStudioError as exc:
        print(f"store-studio: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into `head`: not an error
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("store-studio: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
