"""Values nested to a chosen depth, and integers that all hash alike, for the unpickler's nesting and hash-flood
limits."""

from __future__ import annotations

SAME_HASH = 2**61 - 1  # Python hashes an int modulo this prime: every multiple hashes to 0


def nested(depth: int, leaf: object) -> object:
    for _ in range(depth):
        leaf = [leaf]
    return leaf
