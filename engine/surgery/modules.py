"""What kind of layer each module path holds, from tensor shapes and siblings first, names last.

A weights file carries no module types, yet PyTorch-to-Burn conversion depends on them (a 2-D
Linear weight is transposed, a 2-D Embedding weight is not; norm weights become gamma, a PReLU
weight alpha). Evidence decides where there is some: running stats make a BatchNorm, a bias
beside a 2-D weight makes a Linear (an Embedding has none), a bias beside a 1-D weight a norm.
Where only the name is left to go by, the kind is marked ``guessed``: the plan reports every
tensor such a guess changes, and the user settles it by overriding the module path's kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress, count, repeat
from operator import itemgetter, ne
from typing import Iterable, Iterator, Mapping, Protocol, Sequence

from ..errors import RecipeError
from ..tree import is_index

ENUM_VARIANT = "EnumVariant"  # an override kind only: the path's last segment is a Burn enum variant, not a module
KINDS = ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose", "Embedding",
         "BatchNorm", "LayerNorm", "GroupNorm", "RmsNorm", "PRelu", ENUM_VARIANT, "Unknown")
NORM_KINDS = frozenset({"BatchNorm", "LayerNorm", "GroupNorm", "RmsNorm"})
_ALIASES = {kind.lower(): kind for kind in KINDS} | {"prelu": "PRelu"}

_EMBEDDING_NAME = re.compile(r"embed|(^|_)(emb|wte|wpe|tok_embeddings|shared|lookup)(_|$|\d)", re.I)
_TRANSPOSED_NAME = re.compile(r"deconv|conv_?transpose|transposed?_?conv|(^|_)up(conv|sample|_|\d|$)", re.I)
_GROUP_NAME = re.compile(r"group|(^|_)gn(_|\d|$)", re.I)
_RMS_NAME = re.compile(r"rms", re.I)
_BATCH_NAME = re.compile(r"batch|(^|_)bn(_|\d|$)", re.I)
_LAYER_NAME = re.compile(r"layer_?norm|(^|_)ln(_|\d|$)", re.I)
_NORM_NAME = re.compile(r"norm", re.I)
_PRELU_NAME = re.compile(r"prelu|(^|_)(act|activation)(_|\d|$)", re.I)


class ShapedTensor(Protocol):
    name: str
    shape: Sequence[int]


@dataclass(frozen=True)
class ModuleGuess:
    """One module path's kind and the evidence for it.

    ``overridden`` when the user set it; ``guessed`` when only the name spoke for it, and then
    ``alternatives`` are the kinds it could as well be (what the user chooses among to settle it).
    """

    path: str
    kind: str
    reason: str
    overridden: bool = False
    guessed: bool = False
    alternatives: tuple[str, ...] = ()

    def at(self, path: str) -> "ModuleGuess":
        """The same guess for module ``path``: copied field for field, as fast as a dict (hot: a module each)."""
        guess = object.__new__(ModuleGuess)
        guess.__dict__.update(self.__dict__)
        guess.__dict__["path"] = path
        return guess


def module_path(name: str) -> str:
    """A tensor's module: its name minus the last dotted segment ('' for a top-level tensor)."""
    return name.rpartition(".")[0]


def logical_leaf(name: str) -> tuple[str, str]:
    """``(module, leaf)`` with weight-norm parametrizations folded back onto their module.

    ``m.parametrizations.weight.original0`` is ``m``'s ``weight_g``, ``original1`` its ``weight_v``:
    the module is ``m`` (a Linear or Conv), not ``m.parametrizations.weight``.
    """
    module, _, leaf = name.rpartition(".")
    return _folded(module, leaf)


def _folded(module: str, leaf: str) -> tuple[str, str]:
    """``logical_leaf`` of a name already split at its last dot."""
    if module.endswith("parametrizations.weight") and leaf in ("original0", "original1"):
        owner = module[:-len("parametrizations.weight")].rstrip(".")
        return owner, "weight_g" if leaf == "original0" else "weight_v"
    return module, leaf


def check_kind(kind: str, path: str) -> str:
    if kind not in KINDS:
        raise RecipeError(f"module type override for {path!r}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    return kind


def parse_kind(text: str, path: str) -> str:
    """A kind as a user types it (any case, ``PReLU`` too) in its canonical spelling."""
    return check_kind(_ALIASES.get(text.strip().lower(), text), path)


def infer_modules(entries: Iterable[ShapedTensor], overrides: Mapping[str, str] | None = None) -> dict[str, ModuleGuess]:
    """Every module path of ``entries`` with its guessed kind, in order of first appearance.

    ``overrides`` (path -> kind) win over guesses; paths the entries do not hold are ignored.
    """
    entries = list(entries)
    return infer_columns([e.name for e in entries], [tuple(e.shape) for e in entries], overrides)


SEPARATORS = ("\n", "\0", "\x1f")  # what joins the names for ModuleFinder: the first no name holds


class ModuleFinder:
    """One module's guess at a time among many tensors: ``infer_modules(entries).get(path)``, without guessing
    every other module (a second for 100,000 tensors) when a view shows one selection.

    A module's guess depends only on its own tensors. They are found by one regex over every name joined
    by a separator, a C scan of a few ms, instead of a Python step per tensor.
    """

    def __init__(self, entries: Sequence[ShapedTensor]) -> None:
        self._entries = entries
        self._joined: tuple[str, str] | None = None  # (separator, names joined and framed by it), made on first use
        self._guesses: dict[str, ModuleGuess | None] = {}  # those asked for: a view asks again for its selection

    def guess(self, path: str) -> ModuleGuess | None:
        if path not in self._guesses:
            own = [self._entries[row] for row in self._rows_of(path)
                   if logical_leaf(self._entries[row].name)[0] == path]
            self._guesses[path] = infer_modules(own).get(path) if own else None
        return self._guesses[path]

    def _rows_of(self, path: str) -> Iterable[int]:
        """Rows of the names that may belong to module ``path``: its direct tensors, and weight-norm ones.

        The pattern starts with a literal (the separator, then ``path``), which ``re`` finds with a fast scan.
        It may find more than the module's own (the caller checks each with ``logical_leaf``), never fewer.
        """
        if self._joined is None:
            self._joined = _joined([entry.name for entry in self._entries])
        sep, text = self._joined
        if not text:  # every separator occurs in some name: go through them all
            return range(len(self._entries))
        start, end = re.escape(sep + path), re.escape(sep)
        leaf = "\\.?" if not path else "\\."  # ``.fc`` is module ""'s, as ``fc`` is (``logical_leaf``)
        found = re.finditer(f"{start}(?:{leaf}[^.{end}]*|\\.*parametrizations\\.weight\\.original[01])(?={end})", text)
        return _line_numbers(text, sep, (match.start() for match in found))


def _joined(names: list[str]) -> tuple[str, str]:
    """``names`` joined by the first of SEPARATORS none of them holds, one before and after too; ``""`` if none fits."""
    for sep in SEPARATORS:
        text = f"{sep}{sep.join(names)}{sep}"
        if text.count(sep) == len(names) + 1:
            return sep, text
    return SEPARATORS[0], ""


def _line_numbers(text: str, sep: str, positions: Iterable[int]) -> Iterator[int]:
    """Which name each of ``positions`` (ascending, each at the separator before a name) starts, counting
    separators once over the whole text."""
    line, counted = 0, 0
    for position in positions:
        line += text.count(sep, counted, position)
        counted = position
        yield line


def infer_columns(names: Sequence[str], shapes: Sequence[tuple[int, ...]],
                  overrides: Mapping[str, str] | None = None) -> dict[str, ModuleGuess]:
    """``infer_modules`` over a column of names and one of shapes (tuples)."""
    paths, leaves = split_names(names)
    return guess_groups(group_columns(paths, leaves, shapes), overrides)


def split_names(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Each name's module path (``module_path``) and last segment, as two columns (at C speed: hot on every edit)."""
    split = list(map(str.rpartition, names, repeat(".")))
    return list(map(itemgetter(0), split)), list(map(itemgetter(2), split))


Siblings = tuple[tuple[str, tuple[int, ...]], ...]  # a module's (leaf, shape) pairs, in order


def group_columns(paths: Sequence[str], leaves: Sequence[str],
                  shapes: Sequence[tuple[int, ...]]) -> dict[str, Siblings]:
    """Every module path (in order of first appearance) with its tensors' leaves and shapes; weight-norm
    parametrizations folded onto their module (``logical_leaf``)."""
    modules: dict[str, dict[str, tuple[int, ...]]] = {}
    siblings_of = modules.get
    for module, leaf, shape in zip(paths, leaves, shapes):
        if leaf == "original0" or leaf == "original1":
            module, leaf = _folded(module, leaf)
        siblings = siblings_of(module)
        if siblings is None:
            modules[module] = {leaf: shape}
        else:
            siblings[leaf] = shape
    return {path: tuple(siblings.items()) for path, siblings in modules.items()}


def guess_groups(groups: Mapping[str, Siblings], overrides: Mapping[str, str] | None = None) -> dict[str, ModuleGuess]:
    """Each module's kind from its label and its tensors (``group_columns``); ``overrides`` (path -> kind) win."""
    guesses = {}
    for path, siblings in groups.items():
        if overrides and path in overrides:
            guesses[path] = ModuleGuess(path, check_kind(overrides[path], path), "set by user", True)
            continue
        guesses[path] = _guess(module_label(path), siblings).at(path)
    return guesses


def repathed(guesses: Mapping[str, ModuleGuess], groups: Sequence[Siblings], lasts: Sequence[str] | None,
             old_paths: Sequence[str], new_paths: Sequence[str],
             leaves: Sequence[str]) -> tuple[dict[str, ModuleGuess], list[str]] | None:
    """``guess_groups`` for tensors whose module paths went from ``old_paths`` to ``new_paths``, ``leaves``
    and shapes unchanged, from the earlier ``guesses`` (made without overrides), ``groups`` (each module's
    tensors, in the same order) and ``lasts`` (each module path's last segment, None if not at hand); with
    the new paths' last segments. None unless every old module became exactly one new one (a remap that
    moves whole modules, the usual edit) and no parametrization is folded (its module is not its path).

    A module keeps its tensors, so only its label can change its kind: one moved under the same label
    is the same guess at its new path, one renamed is guessed again from its tensors.
    """
    if "original0" in leaves or "original1" in leaves:
        return None
    moved = dict(zip(old_paths, new_paths))
    if moved.keys() != guesses.keys() or list(map(moved.__getitem__, old_paths)) != new_paths:
        return None  # a module split
    olds, news = list(guesses), list(map(moved.__getitem__, guesses))
    old_lasts, new_lasts = lasts if lasts is not None else _lasts(olds), _lasts(news)
    # where the label may have changed: another last segment, or an index (then the label is further back)
    labels_at = set(compress(count(), map(str.startswith, new_lasts, repeat(_INDEX_STARTS))))
    if old_lasts != new_lasts:
        labels_at.update(compress(count(), map(ne, old_lasts, new_lasts)))
    new_guesses = list(map(ModuleGuess.at, guesses.values(), news))  # one map: hot on every edit
    for i in labels_at:
        if module_label(olds[i]) != module_label(news[i]):
            new_guesses[i] = _guess(module_label(news[i]), groups[i]).at(news[i])
    repathed = dict(zip(news, new_guesses))
    return (repathed, new_lasts) if len(repathed) == len(news) else None  # else modules merged


def _lasts(paths: Sequence[str]) -> list[str]:
    """Each path's last segment."""
    return list(map(itemgetter(2), map(str.rpartition, paths, repeat("."))))


_INDEX_STARTS = (*"0123456789", "+")  # what a segment Rust's ``parse::<usize>()`` may read starts with


def module_label(path: str) -> str:
    """The segment that names a module: its last, unless that is an index (then ``_label`` walks back)."""
    last = path.rpartition(".")[2]
    return _label(path) if last.startswith(_INDEX_STARTS) else last


@lru_cache(maxsize=65536)
def _label(path: str) -> str:
    """The segment that names a module: the last that is not an index (``fc.0`` in a Sequential is ``fc``)."""
    for segment in reversed(path.split(".")):
        if not is_index(segment):
            return segment
    return ""


@lru_cache(maxsize=4096)
def _guess(label: str, leaves: tuple[tuple[str, tuple[int, ...]], ...]) -> ModuleGuess:
    """The kind for a module named ``label`` holding ``leaves`` (path left empty: the caller fills it).

    Cached: a model repeats the same few layers (same label, same shapes) thousands of times,
    and the workbench re-plans on every edit.
    """
    siblings = dict(leaves)
    if "running_mean" in siblings or "running_var" in siblings:
        return ModuleGuess("", "BatchNorm", "has running_mean/running_var")
    if "alpha" in siblings and len(siblings["alpha"]) == 1 and "weight" not in siblings:
        return ModuleGuess("", "PRelu", "Burn names a PReLU's weight alpha")
    weight = siblings.get("weight", siblings.get("weight_v", siblings.get("gamma")))
    if weight is None:
        return ModuleGuess("", "Unknown", "no weight tensor")
    ndim = len(weight)
    bias = siblings.get("bias", siblings.get("beta"))
    if "gamma" in siblings and ndim == 1:
        return ModuleGuess("", *_norm_kind(label, "beta" in siblings, "Burn names gamma/beta"))
    if ndim == 1:
        if bias is not None and bias == weight:
            return ModuleGuess("", *_norm_kind(label, True, "1-D weight"))
        return _lone_1d_weight(label)
    if ndim == 2:
        if bias is not None and len(bias) == 1 and bias[0] in weight:
            return ModuleGuess("", "Linear", f"2-D weight and a bias of {bias[0]} (an Embedding has no bias)")
        if _EMBEDDING_NAME.search(label):
            return ModuleGuess("", "Embedding", f"2-D weight without bias, and the name {label!r} says embedding",
                               guessed=True, alternatives=("Embedding", "Linear"))
        return ModuleGuess("", "Linear", f"2-D weight without bias, and the name {label!r} says nothing",
                           guessed=True, alternatives=("Linear", "Embedding"))
    if 3 <= ndim <= 5:
        if _TRANSPOSED_NAME.search(label):
            return ModuleGuess("", "ConvTranspose", f"{ndim}-D weight, and the name {label!r} says transposed")
        return ModuleGuess("", f"Conv{ndim - 2}d", f"{ndim}-D weight")
    return ModuleGuess("", "Unknown", f"{ndim}-D weight fits no known layer")


def _lone_1d_weight(label: str) -> ModuleGuess:
    """A 1-D weight with no bias or stats: an RmsNorm (Burn: gamma) and a PReLU (Burn: alpha) look alike."""
    evidence = "1-D weight without bias or running stats"
    options = ("RmsNorm", "PRelu", "Unknown")
    if _PRELU_NAME.search(label):
        return ModuleGuess("", "PRelu", f"{evidence}, and the name {label!r} says PReLU", guessed=True,
                           alternatives=("PRelu", "RmsNorm", "Unknown"))
    if _NORM_NAME.search(label) or any(p.search(label) for p in (_GROUP_NAME, _BATCH_NAME, _LAYER_NAME)):
        kind, reason = _norm_kind(label, False, evidence)
        return ModuleGuess("", kind, reason if "says" in reason else f"{evidence}, and the name {label!r} says norm",
                           guessed=True, alternatives=(kind, *(o for o in options if o != kind)))
    return ModuleGuess("", "Unknown", f"{evidence}, and the name {label!r} says nothing: kept as it is",
                       guessed=True, alternatives=options)


def _norm_kind(label: str, has_bias: bool, evidence: str) -> tuple[str, str]:
    """A 1-D affine weight: the name decides the norm; without a name hint, bias decides."""
    for pattern, kind in ((_GROUP_NAME, "GroupNorm"), (_RMS_NAME, "RmsNorm"), (_BATCH_NAME, "BatchNorm"),
                          (_LAYER_NAME, "LayerNorm")):
        if pattern.search(label):
            return kind, f"{evidence}, and the name {label!r} says {kind}"
    if has_bias:
        return "LayerNorm", f"{evidence} with a bias and no running stats"
    return "RmsNorm", f"{evidence} without bias or running stats"
