"""PyTorch checkpoints (``.pt``, ``.pth``, ``.bin``): read only, and never executed.

A checkpoint is a pickle. ``unpickler`` interprets it without importing or calling anything,
``allowlist`` says which globals it may name, and one module per container layout (zip,
legacy, tar) says where the storages' bytes are. ``checkpoint`` turns the result into tensor
names and plain values; ``store`` maps each tensor from the file on demand.
"""

from __future__ import annotations

import os
from typing import Any

from ...sources.byte_source import ByteSource, open_source
from .. import ZIP_SIGNATURE  # defined there, where a zip's first bytes pick this reader before the others
from . import legacy_layout, zip_layout
from .branches import top_level_keys
from .checkpoint import flatten, node_budget
from .store import NAME, PyTorchStore
from .unpickler import MAX_PROTOCOL

EXTENSIONS = (".pt", ".pth", ".bin")
TAR_SIGNATURE_AT = 257  # "ustar" in a tar's first header

__all__ = ["NAME", "EXTENSIONS", "PyTorchStore", "sniff", "open"]
NOTE_CLASSES = 6  # the note names this many classes, then says how many more


def sniff(head: bytes) -> bool:
    """A zip (the current layout), a tar (the oldest) or a binary pickle (legacy or plain)."""
    if head[:4] == ZIP_SIGNATURE or head[TAR_SIGNATURE_AT:TAR_SIGNATURE_AT + 5] == b"ustar":
        return True
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= MAX_PROTOCOL


def open(where: "str | os.PathLike | ByteSource", *, top_level_key: str | None = None,
         **options: Any) -> PyTorchStore:
    """Open a checkpoint; ``top_level_key`` keeps only that branch (and drops its prefix)."""
    mapped = open_source(where)
    path = mapped.path
    refused_by_torch: set[str] = set()
    try:
        head = mapped.pread(0, min(mapped.size, TAR_SIGNATURE_AT + 5), "the first bytes")
        if head[:4] == ZIP_SIGNATURE:
            version = "zip"
            root, metadata, scripted = zip_layout.load(mapped, refused_by_torch)
            if scripted:
                version = "TorchScript"
        elif head[TAR_SIGNATURE_AT:] == b"ustar":
            version = "tar"
            from . import tar_layout  # here: tarfile is for the oldest layout alone
            root, metadata = tar_layout.load(mapped, refused_by_torch)
        else:
            root, version, metadata = legacy_layout.load(mapped, refused_by_torch)
        checkpoint = flatten(path, root, top_level_key, max_nodes=node_budget(mapped.size))
        store = PyTorchStore(path, mapped, checkpoint.tensors, version=version, metadata=metadata,
                             values=checkpoint.values)
        store.foreign_classes = tuple(sorted(refused_by_torch))
        store.guessed_keys = tuple(checkpoint.guessed_keys)
        store.top_level_keys = () if top_level_key else top_level_keys(root)
        store.note = "; ".join(filter(None, (_note(version, store.foreign_classes),
                                             _keys_note(store.guessed_keys)))) or None
        return store
    except BaseException:
        mapped.close()
        raise


def _note(version: str, foreign: tuple[str, ...]) -> str | None:
    """What a user must know before shipping the file: torch's safe loader would refuse it."""
    if version == "TorchScript":
        return ("a TorchScript archive: read as data, its code/ never run; torch.load(weights_only=True) refuses it "
                "(torch.jit.load runs its code)")
    if not foreign:
        return None
    named = ", ".join(foreign[:NOTE_CLASSES]) + (f" and {len(foreign) - NOTE_CLASSES} more"
                                                   if len(foreign) > NOTE_CLASSES else "")
    return (f"torch.load(weights_only=True) would refuse this file: it names {len(foreign)} non-weight "
            f"class{'es' if len(foreign) != 1 else ''} ({named}), shown here as placeholders; nothing was run")


def _keys_note(guessed: tuple[str, ...]) -> str | None:
    """Tensor names this reader made up: burn-store refuses keys that are not text or whole numbers."""
    if not guessed:
        return None
    many = len(guessed) != 1
    return (f"{len(guessed)} key{'s' if many else ''} naming tensors {'are' if many else 'is'} "
            f"neither text nor a whole number (first: {guessed[0]!r}), named here as Python prints them; "
            "burn-store refuses such keys")
