"""PEFT LoRA adapters merged into a base model's weights, one tensor at a time, as PEFT's ``merge_and_unload`` does.

The rules are PEFT's own (peft 0.21.2, ``peft/tuners/lora/...``; line numbers are that version's):

- ``scaling`` is ``lora_alpha / r``, or ``lora_alpha / sqrt(r)`` with ``use_rslora`` (``layer.py:278-281``,
  ``LoraLayer.update_layer``); ``r`` and ``lora_alpha`` of a module come from ``rank_pattern`` / ``alpha_pattern``
  when a key matches its path (``model.py:309-312``), matched by ``utils/other.py:1524-1532`` ``get_pattern_key``:
  the first key (in the config's order) for which ``re.match(rf"(.*\\.)?({key})$", path)`` succeeds, the path being
  the module's name in the base model (no ``base_model.model.`` prefix).
- A scale ``S`` per adapter is PEFT's ``set_scale`` (``layer.py:783-794``): ``scale * lora_alpha / r`` (or
  ``/ sqrt(r)``), computed in Python floats, as here.
- The update of a Linear weight is ``transpose(B @ A, fan_in_fan_out) * scaling`` (``layer.py:1044-1069``,
  ``Linear.get_delta_weight``; a half-precision adapter is widened to float32 first), added to the base weight in
  place (``layer.py:1006-1008``, ``Linear.merge``): torch adds a float32 update to a float16/bfloat16 weight in
  float32 and rounds once, which is what ``merged`` does (float64 for a float64 weight, as torch promotes it).
  Several adapters merge one after the other (``merge_and_unload(adapter_names=[...])``), the weight rounded to
  its dtype after each: so does ``merged``, hence equal values bit for bit.
- ``fan_in_fan_out`` is the config's, except that PEFT decides it by the base layer's class
  (``layer.py:2750-2764``, ``dispatch_default``: False for ``nn.Linear``, True for transformers' ``Conv1D``). A
  weights file does not say the class, so a non-square weight takes the orientation that fits it (what PEFT's
  override did); a square one takes the config's, unless another weight of the adapter fits only the other
  orientation (the adapter mixes Linear and Conv1D layers, and PEFT's saved flag is the last one it set): then the
  square one is refused, since either orientation could be PEFT's.
- A bias of the adapter's ``lora_B`` (``lora_bias: true``) adds ``lora_B.bias * scaling`` to the base's bias
  (``layer.py:1017``).
- A Conv2d adapter with a 1x1 kernel is a Linear one on ``[out, in]`` (``layer.py:1778-1783``,
  ``_ConvNd.get_delta_weight``, a matmul); any other kernel, and Conv1d/Conv3d adapters (which PEFT merges through a
  convolution, ``layer.py:1785``), are refused.
- Saved names: ``get_peft_model_state_dict`` (``utils/save_and_load.py:148-354``) saves
  ``base_model.model.<module>.lora_A.weight`` / ``lora_B.weight``, the adapter's name (``default``) taken out
  (``tuners_utils.py:1567-1582``); files written otherwise keep it (``lora_A.default.weight``) or lack the prefix,
  and both are read. DoRA's ``lora_magnitude_vector``, embedding adapters' ``lora_embedding_A``/``B``, trainable
  tokens' ``trainable_tokens_delta``, trained biases (``bias: all``/``lora_only``) and ``modules_to_save`` copies
  (saved under the module's own name) are refused by name, as are the config's LoRA variants (``layer.py:937-950``,
  ``Linear.lora_variants``) and the initialisations that change the base weights themselves (PiSSA, OLoRA, CorDA,
  LoftQ, LoRA-GA: ``layer.py:384-600``, ``619-732``), whose adapters only fit the changed base.

Target names: an adapter module ``m`` (prefix stripped) targets the base tensor ``m.weight``; if the base has none,
``m.weight`` without a leading ``model.`` or with one added (a base saved from the inner model, or from a wrapper
around it), whichever the base has.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from .errors import FormatError, RecipeError, shown
from .sources import CHUNK
from .sources.regular_files import NotRegularFile, open_regular
from .store import Store, TensorEntry

if TYPE_CHECKING:
    import numpy as np

CONFIG_NAME = "adapter_config.json"
WEIGHT_NAMES = ("adapter_model.safetensors", "adapter_model.bin")
MAX_CONFIG_BYTES = 4 << 20  # a PEFT config is a few KiB; a larger one is not read
MAX_PATTERN_CHARS = 4096  # one rank_pattern / alpha_pattern key
PREFIX = "base_model.model."
STEP_BYTES = 4 << 20  # widened bytes of one block of rows added at a time
MERGEABLE = ("F64", "F32", "F16", "BF16")

# base_model.model.<module>.lora_A[.<adapter name>].weight|bias
_LORA_KEY = re.compile(r"(?:base_model\.model\.)?(?P<module>.+)\.(?P<part>lora_A|lora_B)"
                       r"(?:\.(?P<adapter>[^.]+))?\.(?P<leaf>weight|bias)", re.DOTALL)

# config fields that switch on a LoRA variant PEFT merges otherwise (or not at all), by name
_VARIANTS = {"use_dora": "DoRA", "use_qalora": "QALoRA", "use_bdlora": "block-diagonal LoRA",
             "arrow_config": "Arrow routing", "velora_config": "VeLoRA", "monteclora_config": "MonteCLoRA",
             "kasa_config": "KaSA", "alora_invocation_tokens": "activated LoRA (aLoRA)",
             "target_parameters": "LoRA on nn.Parameter targets (target_parameters)",
             "layer_replication": "layer replication", "trainable_token_indices": "trainable tokens"}
_INITS_KEPT = ("gaussian", "eva", "orthogonal")  # change only A and B at init: merge like plain LoRA
_INITS_CHANGING_BASE = {"pissa": "PiSSA", "olora": "OLoRA", "corda": "CorDA", "loftq": "LoftQ", "lora_ga": "LoRA-GA"}


class AdapterFormatError(FormatError):
    """A ``FormatError`` whose message names the adapter's folder and file (``my-lora/adapter_config.json: ...``):
    two adapters' files have the same names."""

    def __init__(self, path: str | os.PathLike, problem: str):
        super().__init__(path, problem)
        self.args = (f"{_where(path)}: {problem}",)


def _where(path: str | os.PathLike) -> str:
    path = Path(path)
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


@dataclass(frozen=True)
class Module:
    """One adapted module: ``path`` as in the base model, its tensors' names in the adapter file, its rank,
    alpha and PEFT's scaling for it."""

    path: str
    a: str
    b: str
    rank: int
    alpha: float
    scaling: float
    bias: str | None = None  # lora_B's bias (lora_bias: true)


@dataclass
class Adapter:
    """A PEFT LoRA adapter as saved: its weights (an open store), config and modules."""

    path: Path  # the weights file
    config_path: Path
    store: Store
    modules: list[Module]
    fan_in_fan_out: bool
    use_rslora: bool
    rank_pattern: dict[str, int] = field(default_factory=dict)
    alpha_pattern: dict[str, float] = field(default_factory=dict)
    r: int = 8
    lora_alpha: float = 8

    @property
    def label(self) -> str:
        return _where(self.path)

    def factor(self, module: Module, scale: float) -> float:
        """``S * scaling`` as PEFT's ``set_scale`` computes it (layer.py:791-794)."""
        if scale == 1.0:
            return module.scaling
        root = math.sqrt(module.rank) if self.use_rslora else module.rank
        return scale * module.alpha / root

    def close(self) -> None:
        self.store.close()


@dataclass(frozen=True)
class Update:
    """One adapter's update of one base tensor."""

    adapter: Adapter
    module: Module
    factor: float  # S * scaling
    transposed: bool  # the update is (B @ A).T (fan_in_fan_out)
    bias: bool = False  # the update is lora_B.bias * factor, of the module's bias


@dataclass(frozen=True)
class MergedAdapter:
    """What ``merged`` did with one adapter: ``tensors`` maps each base tensor it changed to the adapter module."""

    path: str
    scale: float
    tensors: dict[str, str]


# --- reading an adapter -------------------------------------------------------------------------------------------
def adapter_name(path: str | os.PathLike) -> str:
    """An adapter as messages and the window name it: its folder, or the folder of its adapter_model file."""
    where = Path(path)
    return where.parent.name if where.name.startswith("adapter_model.") else where.name


def read_adapter(where: str | os.PathLike) -> Adapter:
    """A PEFT LoRA adapter: a folder holding ``adapter_config.json`` and ``adapter_model.safetensors`` (or
    ``adapter_model.bin``), or that weights file with its config beside it. What this module cannot merge is
    refused here, by name."""
    from .formats import open_store
    where = Path(where)
    if where.is_dir():
        config_path = where / CONFIG_NAME
        weights = next((where / n for n in WEIGHT_NAMES if (where / n).is_file()), None)
        if weights is None:
            raise AdapterFormatError(where / WEIGHT_NAMES[0], f"no {' or '.join(WEIGHT_NAMES)} in this folder: "
                                                              "not a saved PEFT adapter")
    elif where.is_file():
        weights, config_path = where, where.parent / CONFIG_NAME
    else:
        raise AdapterFormatError(where, "no such file or folder")
    config = _read_config(config_path)
    store = open_store(weights)
    try:
        adapter = _adapter(weights, config_path, config, store)
    except BaseException:
        store.close()
        raise
    return adapter


def _read_config(path: Path) -> dict[str, Any]:
    try:
        fd, info = open_regular(path)  # a FIFO or a device would never end a read
        with os.fdopen(fd, "rb") as file:
            if info.st_size > MAX_CONFIG_BYTES:
                raise AdapterFormatError(path, f"is {info.st_size} bytes, over the limit of {MAX_CONFIG_BYTES} for a "
                                               "PEFT config")
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except NotRegularFile as exc:
        raise AdapterFormatError(path, f"is a {exc.kind}, not a file") from None
    except FileNotFoundError:
        raise AdapterFormatError(path, "missing: a PEFT adapter is saved with its adapter_config.json") from None
    except OSError as exc:
        raise AdapterFormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise AdapterFormatError(path, f"is over the limit of {MAX_CONFIG_BYTES} bytes for a PEFT config")

    def refuse_constant(name: str) -> None:
        raise ValueError(f"{name} is not JSON")
    try:
        config = json.loads(raw.decode("utf-8"), parse_constant=refuse_constant)
    except UnicodeDecodeError:
        raise AdapterFormatError(path, "is not UTF-8 text") from None
    except RecursionError:
        raise AdapterFormatError(path, "nests too deeply to be a PEFT config") from None
    except ValueError as exc:
        raise AdapterFormatError(path, f"is not JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(config, dict):
        raise AdapterFormatError(path, f"holds {type(config).__name__}, not a JSON object")
    return config


def _field(path: Path, config: dict, name: str, kinds: tuple[type, ...], default: Any, what: str) -> Any:
    value = config.get(name, default)
    if value is None and None in kinds:
        return default
    ok = isinstance(value, tuple(k for k in kinds if k is not None)) and not (
        isinstance(value, bool) and bool not in kinds)
    if ok and isinstance(value, float) and not math.isfinite(value):
        ok = False
    if not ok:
        raise AdapterFormatError(path, f"field {name!r} must be {what}, not {shown(value)}")
    return value


def _number(path: Path, name: str, value: Any, *, integer: bool) -> Any:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or (isinstance(value, float) and not math.isfinite(value)) \
            or (integer and value <= 0) or abs(value) > 1 << 53:
        what = "a positive integer" if integer else "a finite number"
        raise AdapterFormatError(path, f"{name} must be {what}, not {shown(value)}")
    return value


def _patterns(path: Path, config: dict, name: str, *, integer: bool) -> dict[str, Any]:
    patterns = _field(path, config, name, (dict, None), {}, "an object of module patterns")
    for key, value in patterns.items():
        if len(key) > MAX_PATTERN_CHARS:
            raise AdapterFormatError(path, f"field {name!r} has a key of {len(key)} characters, over the limit of "
                                           f"{MAX_PATTERN_CHARS}")
        _number(path, f"field {name!r}[{shown(key)}]", value, integer=integer)
    return patterns


def _adapter(weights: Path, config_path: Path, config: dict, store: Store) -> Adapter:
    peft_type = config.get("peft_type")
    if peft_type != "LORA":
        if isinstance(peft_type, str):
            raise AdapterFormatError(config_path, f"is a PEFT {shown(peft_type)} adapter: only LORA adapters are merged")
        raise AdapterFormatError(config_path, f"field 'peft_type' must be \"LORA\", not {shown(peft_type)}")
    for name, what in _VARIANTS.items():
        value = config.get(name)
        if value not in (None, False, [], {}):
            raise AdapterFormatError(config_path, f"sets {name} ({what}), which this merge does not do")
    init = config.get("init_lora_weights", True)
    if isinstance(init, str):
        base_changing = next((label for key, label in _INITS_CHANGING_BASE.items() if init.lower().startswith(key)),
                             None)
        if base_changing:
            raise AdapterFormatError(config_path, f"init_lora_weights {shown(init)}: a {base_changing} adapter fits the "
                                                  f"base as {base_changing} changed it, not the saved base (convert it "
                                                  "with PEFT's path_initial_model_for_weight_conversion first)")
        if init.lower() not in _INITS_KEPT:
            raise AdapterFormatError(config_path, f"init_lora_weights {shown(init)} is not an initialisation this "
                                                  "merge knows (plain LoRA, gaussian, eva or orthogonal)")
    elif not isinstance(init, bool):
        raise AdapterFormatError(config_path, f"field 'init_lora_weights' must be true, false or a name, not {shown(init)}")
    r = _number(config_path, "field 'r'", config.get("r", 8), integer=True)
    alpha = _number(config_path, "field 'lora_alpha'", config.get("lora_alpha", 8), integer=False)
    use_rslora = _field(config_path, config, "use_rslora", (bool, None), False, "true or false")
    fan_in_fan_out = _field(config_path, config, "fan_in_fan_out", (bool, None), False, "true or false")
    lora_bias = _field(config_path, config, "lora_bias", (bool, None), False, "true or false")
    bias = _field(config_path, config, "bias", (str, None), "none", "\"none\", \"all\" or \"lora_only\"")
    rank_pattern = _patterns(config_path, config, "rank_pattern", integer=True)
    alpha_pattern = _patterns(config_path, config, "alpha_pattern", integer=False)

    pairs: dict[str, dict[str, str]] = {}
    names: set[str | None] = set()
    for entry in store.entries:
        name = entry.name
        match = _LORA_KEY.fullmatch(name)
        if "lora_magnitude_vector" in name:
            raise AdapterFormatError(weights, f"tensor {name!r} is DoRA's magnitude vector: DoRA adapters are not merged")
        if ".lora_embedding_A" in name or ".lora_embedding_B" in name:
            raise AdapterFormatError(weights, f"tensor {name!r} belongs to an embedding adapter (lora_embedding_A/B): "
                                              "embedding adapters are not merged")
        if "trainable_tokens_" in name:
            raise AdapterFormatError(weights, f"tensor {name!r} holds trainable tokens: not merged")
        if match and match["leaf"] == "bias":
            if match["part"] == "lora_A" or not lora_bias:
                raise AdapterFormatError(weights, f"tensor {name!r} is a {match['part']} bias, which PEFT saves only "
                                                  f"for lora_B with lora_bias true ({CONFIG_NAME} says "
                                                  f"{'true' if lora_bias else 'false'}): not merged")
            pairs.setdefault(match["module"], {})["bias"] = name
            names.add(match["adapter"])
            continue
        if match and match["leaf"] == "weight":
            module = pairs.setdefault(match["module"], {})
            if match["part"] in module:
                raise AdapterFormatError(weights, f"holds two {match['part']} tensors for module "
                                                  f"{match['module']!r} ({module[match['part']]!r} and {name!r})")
            module[match["part"]] = name
            names.add(match["adapter"])
            continue
        if name.endswith(".bias") and bias != "none":
            raise AdapterFormatError(weights, f"tensor {name!r} is a bias trained with the adapter (bias "
                                              f"{shown(bias)}) that would have to be copied over the base's: not merged")
        raise AdapterFormatError(weights, f"tensor {name!r} is a whole tensor (PEFT's modules_to_save) that would have "
                                          "to be copied over the base's: not merged")
    if len(names) > 1:
        shown_names = ", ".join(sorted("(none)" if n is None else n for n in names))
        raise AdapterFormatError(weights, f"holds more than one adapter ({shown_names}): save each on its own")
    modules = []
    for path, parts in pairs.items():
        for part in ("lora_A", "lora_B"):
            if part not in parts:
                other = parts.get("lora_B" if part == "lora_A" else "lora_A") or parts["bias"]
                raise AdapterFormatError(weights, f"tensor {other!r} has no {part} beside it")
        modules.append(_module(weights, config_path, store, path, parts, r, alpha, rank_pattern, alpha_pattern,
                               use_rslora))
    if not modules:
        raise AdapterFormatError(weights, "holds no lora_A/lora_B tensors: nothing to merge")
    return Adapter(weights, config_path, store, modules, fan_in_fan_out, use_rslora, rank_pattern, alpha_pattern,
                   r, alpha)


def _module(weights: Path, config_path: Path, store: Store, path: str, parts: dict[str, str], r: int, alpha: float,
            rank_pattern: dict, alpha_pattern: dict, use_rslora: bool) -> Module:
    a, b = store.entry(parts["lora_A"]), store.entry(parts["lora_B"])
    for entry in (a, b):
        if entry.dtype.name not in MERGEABLE:
            raise AdapterFormatError(weights, f"tensor {entry.name!r} is {entry.dtype}: LoRA factors are merged from "
                                              f"{', '.join(MERGEABLE)}")
    if len(a.shape) < 2 or len(a.shape) != len(b.shape):
        raise AdapterFormatError(weights, f"tensors {a.name!r} {list(a.shape)} and {b.name!r} {list(b.shape)} are not "
                                          "a LoRA pair (2-D, or Conv kernels of one rank)")
    if len(a.shape) in (3, 5) or len(a.shape) > 5:
        kind = {3: "Conv1d", 5: "Conv3d"}.get(len(a.shape), f"{len(a.shape)}-D")
        raise AdapterFormatError(weights, f"tensor {a.name!r} is a {kind} adapter: only Linear and 1x1 Conv2d adapters "
                                          "are merged")
    if len(a.shape) > 2 and (any(d != 1 for d in a.shape[2:]) or any(d != 1 for d in b.shape[2:])):
        kernel = "x".join(map(str, a.shape[2:]))
        raise AdapterFormatError(weights, f"tensor {a.name!r} is a Conv adapter with a {kernel} kernel, not 1x1: only "
                                          "Linear-like (1x1) Conv adapters are merged")
    rank = a.shape[0]
    if b.shape[1] != rank:
        raise AdapterFormatError(weights, f"tensors {a.name!r} {list(a.shape)} and {b.name!r} {list(b.shape)} do not "
                                          f"pair: lora_A has rank {rank}, lora_B {b.shape[1]}")
    r_key, alpha_key = _pattern_key(config_path, rank_pattern, path), _pattern_key(config_path, alpha_pattern, path)
    r = rank_pattern.get(r_key, r)
    alpha = alpha_pattern.get(alpha_key, alpha)
    if rank != r:
        raise AdapterFormatError(weights, f"tensor {a.name!r} has rank {rank} but {CONFIG_NAME} gives r={r} for "
                                          f"{path!r} (PEFT would refuse to load it)")
    if "bias" in parts:
        bias = store.entry(parts["bias"])
        if bias.dtype.name not in MERGEABLE or tuple(bias.shape) != (b.shape[0],):
            raise AdapterFormatError(weights, f"tensor {bias.name!r} ({bias.dtype} {list(bias.shape)}) is not "
                                              f"lora_B's bias of {b.shape[0]} values")
    scaling = alpha / math.sqrt(r) if use_rslora else alpha / r
    return Module(path, a.name, b.name, rank, alpha, scaling, parts.get("bias"))


def _pattern_key(config_path: Path, patterns: dict, path: str) -> str:
    """``get_pattern_key`` (peft/utils/other.py:1524-1532), matched by RE2 in linear time: the patterns are the
    adapter's (hostile input), and Python's ``re`` can run for ever on one."""
    import re2
    options = re2.Options()
    options.max_mem = 1 << 20
    options.log_errors = False  # the refusal is our one line, not also RE2's log line on stderr
    for key in patterns:
        try:
            compiled = re2.compile(rf"(.*\.)?({key})$", options)
        except re2.error as exc:
            reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            raise AdapterFormatError(config_path, f"pattern {shown(key)} cannot be matched ({reason[:80]})") from None
        if compiled.match(path):
            return key
    return path


# --- merging ------------------------------------------------------------------------------------------------------
def with_adapters(base: Store, adapters: Sequence[tuple[str | os.PathLike, float]], own_base: bool = True) -> Store:
    """``base`` with the adapters at these paths merged in order (``base`` itself when there are none); the merged
    store owns the adapters, and ``base`` too unless ``own_base`` is false (a window's tab keeps its file open).
    On a refusal everything opened here is closed again, an owned ``base`` included."""
    if not adapters:
        return base
    opened: list[tuple[Adapter, float]] = []
    try:
        for path, scale in adapters:
            opened.append((read_adapter(path), scale))
        return merged(base, opened, own_base)
    except BaseException:
        for adapter, _ in opened:
            adapter.close()
        if own_base:
            base.close()
        raise


def merged(base: Store, adapters: Sequence[tuple[Adapter, float]], own_base: bool = True) -> LoraMergedStore:
    """``base`` with each adapter merged, in order, each with its scale ``S``: a store listing the base's tensors,
    each targeted weight reading as ``W + S * scaling * (B @ A)`` (computed when read), the others as they are.

    The store takes over the adapters and (``own_base``) ``base``: closing it closes them. A target the base lacks,
    or an update whose shape does not fit its weight, is a one-line ``RecipeError`` naming the adapter tensor and
    the base's."""
    return LoraMergedStore(base, list(adapters), own_base)


class LoraMergedStore(Store):
    """A base store with LoRA adapters merged in. ``lora`` lists, per adapter, what it changed."""

    def __init__(self, base: Store, adapters: list[tuple[Adapter, float]], own_base: bool = True):
        self.base, self._own_base = base, own_base
        self.adapters = adapters
        self.format = base.format
        self.note = base.note
        self.has_values = base.has_values
        updates: dict[str, list[Update]] = {}
        self.lora: list[MergedAdapter] = []
        for adapter, scale in adapters:
            if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
                raise RecipeError(f"{adapter.label}: scale must be a finite number, not {shown(scale)}")
            changed: dict[str, str] = {}
            fitting = [(module, *_target(base, adapter, module)) for module in adapter.modules]
            # a non-square weight fitting only against the config's fan_in_fan_out shows PEFT set it by layer class
            mixed = any(fits == {not adapter.fan_in_fan_out} for _, _, fits in fitting)
            for module, target, fits in fitting:
                if len(fits) == 1:
                    transposed = next(iter(fits))
                elif not mixed:
                    transposed = adapter.fan_in_fan_out
                else:
                    raise RecipeError(f"{adapter.label}: {module.a!r} updates the square {target!r}, which may be a "
                                      "Linear or a Conv1D: this adapter has both (PEFT chose fan_in_fan_out by the "
                                      "layer's class, which a weights file does not record), so it cannot be merged")
                factor = adapter.factor(module, float(scale))
                updates.setdefault(target, []).append(Update(adapter, module, factor, transposed))
                changed[target] = module.path
                if module.bias is not None:
                    bias = _bias_target(base, adapter, module, target)
                    updates.setdefault(bias, []).append(Update(adapter, module, factor, False, bias=True))
                    changed[bias] = module.path
            self.lora.append(MergedAdapter(str(adapter.path), float(scale), changed))
        self._updates = updates
        self._base_entries = {e.name: e for e in base.entries if e.name in updates}
        entries = [replace(e, store=None, offset=None) if e.name in updates else replace(e, store=None)
                   for e in base.entries]
        super().__init__(base.path, entries, metadata=base.metadata, version=base.version, scalars=base.scalars,
                         values=base.values, files=list(base.files) + [a.path for a, _ in adapters], names_checked=True)
        self._base_of = {e.name: b for e, b in zip(self.entries, base.entries)}

    @property
    def merges(self) -> dict[str, list[Any]]:
        """Each changed tensor's merges as plan operations (``surgery.ops.MergedLora``), in the order applied."""
        from .surgery.ops import MergedLora
        out: dict[str, list[Any]] = {}
        for merged_adapter in self.lora:
            name = adapter_name(merged_adapter.path)
            for tensor in merged_adapter.tensors:
                out.setdefault(tensor, []).append(MergedLora(name, merged_adapter.scale))
        return out

    @property
    def merged_names(self) -> list[str]:
        """The base tensors whose values the adapters change, in file order."""
        return [e.name for e in self.entries if e.name in self._updates]

    # --- data ---------------------------------------------------------------------------------------------------
    def read_entry(self, entry: TensorEntry) -> np.ndarray:
        self._check_open()
        if entry.name in self._updates:
            return self._merged(entry.name)
        return self._base_of[entry.name].read()

    def _read(self, entry: TensorEntry) -> np.ndarray:
        return self.read_entry(entry)

    def byte_range(self, name: str) -> tuple[int, int, int] | None:
        return self.entry_byte_range(self.entry(name))

    def iter_bytes(self, name: str, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        return self.entry_iter_bytes(self.entry(name), chunk_size)

    def verify(self, name: str) -> None:
        self.entry_verify(self.entry(name))

    def release(self, name: str) -> None:
        self.entry_release(self.entry(name))

    def entry_byte_range(self, entry: TensorEntry) -> tuple[int, int, int] | None:
        self._check_open()
        return None if entry.name in self._updates else self._base_of[entry.name].byte_range()

    def entry_iter_bytes(self, entry: TensorEntry, chunk_size: int = CHUNK) -> Iterator[bytes | memoryview]:
        self._check_open()
        if entry.name not in self._updates:
            return self._base_of[entry.name].iter_bytes(chunk_size)
        return _chunks(self._merged(entry.name), chunk_size)

    def entry_verify(self, entry: TensorEntry) -> None:
        self._check_open()
        self._base_of[entry.name].verify()

    def entry_release(self, entry: TensorEntry) -> None:
        self._base_of[entry.name].release()

    def _merged(self, name: str) -> np.ndarray:
        """The base tensor with its updates added: read a block of rows at a time into the result (one copy in the
        base's dtype); each adapter's full update (float32) made, added and freed in turn."""
        import numpy as np

        from .values.chunked import values_of
        source = self._base_entries[name]
        shape = tuple(source.shape)
        rows = shape[0]
        cols = math.prod(shape[1:])
        wide = np.dtype(np.float64) if source.dtype.name == "F64" else np.dtype(np.float32)
        step = max(1, STEP_BYTES // (wide.itemsize * max(cols, 1)))
        out = np.empty((rows, cols), source.dtype.numpy)
        read = values_of(source).reader(step * cols)
        updates = self._updates[name]
        for first, update in enumerate(updates):
            delta = _delta(update, (rows, cols))
            for start in range(0, rows, step):
                stop = min(rows, start + step)
                current = read(start * cols, stop * cols).reshape(stop - start, cols) if first == 0 else out[start:stop]
                block = current.astype(wide)
                block += delta[start:stop]
                out[start:stop] = block  # rounded to the weight's dtype (round to nearest even, as torch)
            del delta
        return out.reshape(shape)

    def close(self) -> None:
        if not self.closed:
            if self._own_base:
                self.base.close()
            for adapter, _ in self.adapters:
                adapter.close()
        super().close()


def _chunks(array: np.ndarray, chunk_size: int) -> Iterator[memoryview]:
    import numpy as np
    view = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")
    for start in range(0, len(view), chunk_size):
        yield view[start:start + chunk_size]


def _factor_matrix(adapter: Adapter, name: str) -> np.ndarray:
    import numpy as np
    array = adapter.store.read(name)
    return np.asarray(array, dtype=np.float32).reshape(array.shape[0], -1)


def _delta(update: Update, shape: tuple[int, int]) -> np.ndarray:
    """The update as PEFT computes it (layer.py:1067): ``transpose(B @ A) * scaling`` in float32, as
    ``[rows, cols]`` of the target."""
    import numpy as np
    adapter, module = update.adapter, update.module
    if update.bias:
        bias = np.asarray(adapter.store.read(module.bias), dtype=np.float32)
        return (bias * np.float32(update.factor)).reshape(shape)
    product = _factor_matrix(adapter, module.b) @ _factor_matrix(adapter, module.a)
    product *= np.float32(update.factor)
    return (product.T if update.transposed else product).reshape(shape)


def _target(base: Store, adapter: Adapter, module: Module) -> tuple[str, set[bool]]:
    """The base tensor an adapter module updates, and the orientations of its update that fit it (True: transposed,
    fan_in_fan_out). PEFT decides the orientation by the layer's class (layer.py:2750-2764, ``dispatch_default``:
    ``nn.Linear`` False, ``Conv1D`` True); a 1x1 Conv is never transposed."""
    names = [module.path + ".weight"]
    names.append(module.path[len("model."):] + ".weight" if module.path.startswith("model.")
                 else "model." + module.path + ".weight")
    target = next((n for n in names if n in base), None)
    a_name = module.a
    if target is None:
        if module.path + ".in_proj_weight" in base:
            raise RecipeError(f"{adapter.label}: {a_name!r} adapts a MultiheadAttention ({module.path!r}): not merged")
        raise RecipeError(f"{adapter.label}: {a_name!r} targets {names[0]!r}, which {base.path.name} does not have")
    entry = base.entry(target)
    a, b = adapter.store.entry(module.a), adapter.store.entry(module.b)
    out, inn = b.shape[0], math.prod(a.shape[1:])
    shape = tuple(entry.shape)
    if entry.dtype.name not in MERGEABLE:
        raise RecipeError(f"{adapter.label}: {a_name!r} targets {target!r} of {base.path.name}, which is {entry.dtype}: "
                          f"merges are made into {', '.join(MERGEABLE)} weights")
    if len(a.shape) > 2:
        fits = {False} if shape == (out, inn) + (1,) * (len(a.shape) - 2) else set()
    else:
        fits = {t for t, s in ((False, (out, inn)), (True, (inn, out))) if shape == s}
    if not fits:
        update = [out, inn] + [1] * (len(a.shape) - 2)
        raise RecipeError(f"{adapter.label}: {module.b!r} @ lora_A gives a {update} update, which does not fit "
                          f"{target!r} {list(shape)} of {base.path.name}")
    return target, fits


def _bias_target(base: Store, adapter: Adapter, module: Module, weight: str) -> str:
    name = weight[:-len("weight")] + "bias"
    if name not in base:
        raise RecipeError(f"{adapter.label}: {module.bias!r} targets {name!r}, which {base.path.name} does not have")
    entry = base.entry(name)
    b = adapter.store.entry(module.b)
    if entry.dtype.name not in MERGEABLE or tuple(entry.shape) != (b.shape[0],):
        raise RecipeError(f"{adapter.label}: {module.bias!r} [{b.shape[0]}] does not fit {name!r} "
                          f"{entry.dtype} {list(entry.shape)} of {base.path.name}")
    return name
