"""``store-studio config FILE [--key K]``: a checkpoint's non-tensor values (its training config) as JSON.

Like burn-import's ``config_from_file``: the values of a PyTorch checkpoint without its
tensors, or only the branch at a dotted key.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import FormatError
from ..formats import open_store
from ..tree import parse_index
from . import terminal

NAME = "config"
EXAMPLES = ("store-studio config checkpoint.ckpt", "store-studio config checkpoint.ckpt --key hparams")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="print a checkpoint's non-tensor values (its config) as JSON")
    p.add_argument("file", help="a model file, or an http(s):// or hf://ORG/REPO[@REV]/PATH address")
    p.add_argument("--key", help="only the value at this dotted key (e.g. my_config or my_config.n_head)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with open_store(args.file) as store:
        values = store.values
        if args.key:
            values = branch(values, args.key)
            if values is _MISSING:
                keys = ", ".join(repr(k) for k in store.values) if isinstance(store.values, dict) else "none"
                raise FormatError(store.path, f"has no value at {args.key!r}; its top-level keys are: {keys or 'none'}")
    terminal.document(values, ascii_only=False)
    if not args.key and not values:  # stdout stays the (empty) document a script reads; the words go to stderr
        keys = f" and {len(store.metadata):,} metadata keys" if store.metadata else ""
        terminal.err(f"store-studio config: {store.path.name} holds no values besides its tensors{keys} "
                     f"({store.format}); `store-studio inspect` lists {'both' if keys else 'the tensors'}")
    return 0


_MISSING = object()


def branch(values: Any, key: str) -> Any:
    """The value at ``key``: an exact key first (keys may hold dots), else a dotted path."""
    if isinstance(values, dict) and key in values:
        return values[key]
    head, dot, rest = key.partition(".")
    while dot:
        if isinstance(values, dict) and head in values:
            found = branch(values[head], rest)
            if found is not _MISSING:
                return found
        position = parse_index(head) if isinstance(values, list) else None
        if position is not None and position < len(values):
            return branch(values[position], rest)
        more, dot, rest = rest.partition(".")
        head = f"{head}.{more}"
    position = parse_index(key) if isinstance(values, list) else None
    if position is not None and position < len(values):
        return values[position]
    return _MISSING
