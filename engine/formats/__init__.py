"""One module per file format behind one interface: ``sniff(head)`` and ``open(path, **options)``.

``open_store`` asks each format's ``sniff`` in turn and knows nothing else about formats. A reader is
imported when it is first asked: a SafeTensors or Burnpack file never loads the PyTorch reader.
"""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple

from ..collector import collector_paused
from ..errors import FormatError
from ..sources.byte_source import ByteSource, open_source
from ..sources.locations import RemoteLocation
from ..store import Store
from . import burnpack, safetensors

if TYPE_CHECKING:
    from ..burn_versions import BurnVersion

SNIFF_BYTES = 4096
ZIP_SIGNATURE = b"PK\x03\x04"  # a zip's local file header: PyTorch's current layout
OPTIONS = {"top_level_key", "template"}  # options some format understands; the others ignore them


READERS = ("burnpack", "gguf", "burn_record", "safetensors", "pytorch", "onnx")  # modules here, asked in this order
WRITERS: tuple[ModuleType, ...] = (burnpack, safetensors)
TOP_LEVEL_KEY_FORMATS = ("pytorch",)  # the formats whose files nest tensors under top-level keys


class WritableFormat(NamedTuple):
    """A format exports can write, as a window or a help text shows it (the first extension is the default)."""

    name: str
    label: str
    extensions: tuple[str, ...]


WRITABLE_FORMATS = tuple(WritableFormat(module.NAME, module.LABEL, module.EXTENSIONS) for module in WRITERS)


def writable_format(name: str) -> WritableFormat:
    """The writable format called ``name`` (ValueError for any other)."""
    for fmt in WRITABLE_FORMATS:
        if fmt.name == name:
            return fmt
    raise ValueError(f"cannot write {name!r}: choose burnpack or safetensors")


def takes_top_level_key(store: Store) -> bool:
    """Whether ``store``'s format nests tensors under top-level keys that ``top_level_key`` can pick."""
    return store.format in TOP_LEVEL_KEY_FORMATS


def open_store(where: "str | os.PathLike | RemoteLocation | ByteSource", **options: Any) -> Store:
    """Open a model file by what its bytes say it is, not by its name.

    ``where`` is a path, an ``http(s)://`` or ``hf://`` URL, or a byte source already open (which
    the store then owns). Every format reads through the source, so all of them open remotely.
    """
    unknown = set(options) - OPTIONS if options else None
    if unknown:
        raise TypeError(f"unknown open option(s): {', '.join(sorted(unknown))}")
    source = open_source(where)
    try:
        head = source.pread(0, min(source.size, SNIFF_BYTES), "the first bytes")
        if not head:
            raise FormatError(source.path, "file is empty")
        for fmt in _readers_for(head):
            if fmt.sniff(head):
                try:
                    # Many objects, none garbage: without the pause the benchmark row "open+list 100,000 tensors
                    # .safetensors" takes 20-30% longer (tests/benchmarks/run.py, bench_open).
                    with collector_paused():
                        store = fmt.open(source, **options, **_handed_down(fmt))
                except RecursionError:  # the last line of defence: every reader caps nesting before this
                    raise FormatError(source.path, "is nested too deeply to read") from None
                store.note = store.note or getattr(source, "note", None)  # e.g. a remote file downloaded whole
                return store
        raise FormatError(source.path, "not a Burnpack, SafeTensors, GGUF, ONNX, PyTorch file or Burn record (its "
                                       "first bytes match none of them)")
    except BaseException:
        source.close()
        raise


def open_template(where: "str | os.PathLike | RemoteLocation", burn_version: "BurnVersion | None" = None) -> Store:
    """Open what a template path names: the model's Rust source (a ``.rs`` file or a folder, optionally
    ``::Struct``; read as Burn ``burn_version`` saves it, the newest by default), else a model file as
    ``open_store`` opens it. Every template picker and ``--template`` come here."""
    from .rust_model import is_rust_source, open_rust_template  # light: tree-sitter loads only to parse
    if is_rust_source(where):
        from ..burn_versions import NEWEST
        return open_rust_template(where, burn_version or NEWEST)  # type: ignore[arg-type]
    return open_store(where)


def _handed_down(fmt: ModuleType) -> dict[str, Any]:
    """What a reader opens through this package, handed down so that no reader imports the package that
    dispatches to it: a sharded index's shards of other formats (SafeTensors reader), a Bin record's template."""
    if fmt is safetensors:
        return {"open_shard": open_store}
    return {"open_template": open_template} if fmt.__name__ == f"{__name__}.burn_record" else {}


def _readers_for(head: bytes) -> Iterator[ModuleType]:
    """The readers to ask, in order. A SafeTensors file's own first bytes (a header length within its limit,
    so bytes 4-7 are zeros, then ``{``) go to its reader first. No Burn record starts so (gzip's byte 8 is a
    flag byte; a MessagePack or JSON record is a map or object from byte 0; Burn's bincode has text in bytes
    4-7), while a SafeTensors header of 35,615 bytes starts with gzip's magic and was taken for a corrupt
    gzip. This also skips the record's bincode sniff, a sixth of a small file's fixed cost. Anything else
    is asked of every reader in ``READERS``' order, as before. Likewise a zip's signature goes to the PyTorch
    reader first: no Burn record starts with it (nor with any byte a zip's signature starts with: ``P`` is
    neither gzip, a MessagePack map, ``{`` nor a bincode length its text could follow), and importing the
    record reader only to rule a ``.pt`` out was a tenth of a conversion's start-up."""
    if safetensors.sniff_file(head):
        yield safetensors
    elif head[:4] == ZIP_SIGNATURE:
        yield reader("pytorch")
    else:
        yield from map(reader, READERS)


@functools.cache  # importlib's own lookup, three times an open, cost more than a small file's header
def reader(name: str) -> ModuleType:
    """The reader module ``name`` (one of READERS), imported now if it was not yet."""
    return importlib.import_module(f"{__name__}.{name}")


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
