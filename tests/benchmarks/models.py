"""The models the benchmarks measure, generated on the spot so the suite needs no downloads.

A transformer-like model (embedding, per block four attention projections, an MLP and two
layer norms) at two widths with the same tensor count, so that listing cost can be seen to
follow the header and not the data; and a model of many tiny tensors, the header-heavy case.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Spec:
    name: str
    width: int
    blocks: int
    vocab: int

    def shapes(self) -> dict[str, tuple[int, ...]]:
        d = self.width
        shapes: dict[str, tuple[int, ...]] = {"embed.weight": (self.vocab, d)}
        for b in range(self.blocks):
            p = f"blocks.{b}"
            for proj in ("q", "k", "v", "o"):
                shapes[f"{p}.attn.{proj}.weight"] = (d, d)
                shapes[f"{p}.attn.{proj}.bias"] = (d,)
            shapes[f"{p}.mlp.up.weight"] = (4 * d, d)
            shapes[f"{p}.mlp.up.bias"] = (4 * d,)
            shapes[f"{p}.mlp.down.weight"] = (d, 4 * d)
            shapes[f"{p}.mlp.down.bias"] = (d,)
            for norm in ("norm1", "norm2"):
                shapes[f"{p}.{norm}.weight"] = (d,)
                shapes[f"{p}.{norm}.bias"] = (d,)
        shapes["head.weight"] = (self.vocab, d)
        return shapes

    def nbytes(self, itemsize: int = 4) -> int:
        return sum(int(np.prod(s)) for s in self.shapes().values()) * itemsize


FULL = {"large": Spec("large", 2048, 9, 16000), "small": Spec("small", 640, 9, 16000)}
QUICK = {"large": Spec("large", 384, 4, 2000), "small": Spec("small", 128, 4, 2000)}
MANY_FULL, MANY_QUICK = 100_000, 5_000


def arrays(spec: Spec, dtype=np.float32, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape, dtype=np.float32).astype(dtype, copy=False)
            for name, shape in spec.shapes().items()}


def many_arrays(count: int) -> dict[str, np.ndarray]:
    """``count`` tiny tensors in a deep tree (``layers.i.block.j.weight``)."""
    return {f"layers.{i // 100}.block.{i % 100}.{'weight' if i % 2 else 'bias'}": np.full(4, i, np.float32)
            for i in range(count)}


def write_all(folder: Path, values: dict[str, np.ndarray], stem: str, *, pt: bool = True) -> dict[str, Path]:
    """Write one model as .safetensors (official library), .pt (torch) and .bpk (ours)."""
    import torch
    from safetensors.numpy import save_file

    from engine import ArrayStore, export

    paths = {"safetensors": folder / f"{stem}.safetensors", "bpk": folder / f"{stem}.bpk"}
    save_file(values, paths["safetensors"])
    export(ArrayStore(values).entries, paths["bpk"], overwrite=True)
    if pt:
        paths["pt"] = folder / f"{stem}.pt"
        torch.save({k: torch.from_numpy(v) if v.dtype != np.dtype("bfloat16") else
                    torch.from_numpy(v.view(np.uint16)).view(torch.bfloat16) for k, v in values.items()}, paths["pt"])
    return paths
