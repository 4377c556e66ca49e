"""A checkpoint split over shard files as one store (PyTorch's ``pytorch_model.bin.index.json``).

Each shard is a store of its own, opened from its bytes (its header or zip index only); this
store lists the tensors the index maps to each shard and hands every read to that shard. (A
SafeTensors index needs no such layer: its shards' tensors are plain ranges, see ``safetensors``.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from msgspec.structs import replace

from ..sources import CHUNK
from ..sources.locations import Location
from ..store import Store, TensorEntry

if TYPE_CHECKING:
    import numpy as np


class ShardedStore(Store):
    def __init__(self, path: Location, shards: list[Store], names: list[set[str]], **kwargs: Any):
        self._shards = shards
        self._owner: dict[str, Store] = {}
        entries: list[TensorEntry] = []
        for shard, wanted in zip(shards, names):
            for entry in shard.entries:
                if entry.name in wanted and entry.name not in self._owner:
                    entries.append(replace(entry, store=None))  # the shard keeps its own entry
                    self._owner[entry.name] = shard
        self.format = shards[0].format if shards else ""
        super().__init__(path, entries, files=[f for shard in shards for f in shard.files], version="sharded",
                         values={shard.path.name: shard.values for shard in shards if shard.values}, **kwargs)
        # what each shard's reader had to say (torch's safe loader refusing a class, say), naming the shard
        self.note = "; ".join(f"{shard.path.name}: {shard.note}" for shard in shards if shard.note) or None
        self.foreign_classes = tuple(sorted({c for shard in shards for c in getattr(shard, "foreign_classes", ())}))

    def _read(self, entry: TensorEntry) -> np.ndarray:
        return self._owner[entry.name].read(entry.name)

    def byte_range(self, name: str) -> tuple[int, int, int] | None:
        self._check_open()
        return self._owner[self.entry(name).name].byte_range(name)

    def iter_bytes(self, name: str, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        self._check_open()
        return self._owner[self.entry(name).name].iter_bytes(name, chunk_size)

    def verify(self, name: str) -> None:
        self._check_open()
        self._owner[self.entry(name).name].verify(name)

    def release(self, name: str) -> None:
        self._owner[self.entry(name).name].release(name)

    def close(self) -> None:
        if not self.closed:
            for shard in self._shards:
                shard.close()
        super().close()
