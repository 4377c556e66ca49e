"""What every opened model file looks like to the rest of the app: a ``Store`` of ``TensorEntry``.

A store is lazy: opening reads only the header; ``read`` maps one tensor's bytes on demand.
Formats subclass ``Store`` and implement ``_read``; everything else is shared.
"""

from __future__ import annotations

import math
import operator
import os
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterator, Protocol

import msgspec
from msgspec.structs import force_setattr

from .dtypes import DType
from .errors import FormatError
from .sources import CHUNK
from .sources.locations import Location, RemoteLocation, location

if TYPE_CHECKING:
    import numpy as np

_NAME, _STORE = operator.attrgetter("name"), operator.attrgetter("store")


class TensorSource(Protocol):
    """Anything export can write: a stored tensor, or a planned (transformed) one."""

    name: str
    dtype: DType
    shape: tuple[int, ...]
    nbytes: int
    param_id: int | None

    def byte_range(self) -> tuple[int, int, int] | None:
        """``(fd, offset, length)`` when the tensor's little-endian bytes lie as-is in a file."""

    def iter_bytes(self, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        """The tensor's little-endian, row-major bytes, a chunk at a time."""

    def verify(self) -> None:
        """Raise ``FormatError`` if the file behind ``byte_range`` changed since it was opened."""


class TensorEntry(msgspec.Struct, frozen=True):
    """One tensor as a file describes it. ``offset`` is its absolute byte offset, where it has one.

    A frozen ``msgspec.Struct``, not a dataclass: its ``__init__`` runs in C, a tenth of the frozen
    dataclass's cost, which is what a header of 100,000 tensors spends most on. ``store`` is set by the
    store the entry belongs to and, as in a dataclass field with ``compare=False, repr=False``, takes no
    part in equality, hashing or ``repr``: an entry is what the file says of one tensor.
    """

    name: str
    dtype: DType
    shape: tuple[int, ...]
    nbytes: int
    param_id: int | None = None
    offset: int | None = None
    store: "Store | None" = None

    def __eq__(self, other: object) -> bool:
        if type(other) is not TensorEntry:
            return NotImplemented
        return _FIELDS(self) == _FIELDS(other)

    def __hash__(self) -> int:
        return hash(_FIELDS(self))

    def __repr__(self) -> str:
        return (f"TensorEntry(name={self.name!r}, dtype={self.dtype!r}, shape={self.shape!r}, nbytes={self.nbytes!r}, "
                f"param_id={self.param_id!r}, offset={self.offset!r})")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    # Each call goes to the store with the entry itself: no lookup by name (export asks three times a tensor).
    def read(self) -> np.ndarray:
        return self._store().read_entry(self)

    def byte_range(self) -> tuple[int, int, int] | None:
        return self._store().entry_byte_range(self)

    def iter_bytes(self, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        return self._store().entry_iter_bytes(self, chunk_size)

    def release(self) -> None:
        """Give back the memory pages reading this tensor touched (they count as resident)."""
        self._store().entry_release(self)

    def verify(self) -> None:
        self._store().entry_verify(self)

    def _store(self) -> "Store":
        if self.store is None:
            raise ValueError(f"tensor {self.name!r} is not attached to a store")
        return self.store


_FIELDS = operator.attrgetter("name", "dtype", "shape", "nbytes", "param_id", "offset")  # all but ``store``


def make_entries(names: list[str], dtypes: list[DType], shapes: list[tuple[int, ...]], nbytes: list[int],
                 param_ids: list[int | None], offsets: list[int | None]) -> list[TensorEntry]:
    """Entries from columns of fields, each made in C (``map`` over the Struct's ``__init__``)."""
    return list(map(TensorEntry, names, dtypes, shapes, nbytes, param_ids, offsets))


class Store:
    """An opened model file (or a set of shards) with its tensors in file order.

    ``metadata`` is text to text. ``scalars`` are Burnpack's named scalars (serde values,
    kept on Burnpack copies). ``values`` holds non-tensor leaves of a PyTorch checkpoint as
    plain JSON-able data (empty elsewhere).
    """

    format: str = ""
    note: str | None = None  # a caveat a user must know about this file (shown beside its format)
    has_values = True  # False for a model read from its source code (engine.formats.rust_model): names and shapes only

    def __init__(self, path: str | os.PathLike | RemoteLocation, entries: list[TensorEntry], *,
                 metadata: dict[str, str] | None = None, version: str | None = None,
                 scalars: dict[str, Any] | None = None, values: Any = None, files: list[Location] | None = None,
                 names_checked: bool = False):
        """``names_checked``: the format's parser already refused a name given twice or holding a lone
        surrogate (SafeTensors' header is a JSON object, so its names are unique; its parser refuses lone
        surrogates). The index by name is then built at the first lookup rather than now: opening and
        listing a small file never pays for it (making and freeing it was a fifth of the listing's time),
        and building it still refuses the same names."""
        self.path: Location = location(path)
        self.version = version
        self.metadata: dict[str, str] = dict(metadata or {})
        self.scalars: dict[str, Any] = dict(scalars or {})
        self.values: Any = values if values is not None else {}
        self.files: list[Location] = files or [self.path]
        self.entries: list[TensorEntry] = list(entries)
        for entry in self.entries:  # formats make entries before their store exists
            force_setattr(entry, "store", self)
        self._index: dict[str, TensorEntry] | None = None if names_checked else _name_index(path, self.entries)
        self.closed = False

    # --- lookup ---------------------------------------------------------------------------
    def entry(self, name: str) -> TensorEntry:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"{self.path.name} has no tensor {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def _by_name(self) -> dict[str, TensorEntry]:
        """The entries by name, built at the first lookup where the format checked the names (two threads
        may both build it: the same dict, the last one kept)."""
        if self._index is None:
            self._index = _name_index(self.path, self.entries)
        return self._index

    def __len__(self) -> int:
        return len(self.entries)

    # --- as a template (what a model built as this file says expects) ---------------------------------------
    def expected(self, offered: Collection[str]) -> list[TensorEntry]:
        """The tensors the model wants, given the names offered to it: a weights file wants its entries; a model's
        source code also wants the elements of each Vec whose length is set at run time that ``offered`` fills."""
        return self.entries

    def is_optional(self, name: str) -> bool:
        """Whether the model may lack ``name`` (present or not at run time); never, for a weights file."""
        return False

    @property
    def declared_kinds(self) -> Callable[[str], str | None]:
        """Module path -> the module kind the file declares there (a model's source code does; weights declare
        none). A function that holds no reference to the store, so that caches keyed by the store can drop it."""
        return _declares_none

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.entries]

    @property
    def total_bytes(self) -> int:
        return sum(e.nbytes for e in self.entries)

    @property
    def total_params(self) -> int:
        return sum(e.numel for e in self.entries)

    @property
    def file_size(self) -> int:
        return sum((f.size or 0) if isinstance(f, RemoteLocation) else f.stat().st_size for f in self.files)

    @property
    def remote(self) -> bool:
        """True when the files are read over the network (nothing on disk to watch or copy in the kernel)."""
        return any(isinstance(f, RemoteLocation) for f in self.files)

    @property
    def description(self) -> str:
        """Format and version as a user reads it, e.g. ``Burnpack v1``."""
        label = {"burnpack": "Burnpack", "safetensors": "SafeTensors", "pytorch": "PyTorch", "gguf": "GGUF",
                 "onnx": "ONNX"}.get(self.format, self.format)
        return f"{label} {self.version}" if self.version else label

    # --- data -----------------------------------------------------------------------------
    def read(self, name: str) -> np.ndarray:
        """The tensor as a numpy array (zero-copy from a memory map where alignment allows)."""
        self._check_open()
        return self.read_entry(self.entry(name))

    def read_entry(self, entry: TensorEntry) -> np.ndarray:
        """``read`` for one of this store's own entries (no lookup by name)."""
        self._check_open()
        if entry.dtype.numpy is None:
            raise FormatError(self.path, f"tensor {entry.name!r} has dtype {entry.dtype}, whose values cannot be "
                                         "decoded (its bytes are kept as they are on copies)")
        return self._read(entry)

    def byte_range(self, name: str) -> tuple[int, int, int] | None:
        return None

    def iter_bytes(self, name: str, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        """Stream a tensor's bytes; the default materializes it, formats with plain ranges stream."""
        import numpy as np
        array = np.ascontiguousarray(self.read(name))
        view = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")
        for start in range(0, len(view), chunk_size):
            yield view[start:start + chunk_size]

    def release(self, name: str) -> None:
        """Drop mapped pages of one tensor from this process; a no-op where nothing is mapped."""

    def verify(self, name: str) -> None:
        """Raise ``FormatError`` if the file holding ``name`` changed on disk since it was opened."""

    # The same for one of this store's own entries: what TensorEntry calls. These default to the by-name
    # methods; a format whose by-name methods look the entry up overrides these to skip that lookup.
    def entry_byte_range(self, entry: TensorEntry) -> tuple[int, int, int] | None:
        return self.byte_range(entry.name)

    def entry_iter_bytes(self, entry: TensorEntry, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        return self.iter_bytes(entry.name, chunk_size)

    def entry_release(self, entry: TensorEntry) -> None:
        self.release(entry.name)

    def entry_verify(self, entry: TensorEntry) -> None:
        self.verify(entry.name)

    def _read(self, entry: TensorEntry) -> np.ndarray:
        raise NotImplementedError

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError(f"{self.path.name} is closed")

    # --- lifetime -------------------------------------------------------------------------
    def close(self) -> None:
        """Close the files. The entries then point to a stand-in that says so, not to this store: an entry
        and its store hold each other, and unless that is undone only the cyclic collector frees them
        (a tenth of opening a small file went to collecting the store listed before)."""
        self.closed = True
        stand_in = _ClosedStore(self.path.name)
        for entry in self.entries:
            if entry.store is self:
                force_setattr(entry, "store", stand_in)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path.name}: {len(self.entries)} tensors>"


def _declares_none(module_path: str) -> None:
    return None


class _ClosedStore:
    """What a closed store's entries point to: every read says the file is closed, as the store would."""

    closed = True

    def __init__(self, name: str):
        self.name = name

    def _refuse(self, *args: object) -> Any:
        raise ValueError(f"{self.name} is closed")

    read_entry = entry_byte_range = entry_iter_bytes = entry_verify = _refuse

    def entry_release(self, entry: TensorEntry) -> None:
        """Nothing is mapped any more."""


def _name_index(path: str | os.PathLike | Location, entries: list[TensorEntry]) -> dict[str, TensorEntry]:
    """The entries by name, refusing a name given twice or one that is not text (no file could be written with it)."""
    by_name = dict(zip(map(_NAME, entries), entries))
    if len(by_name) != len(entries):
        seen: set[str] = set()
        dup = next(e.name for e in entries if e.name in seen or seen.add(e.name))
        raise FormatError(path, f"tensor name {dup!r} appears twice")
    try:
        "".join(by_name).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate ("\ud800"): no file can be written with it
        bad = next(n for n in by_name if not _is_text(n))
        raise FormatError(path, f"tensor name {ascii(bad)[:80]} holds a lone surrogate, which is not text "
                                "(the official SafeTensors reader refuses it too)") from None
    return by_name


def _is_text(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class ArrayStore(Store):
    """Tensors held in memory as numpy arrays: for building models in scripts and tests."""

    format = "memory"

    def __init__(self, arrays: dict[str, np.ndarray], *, name: str = "<memory>", param_ids: dict[str, int] | None = None,
                 **kwargs: Any):
        import numpy as np

        from .dtypes import from_numpy
        self._arrays = {k: np.asarray(v) for k, v in arrays.items()}
        ids = param_ids or {}
        entries = [TensorEntry(k, from_numpy(a.dtype), tuple(a.shape), a.nbytes, ids.get(k)) for k, a in self._arrays.items()]
        super().__init__(name, entries, **kwargs)

    def _read(self, entry: TensorEntry) -> np.ndarray:
        array = self._arrays[entry.name]
        return array if array.dtype.byteorder != ">" else array.astype(array.dtype.newbyteorder("<"))
