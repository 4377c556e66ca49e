"""``store-studio inspect FILE [--json]``: what a model file holds."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .. import humanize
from ..burn_compat import burn_compatibility
from ..formats import open_store
from ..quantized import scheme_description
from ..store import Store

NAME = "inspect"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="list a file's tensors, totals and metadata")
    p.add_argument("file", help="a model file, or an http(s):// or hf://ORG/REPO[@REV]/PATH address")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--top-level-key", help="PyTorch: look only inside this branch of the checkpoint")
    p.set_defaults(run=run)


def summary(store: Store) -> dict[str, Any]:
    """The JSON document ``inspect --json`` prints."""
    return {
        "file": str(store.path),
        "format": store.format,
        "version": store.version,
        **({"note": store.note} if store.note else {}),
        "metadata": store.metadata,
        **burn_summary(store),
        "tensors": [{"name": e.name, "dtype": str(e.dtype), "shape": list(e.shape), "parameters": e.numel,
                     "bytes": e.nbytes, **({"param_id": e.param_id} if e.param_id is not None else {}),
                     **({"quantization": scheme_description(e.dtype)} if e.dtype.kind == "quantized" else {})}
                    for e in store.entries],
        "totals": {"tensors": len(store.entries), "parameters": store.total_params, "bytes": store.total_bytes},
        **({"scalars": store.scalars} if store.scalars else {}),
        **({"values": store.values} if store.values else {}),
        # PyTorch: the classes torch.load(weights_only=True) would refuse, and names made from keys burn-store refuses
        **({"refused_by_torch_weights_only": list(foreign)}
           if (foreign := getattr(store, "foreign_classes", ())) else {}),
        **({"guessed_keys": list(keys)} if (keys := getattr(store, "guessed_keys", ())) else {}),
    }


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
            print(json.dumps(summary(store), indent=2, default=str))
        else:
            print_table(store)
    return 0


def print_table(store: Store) -> None:
    rows = [(e.name, str(e.dtype), humanize.shape(e.shape), humanize.count(e.numel), humanize.size(e.nbytes))
            for e in store.entries]
    header = ("name", "dtype", "shape", "parameters", "size")
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(5)]
    print(f"{store.path.name} · {store.description}")
    if store.note:
        print(f"note: {store.note}")
    burn = burn_compatibility(store)
    if burn is not None:
        print(f"loads in: {burn.describe()}")
        for version, reason in burn.reasons:
            print(f"  not Burn {version.value}: {reason}")
    line = "  ".join(h.ljust(w) if i < 3 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))
    print(line)
    for row, entry in zip(rows, store.entries):
        print("  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if entry.dtype.kind == "quantized":
            print(f"    {scheme_description(entry.dtype)}")
    print(f"{humanize.plural(len(store.entries), 'tensor')} · {humanize.plural(store.total_params, 'parameter')} · "
          f"{humanize.size(store.total_bytes)}")
    for key, value in store.metadata.items():
        print(f"  {key} = {value}")
    for key, value in store.scalars.items():
        print(f"  scalar {key} = {value}")
    for name in getattr(store, "foreign_classes", ()):
        print(f"  class torch.load(weights_only=True) refuses: {name}")
