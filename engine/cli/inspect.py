"""``store-studio inspect FILE [--json]``: what a model file holds."""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any, Iterable

from .. import humanize
from ..formats import open_store
from ..formats.burn_compat import burn_compatibility
from ..quantized import scheme_description
from ..store import Store, TensorEntry
from . import terminal

if TYPE_CHECKING:
    from ..formats.pytorch.branches import CheckpointBranches

NAME = "inspect"
EXAMPLES = ("store-studio inspect model.safetensors",
            "store-studio inspect hf://openai-community/gpt2/model.safetensors --json")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="list a file's tensors, totals and metadata")
    p.add_argument("file", help="a model file, or an http(s):// or hf://ORG/REPO[@REV]/PATH address")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--top-level-key", help="PyTorch: look only inside this branch of the checkpoint")
    p.set_defaults(run=run)


def summary(store: Store) -> dict[str, Any]:
    """The JSON document ``inspect --json`` prints."""
    from ..tree import is_buffer as buffer
    users = getattr(store, "users", {})  # ONNX: the nodes that read each initializer
    return {
        "file": str(store.path),
        "format": store.format,
        "version": store.version,
        **({"note": store.note} if store.note else {}),
        "metadata": store.metadata,
        **burn_summary(store),
        "tensors": [{"name": e.name, "dtype": str(e.dtype), "shape": list(e.shape), "values": e.numel,
                     "bytes": e.nbytes, **({"buffer": True} if buffer(e) else {}),
                     **({"param_id": e.param_id} if e.param_id is not None else {}),
                     **({"quantization": scheme_description(e.dtype)} if e.dtype.kind == "quantized" else {}),
                     **({"used_by": [{"node": node, "op": op, "input": index} for node, op, index in users[e.name]]}
                        if e.name in users else {})}
                    for e in store.entries],
        "totals": {"tensors": len(store.entries), **value_totals(store), "bytes": store.total_bytes},
        **({"scalars": store.scalars} if store.scalars else {}),
        # GGUF: the key-values with their types (an array as its type, length and first items), which metadata shows as text
        **({"gguf_keys": keys} if (keys := getattr(store, "keys", None)) else {}),
        **({"values": store.values} if store.values else {}),
        # PyTorch: the classes torch.load(weights_only=True) would refuse, and names made from keys burn-store refuses
        **({"refused_by_torch_weights_only": list(foreign)}
           if (foreign := getattr(store, "foreign_classes", ())) else {}),
        **({"guessed_keys": list(keys)} if (keys := getattr(store, "guessed_keys", ())) else {}),
        **branches_summary(branches_of(store)),
    }


SHOWN_CHARS = 1000  # of a metadata value in the table (a GGUF chat template, a hostile 16 MiB text): --json has it whole


def shown_value(value: str) -> str:
    """A metadata value as the table prints it: whole up to SHOWN_CHARS, else its start and its length."""
    if len(value) <= SHOWN_CHARS:
        return value
    return f"{value[:SHOWN_CHARS]}… ({len(value):,} characters; --json has them all)"


def value_totals(store: Store) -> dict[str, int]:
    """Trained parameters and buffer values (BatchNorm's running statistics, any non-float tensor) told apart,
    as the window counts them (``engine.tree.is_buffer``)."""
    from ..tree import is_buffer  # here: a conversion imports this module and never needs the tree
    buffers = sum(e.numel for e in store.entries if is_buffer(e))
    return {"parameters": store.total_params - buffers, "buffer_values": buffers}


def branches_of(store: Store, entries: Iterable[TensorEntry] | None = None) -> CheckpointBranches | None:
    """A training checkpoint's top-level branches, of ``entries`` (all by default): None for one branch, a plain
    state_dict or another format, which never loads the PyTorch reader to find that out."""
    if store.format != "pytorch":
        return None
    from ..formats.pytorch.branches import checkpoint_branches
    return checkpoint_branches(store, entries)


def branches_summary(found: CheckpointBranches | None) -> dict[str, Any]:
    """``inspect --json``'s ``branches``: each top-level key holding tensors, and the one the weights are under."""
    if found is None:
        return {}
    return {"branches": [{"key": b.key, "kind": b.kind, "tensors": b.tensors, "bytes": b.nbytes,
                          **({"holds": list(b.leaves)} if b.leaves else {})} for b in found.branches],
            **({"weights_key": found.weights.key} if found.weights else {})}


def top_level_key_flag(key: str) -> str:
    """``--top-level-key state_dict`` as a shell takes it back, whatever the file named the key."""
    return f"--top-level-key {shlex.quote(key)}"


def burn_summary(store: Store) -> dict[str, Any]:
    """Which Burn releases load the file, and why the others cannot (Burnpack only)."""
    burn = burn_compatibility(store)
    if burn is None:
        return {}
    return {"burn": {"loads_in": [v.value for v in burn.loads_in],
                     "cannot": {v.value: reason for v, reason in burn.reasons}}}


def run(args: argparse.Namespace) -> int:
    options = {"top_level_key": args.top_level_key} if args.top_level_key else {}
    with open_store(args.file, **options) as store:
        if args.json:
            terminal.document(summary(store))
        else:
            print_table(store)
    return 0


def print_table(store: Store) -> None:
    rows = [(e.name, str(e.dtype), humanize.shape(e.shape), humanize.count(e.numel), humanize.size(e.nbytes))
            for e in store.entries]
    header, *lines = terminal.aligned([("name", "dtype", "shape", "values", "size"), *rows], right_from=3)
    terminal.out(f"{store.path.name} · {store.description}")
    if store.note:
        terminal.out(f"note: {store.note}")
    burn = burn_compatibility(store)
    if burn is not None:
        terminal.out(f"loads in: {burn.describe()}")
        for version, reason in burn.reasons:
            terminal.out(f"  not Burn {version.value}: {reason}")
    terminal.out(header)
    for line, entry in zip(lines, store.entries):
        terminal.out(line)
        if entry.dtype.kind == "quantized":
            terminal.out(f"    {scheme_description(entry.dtype)}")
    totals = value_totals(store)
    buffers = f" + {humanize.plural(totals['buffer_values'], 'buffer value')}" if totals["buffer_values"] else ""
    terminal.out(f"{humanize.plural(len(store.entries), 'tensor')} · "
                 f"{humanize.plural(totals['parameters'], 'parameter')}{buffers} · {humanize.size(store.total_bytes)}")
    for key, value in store.metadata.items():
        terminal.out(f"  {key} = {shown_value(value)}")
    for key, value in store.scalars.items():
        terminal.out(f"  scalar {key} = {value}")
    for name in getattr(store, "foreign_classes", ()):
        terminal.out(f"  class torch.load(weights_only=True) refuses: {name}")
    print_branches(branches_of(store))


def print_branches(found: CheckpointBranches | None) -> None:
    """One line per top-level branch holding tensors (what it looks like, how many, their size), then the
    ``--top-level-key`` that reads the model weights alone."""
    if found is None:
        return
    terminal.out(f"the tensors sit under {len(found.branches)} top-level keys:")
    rows = [(f"  {b.key}", b.describe(), humanize.plural(b.tensors, "tensor"), humanize.size(b.nbytes))
            for b in found.branches]
    for line in terminal.aligned(rows, right_from=2):
        terminal.out(line)
    weights = found.weights
    terminal.out(f"use {top_level_key_flag(weights.key)} for the model weights alone" if weights else
                 "use --top-level-key KEY to read one branch alone")
