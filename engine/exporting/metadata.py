"""What a metadata key means, per format, and the name a source's field travels under into an export.

burn-store writes ``format``, ``producer`` and ``version`` into every file it saves, ``version`` being
the writer's crate version: ``BurnpackStore::default_metadata`` (crates/burn-store/src/burnpack/store.rs:66-71
at v0.20.0, :73-78 at v0.21.0, crates/burn-store/src/burnpack.rs:64-69 at v0.22.0-pre.2) and
``SafetensorsStore::default_metadata`` (crates/burn-store/src/safetensors/store.rs:105-110 at v0.20.0 and
v0.21.0, :104-109 at v0.22.0-pre.2). Store Studio keeps that meaning in what it writes: ``producer`` is
``store-studio`` and ``version`` its own version. A source's fields never land in those keys: a PyTorch
archive's ``version`` record (the zip layout's version, ``3``) would read as a Burn version. Each is
carried under a name that says where it came from (``pytorch.archive_version``, ``burnpack.version``).
"""

from __future__ import annotations

from typing import Iterable, Mapping, Protocol, Sequence

RESERVED = ("format", "producer", "version")  # burn-store's default_metadata, in Burnpack and SafeTensors alike
RECIPE_KEY = "store_studio.recipe"  # the digest of the recipe that made a file: it describes only that file
PRODUCER = "store-studio"

# A format's own records, renamed wherever they go (docs/cli.md, "Metadata and recipes", lists the mapping)
SOURCE_FIELDS: Mapping[str, Mapping[str, str]] = {
    "pytorch": {"version": "pytorch.archive_version", "byteorder": "pytorch.byteorder"},
}


class _Source(Protocol):
    format: str
    metadata: Mapping[str, str]


def carried_name(source_format: str, key: str, out_format: str | None, producer: str | None = None,
                 value: str = "") -> str | None:
    """The key a source's field ``key`` is written under, or None when it only described the old file.

    A ``format`` stays ``format`` only between files of one format; a reserved key otherwise becomes
    ``<source format>.<key>`` (``safetensors.format = pt``, ``burnpack.version = 0.21.0``). A ``format``
    naming the source's own format, and the ``producer``/``version`` of a file Store Studio wrote, say
    nothing the export will not.
    """
    renamed = SOURCE_FIELDS.get(source_format, {}).get(key)
    if renamed is not None:
        return renamed
    if key == RECIPE_KEY:
        return None
    if key not in RESERVED or (key == "format" and source_format == out_format):
        return key
    if (key == "format" and value == source_format) or (key in ("producer", "version") and producer == PRODUCER):
        return None
    return f"{source_format}.{key}"


def carried_fields(stores: Iterable[_Source], out_format: str | None) -> dict[str, str]:
    """The sources' metadata as an export to ``out_format`` keeps it, merged in order (a later source wins).

    Within one source, a field already carrying a renamed key's name (from an earlier conversion)
    keeps it: the renamed field never overwrites it.
    """
    metadata: dict[str, str] = {}
    for store in stores:
        own: dict[str, str] = {}
        renamed: dict[str, str] = {}
        producer = store.metadata.get("producer")
        for key, value in store.metadata.items():
            name = carried_name(store.format, key, out_format, producer, value)
            if name is None:
                continue
            (own if name == key else renamed)[name] = value
        for name, value in renamed.items():
            own.setdefault(name, value)
        metadata.update(own)
    return metadata


class _ScalarSource(_Source, Protocol):
    scalars: dict


def carried_scalars(stores: Sequence[_ScalarSource], out_format: str | None) -> dict | None:
    """The Burnpack scalars (an optimizer's numbers) an export keeps: only a single Burnpack or Burn record
    source's, and only into a Burnpack."""
    only = stores[0] if len(stores) == 1 else None
    return only.scalars if only is not None and only.format in ("burnpack", "burn-record") and out_format == "burnpack" \
        else None
