"""What a training checkpoint holds besides the model: its top-level branches, each named by what it looks like.

Lightning writes ``{"state_dict": ..., "optimizer_states": [...], "callbacks": {...}, "epoch": 3}`` and research code
``{"model": ..., "optimizer": ..., "ema": ...}``; converted whole (burn-store's semantics, kept), the optimizer
state lands beside the weights. Grouping the tensor names by the checkpoint's own top-level keys says which
``--top-level-key`` reads the weights alone. Judged from names only: nothing here reads a tensor.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import msgspec

from ...humanize import plural, size
from ...store import Store, TensorEntry
from .allowlist import Placeholder

MODEL_WEIGHTS = "model weights"
OPTIMIZER_STATE = "optimizer state"
EMA = "EMA of the model weights"
CALLBACKS = "callbacks"
OTHER = "other"
CALLBACKS_KEY = "callbacks"  # Lightning's branch of callback states (ModelCheckpoint, EMA, ...)
STATE = "state"  # torch.optim.Optimizer.state_dict(): {"state": {param index: {"exp_avg": ..., ...}}, "param_groups"}
MAX_PREFIXES = 64  # dotted prefixes of a name tried as a key or before a weight's name: bounds hostile names
SHOWN_LEAVES = 4  # an optimizer branch names this many of its per-parameter tensors (exp_avg, step, ...)
# The words of a name: ``ModelEMA`` is model, EMA; ``ema_model`` is ema, model; ``schema`` stays one word.
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_EMA_WORDS = frozenset({"ema", "shadow"})
_CONTAINERS = {dict, list, tuple, set, frozenset, Placeholder}  # what the unpickler builds that names tensors inside


class Branch(msgspec.Struct, frozen=True):  # not a dataclass: its import is a cut start-up cost (tensors.py)
    """One top-level key of a checkpoint that holds tensors: how many, their bytes, and what they look like."""

    key: str
    kind: str
    tensors: int
    nbytes: int
    leaves: tuple[str, ...] = ()  # an optimizer state's per-parameter tensor names, first seen first

    def describe(self) -> str:
        """``optimizer state (exp_avg, exp_avg_sq, step)``: the kind, with what it holds where that tells more."""
        return f"{self.kind} ({', '.join(self.leaves)})" if self.leaves else self.kind

    def amount(self) -> str:
        """``51 tensors, 12 MiB``."""
        return f"{plural(self.tensors, 'tensor')}, {size(self.nbytes)}"


class CheckpointBranches(msgspec.Struct, frozen=True):
    """A checkpoint whose tensors sit under several top-level keys, in the file's order."""

    branches: tuple[Branch, ...]

    @property
    def weights(self) -> Branch | None:
        """The branch holding the model weights (what ``--top-level-key`` should name), when one looks so."""
        return next((b for b in self.branches if b.kind == MODEL_WEIGHTS), None)

    @property
    def besides_weights(self) -> tuple[Branch, ...]:
        """What a whole-file conversion writes beside the model weights."""
        return tuple(b for b in self.branches if b.kind != MODEL_WEIGHTS)


def top_level_keys(root: Any) -> tuple[str, ...]:
    """The keys of an unpickled checkpoint that ``--top-level-key`` can name and that may hold tensors below them
    (text and whole numbers, spelled as tensor names spell them); none for a plain state_dict, whose values are
    the tensors themselves, or a checkpoint that is not a dict."""
    if type(root) is not dict:
        return ()
    return tuple(key if type(key) is str else str(key) for key, value in root.items()
                 if type(key) in (str, int) and type(value) in _CONTAINERS)


def checkpoint_branches(store: Store, entries: Iterable[TensorEntry] | None = None) -> CheckpointBranches | None:
    """The top-level branches of a PyTorch checkpoint opened whole, judged by ``entries`` (what a conversion
    kept; all the store's by default); None unless two or more hold tensors (a plain state_dict, a single
    ``state_dict`` beside counters, or any other format has nothing to tell)."""
    keys = frozenset(getattr(store, "top_level_keys", ()))
    if not keys:
        return None
    chosen = store.entries if entries is None else entries
    grouped = _grouped(((e.name, e.nbytes) for e in chosen), keys, max(map(len, keys)))
    if len(grouped) < 2:
        return None
    return CheckpointBranches(_classified(grouped))


def _grouped(entries: Iterable[tuple[str, int]], keys: frozenset[str],
             longest: int) -> dict[str, list[tuple[str, int]]]:
    """Tensor names (within their branch) and sizes by the top-level key they sit under, in the file's order;
    tensors at the top level itself belong to no branch."""
    grouped: dict[str, list[tuple[str, int]]] = {}
    for name, nbytes in entries:
        key = _branch_of(name, keys, longest)
        if key is not None:
            grouped.setdefault(key, []).append((name[len(key) + 1:], nbytes))
    return grouped


def _branch_of(name: str, keys: frozenset[str], longest: int) -> str | None:
    """The top-level key whose branch ``name`` is in: the longest that names it, as a key may hold dots
    (``model.ema`` beside ``model``)."""
    found = None
    end = name.find(".")
    for _ in range(MAX_PREFIXES):
        if end < 0 or end > longest:
            break
        if name[:end] in keys:
            found = name[:end]
        end = name.find(".", end + 1)
    return found


def _classified(grouped: dict[str, list[tuple[str, int]]]) -> tuple[Branch, ...]:
    """Optimizer state by its shape; the model weights, the largest branch left that is neither callbacks nor
    named for an EMA; an EMA, a branch named so whose tensors mostly carry the weights' names."""
    optimizers = {key for key, names in grouped.items() if all(_optimizer_leaf(name) for name, _ in names)}
    rest = [key for key in grouped if key not in optimizers]
    plain = [key for key in rest if key != CALLBACKS_KEY and not _names_ema(key)] or rest
    weights = max(plain, key=lambda key: len(grouped[key]), default=None)
    weight_names = frozenset(name for name, _ in grouped[weights]) if weights is not None else frozenset()

    def kind(key: str) -> str:
        if key in optimizers:
            return OPTIMIZER_STATE
        if key == weights:
            return MODEL_WEIGHTS
        if weight_names and _mirrors(key, grouped[key], weight_names):
            return EMA
        return CALLBACKS if key == CALLBACKS_KEY else OTHER

    return tuple(Branch(key, kind(key), len(names), sum(nbytes for _, nbytes in names),
                        _leaves(names) if key in optimizers else ()) for key, names in grouped.items())


def _optimizer_leaf(name: str) -> bool:
    """``state.0.exp_avg``, ``0.state.12.momentum_buffer``: one tensor of an optimizer's per-parameter state."""
    parts = name.rsplit(".", 3)
    return len(parts) >= 3 and parts[-3] == STATE and parts[-2].isascii() and parts[-2].isdigit()


def _leaves(names: list[tuple[str, int]]) -> tuple[str, ...]:
    """The distinct per-parameter names of an optimizer state (``exp_avg``, ``exp_avg_sq``, ``step``), a few."""
    found = dict.fromkeys(name.rsplit(".", 1)[-1] for name, _ in names)
    return tuple(list(found)[:SHOWN_LEAVES])


def _names_ema(text: str) -> bool:
    """``ema``, ``model_ema``, ``EMACallback``, ``shadow_params``: a name that says it is a moving average."""
    return not _EMA_WORDS.isdisjoint(word.lower() for word in _WORDS.findall(text))


def _mirrors(key: str, names: list[tuple[str, int]], weight_names: frozenset[str]) -> bool:
    """Most of the branch's tensors are the weights' names under a prefix that names an EMA."""
    longest = max(map(len, weight_names))
    copies = sum(1 for name, _ in names if _ema_copy(f"{key}.{name}", weight_names, longest))
    return copies * 2 > len(names)


def _ema_copy(name: str, weight_names: frozenset[str], longest: int) -> bool:
    """``callbacks.EMA.ema_weights.fc.weight`` beside ``fc.weight``: a weight's name after a prefix naming an EMA."""
    dot = name.find(".", max(0, len(name) - longest - 1))
    for _ in range(MAX_PREFIXES):
        if dot < 0:
            return False
        if name[dot + 1:] in weight_names:
            return _names_ema(name[:dot])
        dot = name.find(".", dot + 1)
    return False
