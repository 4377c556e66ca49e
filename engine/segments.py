"""A dotted path's segments read as burn-store reads them: which ones are indices, and their value.

burn-store's ``map_indices_contiguous`` takes a segment for an index when Rust's ``str::parse::<usize>()``
accepts it (crates/burn-store/src/keyremapper.rs:247 and :307 at v0.20.0, v0.21.0, v0.22.0-pre.2 and
main): an optional ``+``, then one or more ASCII digits, at most ``usize::MAX`` (2^64 - 1 on the 64-bit
targets Burn ships for). Python's ``str.isdigit``/``int`` disagree (``²`` is a digit to one and not the
other, ``٣`` and ``1_000`` are ints), so every reader of indices asks this module instead.
"""

from __future__ import annotations

USIZE_MAX = 2**64 - 1
_USIZE_DIGITS = len(str(USIZE_MAX))


def parse_index(segment: str) -> int | None:
    """The value Rust's ``segment.parse::<usize>()`` gives, or None where it fails (``"+5"`` is 5; ``"²"`` None)."""
    digits = segment[1:] if segment.startswith("+") else segment
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    significant = digits.lstrip("0")  # Rust accepts any number of leading zeros; int() would refuse 4,300+ digits
    if len(significant) > _USIZE_DIGITS:
        return None
    value = int(significant or "0")
    return value if value <= USIZE_MAX else None


def is_index(segment: str) -> bool:
    """Whether burn-store takes ``segment`` for an index (a Sequential's position)."""
    return parse_index(segment) is not None
