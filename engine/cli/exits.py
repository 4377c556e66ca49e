"""What the command line's exit codes mean: each code one thing, so that scripts can rely on them."""

from __future__ import annotations

from ..errors import StoreStudioError

OK = 0
FILE_PROBLEM = 1  # a file cannot be read, written or does not hold what it should (one line on stderr)
USAGE = 2  # the command line itself is wrong: argparse's own code for the same thing
VALIDATION = 3  # the result does not match --template
DIFFERS = 1  # diff --exit-code: the files differ (as git diff --exit-code)
INTERRUPTED = 130  # Ctrl+C, as shells report SIGINT

SUMMARY = ("exit codes: 0 success, 1 a problem with a file, 2 a usage error, "
           "3 validation against --template failed (diff --exit-code: 1 when anything differs)")


class UsageError(StoreStudioError):
    """An argument is wrong (a regex that does not compile, ``--metadata`` without ``=``): exit 2, not 1."""
