"""The models the benchmarks measure, generated on the spot so the suite needs no downloads.

A transformer-like model (embedding, per block four attention projections, an MLP and two
layer norms) at two widths with the same tensor count, so that listing cost can be seen to
follow the header and not the data; and a model of many tiny tensors, the header-heavy case.
"""

from __future__ import annotations

import os
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
BURN_RECORD = Spec("burn_record", 1408, 9, 16000)  # 1.04 GB of f32, as a NamedMpk record
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


CONFIG_ROWS, LOG_RECORDS = 12_800, 18_000  # config-heavy pickles at the size users reported
CONFIG_ROWS_QUICK, LOG_RECORDS_QUICK = 640, 900


def config_tables(rows: int) -> dict:
    """A checkpoint of non-tensor tables beside a tiny state_dict, as a chemistry model ships its lookup tables:
    ``rows`` records of text, numbers and short lists, 14 objects and about 490 pickled bytes each (12,800 rows:
    179,212 objects in a 6.3 MB pickle, the shape of a reported 5.9 MB, 180,000-object file)."""
    import torch
    rng = np.random.default_rng(0)
    tables: dict = {}
    for table in range(8):
        tables[f"table_{table}"] = [
            {"smirks": f"[#6X4:1]-[#6X4:2]-[#8X2H0:3]-[#6X4:4]~[*:{table}]" * 5 + str(i),
             "name": f"t{table}-{i}-" + "x" * 150, "k": float(rng.random()), "id": i, "periodicity": [1, 2],
             "phase": [float(rng.random()), float(rng.random())], "idivf": [1.0, float(rng.random())]}
            for i in range(rows // 8)]
    return {"state_dict": {"w": torch.ones(4)}, "tables": tables}


def training_log(records: int) -> dict:
    """A checkpoint holding a training log of ``records`` small records beside a tiny state_dict (a reported file's 18,000
    records: 198,004 objects in a 2.6 MB pickle)."""
    import torch
    rng = np.random.default_rng(1)
    return {"model": {"w": torch.ones(3)}, "log": [
        {"name": f"record-{i}", "step": i, "loss": float(rng.random()), "lr": 1e-3, "grad_norm": float(rng.random()),
         "note": f"epoch {i // 100} of run {rng.random()}", "ok": True, "lrs": [float(rng.random()), 1e-4]}
        for i in range(records)]}


def objects(value: object) -> int:
    """How many objects a checkpoint of dicts, lists and values holds (dict keys not counted)."""
    if isinstance(value, dict):
        return 1 + sum(objects(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return 1 + sum(objects(v) for v in value)
    return 1


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
        torch.save({k: torch.from_numpy(v) if v.dtype.name != "bfloat16" else
                    torch.from_numpy(v.view(np.uint16)).view(torch.bfloat16) for k, v in values.items()}, paths["pt"])
    os.sync()  # the next rows measure in-process calls: the writeback of 6 GB must not share the cores with them
    return paths


def write_mpk(path: Path, values: dict[str, np.ndarray]) -> Path:
    """A NamedMpk record as Burn 0.17 wrote one (full precision), streamed so the generator holds one tensor."""
    import msgpack
    packer = msgpack.Packer(use_bin_type=True)
    tree: dict = {}
    for name, array in values.items():
        *parents, leaf = name.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = array
    meta = {"float": "f32", "int": "i64", "format": "burn_core::record::file::NamedMpkFileRecorder<burn_core::record::"
            "settings::FullPrecisionSettings>", "version": "0.17.0", "settings": "FullPrecisionSettings"}
    ids = iter(range(1, len(values) + 1))

    def write(node: dict | np.ndarray, f) -> None:
        if isinstance(node, np.ndarray):
            pid = next(ids).to_bytes(8, "little")
            f.write(packer.pack_map_header(2) + packer.pack("id") + packer.pack(_base32hex(pid)) + packer.pack("param"))
            f.write(packer.pack_map_header(3) + packer.pack("bytes") + b"\xc6" + node.nbytes.to_bytes(4, "big"))
            f.write(np.ascontiguousarray(node).tobytes())
            f.write(packer.pack("shape") + packer.pack(list(node.shape)) + packer.pack("dtype") + packer.pack("F32"))
            return
        f.write(packer.pack_map_header(len(node)))
        for key, child in node.items():
            f.write(packer.pack(key))
            write(child, f)

    with path.open("wb") as f:
        f.write(packer.pack_map_header(3) + packer.pack("metadata") + packer.pack(meta) + packer.pack("item"))
        write(tree, f)
        f.write(packer.pack("_b") + packer.pack(None))
    return path


def _base32hex(raw: bytes) -> str:
    import base64
    return base64.b32hexencode(raw).decode().lower().rstrip("=")
