"""One module per file format behind one interface: ``sniff(head)`` and ``open(path, **options)``.

``open_store`` asks each format's ``sniff`` in turn and knows nothing else about formats.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

from ..collector import collector_paused
from ..errors import FormatError
from ..store import Store
from . import burn_record, burnpack, pytorch, safetensors

SNIFF_BYTES = 4096
OPTIONS = {"top_level_key", "template"}  # options some format understands; the others ignore them


READERS: tuple[ModuleType, ...] = (burnpack, burn_record, safetensors, pytorch)  # asked in this order
WRITERS: tuple[ModuleType, ...] = (burnpack, safetensors)


def open_store(path: str | os.PathLike, **options: Any) -> Store:
    """Open a model file by what its bytes say it is, not by its name."""
    unknown = set(options) - OPTIONS
    if unknown:
        raise TypeError(f"unknown open option(s): {', '.join(sorted(unknown))}")
    path = Path(path)
    try:
        with path.open("rb") as f:
            head = f.read(SNIFF_BYTES)
    except IsADirectoryError:
        raise FormatError(path, "is a folder, not a model file") from None
    except OSError as exc:
        raise FormatError(path, f"cannot open it in {path.absolute().parent}: {exc.strerror or exc}") from None
    if not head:
        raise FormatError(path, "file is empty")
    for fmt in READERS:
        if fmt.sniff(head):
            try:
                with collector_paused():  # a large header makes many objects, none garbage
                    return fmt.open(path, **options)
            except RecursionError:  # the last line of defence: every reader caps nesting before this
                raise FormatError(path, "is nested too deeply to read") from None
    raise FormatError(path, "not a Burnpack, SafeTensors, PyTorch file or Burn record (its first bytes match none of them)")


def writer(fmt: str) -> ModuleType:
    """The module that writes ``fmt`` ("burnpack" or "safetensors")."""
    for module in WRITERS:
        if module.NAME == fmt:
            return module
    raise ValueError(f"cannot write {fmt!r}: choose burnpack or safetensors")


def format_for_path(path: str | os.PathLike) -> str | None:
    """The writable format a destination's extension asks for, if any."""
    suffix = Path(path).suffix.lower()
    for module in WRITERS:
        if suffix in module.EXTENSIONS:
            return module.NAME
    return None
