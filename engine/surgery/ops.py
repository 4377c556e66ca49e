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


Op = Rename | Transpose | Cast | FuseWeightNorm
# An operation as a plan records it: ``(Op class, *arguments)``, built into the Op when first read. A plan
# of 10,000 tensors records tens of thousands of operations on every edit and shows a few screens of them.
OpRecord = tuple[Any, ...]


def built(records: Sequence[Op | OpRecord]) -> tuple[Op, ...]:
    """The operations ``records`` stand for (records built, operations kept)."""
    return tuple(r[0](*r[1:]) if type(r) is tuple else r for r in records)


def changes_bytes(records: Sequence[Op | OpRecord]) -> bool:
    return any((r[0] if type(r) is tuple else r).changes_bytes for r in records)


def run(ops: Sequence[Op], arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Apply ``ops`` to the input arrays (two only when the first op fuses a weight norm)."""
    steps = list(ops)
    if steps and isinstance(steps[0], FuseWeightNorm):
        array = steps.pop(0).combine(*arrays)
    else:
        (array,) = arrays
    for op in steps:
        if op.changes_bytes:
            array = op.apply(array)
    return array
