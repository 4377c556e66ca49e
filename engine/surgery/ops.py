"""The operations a plan applies to one tensor, as data: each says what it does and how to do it.

A plan only lists operations; bytes are touched at export (or diff) time, one tensor at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..dtypes import DType
from ..humanize import shape as shape_text


@dataclass(frozen=True)
class Rename:
    """A name change; the bytes stay as they are."""

    old: str
    new: str
    why: str
    changes_bytes = False

    def describe(self) -> str:
        return f"rename {self.old} -> {self.new} ({self.why})"


@dataclass(frozen=True)
class Transpose:
    """Swap the two axes of a 2-D weight: PyTorch Linear is [out, in], Burn's is [in, out]."""

    shape: tuple[int, int]
    changes_bytes = True

    def describe(self) -> str:
        return f"transpose {list(self.shape)} -> {list(self.shape[::-1])}"

    def apply(self, array: np.ndarray) -> np.ndarray:
        return array.T


@dataclass(frozen=True)
class Cast:
    source: DType
    target: DType
    changes_bytes = True

    def describe(self) -> str:
        return f"cast {self.source} -> {self.target}"

    def apply(self, array: np.ndarray) -> np.ndarray:
        return array.astype(self.target.numpy)


@dataclass(frozen=True)
class FuseWeightNorm:
    """``weight = g * v / ||v||``, the norm over every dim but the first (PyTorch's ``dim=0``).

    Burn has no weight norm, so the two parameters become the weight they stand for.
    """

    g_name: str
    v_name: str
    shape: tuple[int, ...]
    changes_bytes = True

    def describe(self) -> str:
        return f"fuse weight norm {self.g_name} * {self.v_name} / ||{self.v_name}|| -> {shape_text(self.shape)}"

    def combine(self, g: np.ndarray, v: np.ndarray) -> np.ndarray:
        v64 = v.astype(np.float64)
        axes = tuple(range(1, v64.ndim))
        norm = np.sqrt(np.sum(v64 * v64, axis=axes, keepdims=True)) if axes else np.abs(v64)
        g64 = g.astype(np.float64).reshape((-1,) + (1,) * (v64.ndim - 1))
        return (g64 * v64 / norm).astype(v.dtype)


@dataclass(frozen=True)
class SplitFused:
    """One part of a fused PyTorch tensor: rows ``start:stop`` of ``source`` (e.g. the input gate of an LSTM).

    ``what`` names the split ("LSTM gates"), ``outputs`` every tensor the one split makes, in order:
    the split is one operation with one input and several outputs, each output holding its own rows.
    """

    what: str
    source: str
    outputs: tuple[str, ...]
    start: int
    stop: int
    changes_bytes = True

    def describe(self) -> str:
        return f"split {self.what}: {self.source} rows {self.start}:{self.stop} -> {', '.join(self.outputs)}"

    def apply(self, array: np.ndarray) -> np.ndarray:
        return array[self.start:self.stop]


@dataclass(frozen=True)
class FuseSplit:
    """The inverse of ``SplitFused``: the ``inputs`` (transposed first when ``transpose``, Burn's Linears being
    ``[in, out]``) stacked row after row into the one tensor PyTorch fuses them in."""

    what: str
    inputs: tuple[str, ...]
    output: str
    transpose: bool
    changes_bytes = True

    def describe(self) -> str:
        done = "transposed and stacked" if self.transpose else "stacked"
        return f"fuse {self.what}: {', '.join(self.inputs)} {done} -> {self.output}"

    def combine(self, *arrays: np.ndarray) -> np.ndarray:
        return np.concatenate([a.T if self.transpose else a for a in arrays], axis=0)


@dataclass(frozen=True)
class UnpermuteRotary:
    """Undo the row order llama.cpp's converter gives q and k projections for its rotary embedding: each of
    ``heads`` heads' rows, stored as (half, 2) pairs, back to the (2, half) halves Hugging Face keeps
    (``LlamaModel.permute`` in llama.cpp's ``convert_hf_to_gguf.py``: reshape(heads, 2, rows/heads/2, ...),
    swap axes 1 and 2). Whole rows move: a quantized row's blocks stay as they are."""

    heads: int
    rows: int
    changes_bytes = True

    def describe(self) -> str:
        return f"undo llama.cpp's rotary row order ({self.heads} heads of {self.rows // self.heads} rows)"

    def row_order(self) -> np.ndarray:
        """For each output row, the input row it comes from."""
        half = self.rows // self.heads // 2
        return np.arange(self.rows).reshape(self.heads, half, 2).swapaxes(1, 2).reshape(-1)

    def apply(self, array: np.ndarray) -> np.ndarray:
        return array[self.row_order()]


@dataclass(frozen=True)
class MergedLora:
    """A LoRA adapter merged into the tensor by its source (``engine/lora.py``): the store already reads the merged
    values, so the plan only says so; no bytes change here."""

    adapter: str
    scale: float
    changes_bytes = False

    def describe(self) -> str:
        return f"merge LoRA {self.adapter} (scale {self.scale:g})"


Op = Rename | Transpose | Cast | FuseWeightNorm | SplitFused | FuseSplit | UnpermuteRotary | MergedLora
# An operation as a plan records it: ``(Op class, *arguments)``, built into the Op when first read. A plan
# of 10,000 tensors records tens of thousands of operations on every edit and shows a few screens of them.
OpRecord = tuple[Any, ...]


def built(records: Sequence[Op | OpRecord]) -> tuple[Op, ...]:
    """The operations ``records`` stand for (records built, operations kept)."""
    return tuple(r[0](*r[1:]) if type(r) is tuple else r for r in records)


def changes_bytes(records: Sequence[Op | OpRecord]) -> bool:
    return any((r[0] if type(r) is tuple else r).changes_bytes for r in records)


def run(ops: Sequence[Op], arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Apply ``ops`` to the input arrays: several only when an op fuses them (the ops before it are renames)."""
    array = arrays[0] if len(arrays) == 1 else None
    for op in ops:
        if isinstance(op, (FuseWeightNorm, FuseSplit)):
            array = op.combine(*arrays)
        elif op.changes_bytes:
            array = op.apply(array)
    return array
