"""Which globals ``torch.load(weights_only=True)`` accepts, against torch's own loader: if the allowlist
drifted, the note would wrongly warn (or stay silent) that torch.load(weights_only=True) refuses a file.

The allowlist's table (``allowlist._table``, ``_torch_allows``) is built on first use; this test compares every
entry of it with what torch's safe loader itself accepts.

Promises (README, "PyTorch files") -> tests:
- "the note says when torch.load(weights_only=True) would refuse the file" (names the classes torch's safe loader
  refuses, and only those) -> test_the_note_names_exactly_what_torchs_safe_loader_refuses
"""

from __future__ import annotations

import io
from pathlib import Path

import torch._weights_only_unpickler as weights_only

from engine.formats import open_store
from engine.formats.pytorch.allowlist import allowed

TABLE_SIZE = 118  # entries of the allowlist in this version (every one judged below)


def naming(module: str, name: str) -> bytes:
    """A pickle that is only a reference to ``module.name`` (protocol 2 GLOBAL, then STOP)."""
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"."


def torch_accepts(data: bytes) -> bool:
    try:
        weights_only.load(io.BytesIO(data))
    except Exception:  # noqa: BLE001  (torch's refusal is an UnpicklingError; any failure is a refusal)
        return False
    return True


def test_the_note_names_exactly_what_torchs_safe_loader_refuses(tmp_path: Path) -> None:
    assert len(allowed()) == TABLE_SIZE
    disagree = []
    for module, name in sorted(allowed()):
        path = tmp_path / "g.pt"
        path.write_bytes(naming(module, name))
        with open_store(path) as store:
            assert store.values == f"{module}.{name}" and store.names == []
            refused_here = store.foreign_classes == (f"{module}.{name}",)
            assert refused_here or store.foreign_classes == ()
            assert (store.note is not None) == refused_here
        if refused_here == torch_accepts(naming(module, name)):
            disagree.append(f"{module}.{name}")
    assert disagree == []


def test_a_refused_global_is_named_in_the_note(tmp_path: Path) -> None:
    path = tmp_path / "alias.pt"
    path.write_bytes(naming("torch", "float"))  # an alias: torch's table keys dtypes by their canonical name
    with open_store(path) as store:
        assert store.foreign_classes == ("torch.float",)
        assert store.note == ("torch.load(weights_only=True) would refuse this file: it names 1 non-weight class "
                              "(torch.float), shown here as placeholders; nothing was run")
    assert not torch_accepts(naming("torch", "float")) and torch_accepts(naming("torch", "float32"))
