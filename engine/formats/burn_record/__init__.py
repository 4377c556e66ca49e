"""Burn's legacy records (``.mpk``, ``.bin``, ``.json``, each also ``.gz``): read only.

Burn removed its recorders (upstream 862ef266a); current Burn loads only Burnpack. Records are
recognised by content: gzip (decompressed once to a temporary file), then a msgpack map
(NamedMpk), a JSON object (PrettyJson, JsonGz) or bincode's metadata strings (Bin). Bin records
have no field names: parameters are ``param.0``, ``param.1``, ... unless a ``template`` (a model
file of the same architecture) names them in order.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ...errors import FormatError
from ...sources.byte_source import ByteSource, open_source, spool
from ...sources.local import MappedFile
from ...sources.locations import Location
from . import bincode, gz, mpk, named
from .record import NAME, BurnRecordStore, metadata_from

if TYPE_CHECKING:
    from ...store import Store

EXTENSIONS = (".mpk", ".mpk.gz", ".bin", ".bin.gz", ".json", ".json.gz")
MAX_JSON_BYTES = 256 << 20  # JSON spells every byte as a number: larger files would need gigabytes of memory
POSITIONAL = "positional"  # param.0, param.1, ...: the store's note says why and what to do
_JSON_HEAD = re.compile(rb'\s*\{\s*"metadata"\s*:\s*\{')

__all__ = ["NAME", "EXTENSIONS", "BurnRecordStore", "sniff", "open"]


def sniff(head: bytes) -> bool:
    """A Burn record, or any gzip file (no other format is gzipped; opening says what is inside)."""
    return head[:2] == gz.MAGIC or kind(head) is not None


def kind(head: bytes) -> str | None:
    """The record kind (``NamedMpk``, ``JSON``, ``Bin``) the first bytes show, looking inside gzip."""
    inner = gz.sniff(head)
    return _kind(head if inner is None else inner)


def _kind(head: bytes) -> str | None:
    if mpk.sniff(head):
        return "NamedMpk"
    if _JSON_HEAD.match(head) and b'"float"' in head:
        return "JSON"
    if bincode.sniff(head):
        return "Bin"
    return None


def open(where: "str | os.PathLike | ByteSource", *, template: str | os.PathLike | None = None,
         open_template: "Callable[[str | os.PathLike], Store] | None" = None, **options: Any) -> BurnRecordStore:
    """Open a record; ``template`` names a Bin record's parameters (and checks their shapes), opened through
    ``open_template`` (``formats.open_store`` hands down ``formats.open_template``).

    A ``.gz`` record inflates (streaming, from any source) to a temporary file that is then read.
    A Bin record is decoded from a whole-file memory map, which needs a local descriptor: a remote
    one is first downloaded to a temporary file (bounded like any full download, see ``spool``).
    """
    source = open_source(where)
    path = source.path
    temporary: Path | None = None
    try:
        head = source.pread(0, min(source.size, 4096), "the first bytes")
        compressed = head[:2] == gz.MAGIC
        if compressed and kind(head) is None:
            problem = "is not a Burn record" if gz.sniff(head) is not None else "cannot be decompressed (corrupt)"
            raise FormatError(path, f"a gzip file whose content {problem}")
        if compressed or (source.fileno() is None and kind(head) == "Bin"):
            temporary = gz.inflate(source) if compressed else spool(source)
            source.close()
            source = MappedFile(temporary)
        return _open(path, source, compressed, template, open_template, temporary)
    except BaseException:
        source.close()
        if temporary:
            temporary.unlink(missing_ok=True)
        raise


def _open(path: Location, mapped: ByteSource, compressed: bool, template: str | os.PathLike | None,
          open_template: "Callable[[str | os.PathLike], Store] | None", temporary: Path | None) -> BurnRecordStore:
    kind = _kind(mapped.pread(0, min(mapped.size, 4096), "the first bytes"))
    label = f"{kind} (gzip)" if compressed else kind
    if kind == "Bin":
        names = _template_names(template, open_template) if template is not None else None
        meta, tensors, encoding = bincode.read(mapped, path, names)
        note = {"burn.names": POSITIONAL if names is None else f"from the template {Path(template).name}",
                "burn.encoding": encoding}
        return BurnRecordStore(path, tensors, mapped, kind=label, meta=meta, extra_metadata=note,
                               temporary=temporary)
    if kind == "NamedMpk":
        root = mpk.index(mapped, path)
    elif kind == "JSON":
        root = _json(path, mapped)
    else:
        raise FormatError(path, "not a Burn record (neither msgpack, JSON nor bincode after decompression)")
    if "item" not in root:
        raise FormatError(path, "the record has metadata but no 'item'")
    meta = metadata_from(path, root.get("metadata"))
    walked = named.walk(path, root["item"], meta)
    return BurnRecordStore(path, walked.tensors, mapped, kind=label, meta=meta, values=walked.values,
                           scalars=walked.scalars, temporary=temporary)


def _json(path: Location, mapped: ByteSource) -> dict:
    import json  # here: a JSON record is the rare kind
    if mapped.size > MAX_JSON_BYTES:
        raise FormatError(path, f"JSON record of {mapped.size} bytes is over the limit of {MAX_JSON_BYTES}; "
                                "JSON spells each byte as a number (convert it with Burn to NamedMpk first)")
    raw = mapped.pread(0, mapped.size, "the JSON record")
    try:
        root = json.loads(raw)
    except RecursionError:
        raise FormatError(path, "the JSON record is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        where = f" at byte {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        problem = "file is truncated" if "Expecting" in str(exc) and getattr(exc, "pos", 0) >= len(raw) - 1 \
            else f"not valid JSON ({getattr(exc, 'msg', exc)})"
        raise FormatError(path, f"{problem}{where}") from None
    if not isinstance(root, dict):
        raise FormatError(path, "the JSON record is not an object")
    return root


def _template_names(template: str | os.PathLike, open_template: "Callable[[str | os.PathLike], Store] | None"
                    ) -> list[tuple[str, tuple[int, ...]]]:
    """The template's names and shapes in its order (a model's Rust source: Burn's order, run-time sizes -1)."""
    if open_template is None:
        raise TypeError("a template needs open_template (engine.open_store hands it down)")
    with open_template(template) as store:
        return [(e.name, e.shape) for e in store.entries]
