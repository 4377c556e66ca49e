"""What kind of layer each module path holds, guessed from tensor names, shapes and siblings.

A weights file carries no module types, yet PyTorch-to-Burn conversion depends on them (a 2-D
Linear weight is transposed, a 2-D Embedding weight is not; norm weights become gamma). So the
engine guesses, says why, and lets the user override any guess per module path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol, Sequence

from ..errors import RecipeError

KINDS = ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose", "Embedding",
         "BatchNorm", "LayerNorm", "GroupNorm", "RmsNorm", "Unknown")
NORM_KINDS = frozenset({"BatchNorm", "LayerNorm", "GroupNorm", "RmsNorm"})

_EMBEDDING_NAME = re.compile(r"embed|(^|_)(emb|wte|wpe|tok_embeddings|shared|lookup)(_|$|\d)", re.I)
_TRANSPOSED_NAME = re.compile(r"deconv|conv_?transpose|transposed?_?conv|(^|_)up(conv|sample|_|\d|$)", re.I)
_GROUP_NAME = re.compile(r"group|(^|_)gn(_|\d|$)", re.I)
_RMS_NAME = re.compile(r"rms", re.I)
_BATCH_NAME = re.compile(r"batch|(^|_)bn(_|\d|$)", re.I)
_LAYER_NAME = re.compile(r"layer_?norm|(^|_)ln(_|\d|$)", re.I)


class ShapedTensor(Protocol):
    name: str
    shape: Sequence[int]


@dataclass(frozen=True)
class ModuleGuess:
    """One module path's kind and the evidence for it; ``overridden`` when the user set it."""

    path: str
    kind: str
    reason: str
    overridden: bool = False


def module_path(name: str) -> str:
    """A tensor's module: its name minus the last dotted segment ('' for a top-level tensor)."""
    return name.rpartition(".")[0]


def logical_leaf(name: str) -> tuple[str, str]:
    """``(module, leaf)`` with weight-norm parametrizations folded back onto their module.

    ``m.parametrizations.weight.original0`` is ``m``'s ``weight_g``, ``original1`` its ``weight_v``:
    the module is ``m`` (a Linear or Conv), not ``m.parametrizations.weight``.
    """
    module, _, leaf = name.rpartition(".")
    if module.endswith("parametrizations.weight") and leaf in ("original0", "original1"):
        owner = module[:-len("parametrizations.weight")].rstrip(".")
        return owner, "weight_g" if leaf == "original0" else "weight_v"
    return module, leaf


def check_kind(kind: str, path: str) -> str:
    if kind not in KINDS:
        raise RecipeError(f"module type override for {path!r}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    return kind


def infer_modules(entries: Iterable[ShapedTensor], overrides: Mapping[str, str] | None = None) -> dict[str, ModuleGuess]:
    """Every module path of ``entries`` with its guessed kind, in order of first appearance.

    ``overrides`` (path -> kind) win over guesses; paths the entries do not hold are ignored.
    """
    leaves: dict[str, dict[str, tuple[int, ...]]] = {}
    for entry in entries:
        module, leaf = logical_leaf(entry.name)
        leaves.setdefault(module, {})[leaf] = tuple(entry.shape)
    guesses = {}
    for path, siblings in leaves.items():
        if overrides and path in overrides:
            guesses[path] = ModuleGuess(path, check_kind(overrides[path], path), "set by user", True)
        else:
            kind, reason = _guess(path, siblings)
            guesses[path] = ModuleGuess(path, kind, reason)
    return guesses


def _label(path: str) -> str:
    """The segment that names a module: the last non-numeric one (``fc.0`` in a Sequential is ``fc``)."""
    for segment in reversed(path.split(".")):
        if not segment.isdigit():
            return segment
    return ""


def _guess(path: str, siblings: dict[str, tuple[int, ...]]) -> tuple[str, str]:
    label = _label(path)
    if "running_mean" in siblings or "running_var" in siblings:
        return "BatchNorm", "has running_mean/running_var"
    weight = siblings.get("weight", siblings.get("weight_v", siblings.get("gamma")))
    if weight is None:
        return "Unknown", "no weight tensor"
    ndim = len(weight)
    if "gamma" in siblings and ndim == 1:
        return _norm_kind(label, "beta" in siblings, "Burn names gamma/beta")
    if ndim == 1:
        return _norm_kind(label, "bias" in siblings, "1-D weight")
    if ndim == 2:
        if _EMBEDDING_NAME.search(label):
            return "Embedding", f"2-D weight, and the name {label!r} says embedding"
        return "Linear", "2-D weight" + (" and bias" if "bias" in siblings else "")
    if 3 <= ndim <= 5:
        if _TRANSPOSED_NAME.search(label):
            return "ConvTranspose", f"{ndim}-D weight, and the name {label!r} says transposed"
        return f"Conv{ndim - 2}d", f"{ndim}-D weight"
    return "Unknown", f"{ndim}-D weight fits no known layer"


def _norm_kind(label: str, has_bias: bool, evidence: str) -> tuple[str, str]:
    """A 1-D affine weight: the name decides the norm; without a name hint, bias decides."""
    for pattern, kind in ((_GROUP_NAME, "GroupNorm"), (_RMS_NAME, "RmsNorm"), (_BATCH_NAME, "BatchNorm"),
                          (_LAYER_NAME, "LayerNorm")):
        if pattern.search(label):
            return kind, f"{evidence}, and the name {label!r} says {kind}"
    if has_bias:
        return "LayerNorm", f"{evidence} with a bias and no running stats"
    return "RmsNorm", f"{evidence} without bias or running stats"
