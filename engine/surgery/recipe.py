"""A recipe: everything a conversion does, as a versioned JSON document that can be saved and replayed.

``{"version": 1, "sources": [...], "filter": {...}, "remaps": [[pattern, replacement]...],
"adapters": [...], "casts": [...], "module_overrides": {...}, "top_level_key": ..., "metadata": {...},
"clear_metadata": bool, "template": path, "burn_version": "0.20"|"0.21"|"0.22",
"rotary_rows": [{"pattern": regex, "heads": [count or metadata key, ...]}...]}``. Every field is optional but ``version``; a bad document
is a RecipeError naming the field. Relative source and template paths are relative to the recipe
file's folder, so a recipe travels with the files it names.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from .. import dtypes
from ..burn_versions import NEWEST, BurnVersion, parse_burn_version
from ..errors import ExportError, RecipeError
from ..rust_regex import pattern_budget
from ..sources.locations import is_url
from ..sources.regular_files import open_regular
from .adapters import check_adapters
from .filters import Filter
from .modules import KINDS, check_kind
from .remap import RemapRule, rules_from_json

VERSION = 1
CAST_TARGETS = {"f16": "F16", "bf16": "BF16", "f32": "F32"}
_FIELDS = {"version", "sources", "filter", "remaps", "adapters", "casts", "module_overrides", "top_level_key",
           "metadata", "allow_partial", "clear_metadata", "template", "burn_version", "rotary_rows"}


@dataclass(frozen=True)
class LoraSpec:
    """A PEFT LoRA adapter (its folder or weights file) merged into a source with scale ``scale`` (engine/lora.py)."""

    path: str
    scale: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, **({"scale": self.scale} if self.scale != 1.0 else {})}


@dataclass(frozen=True)
class SourceSpec:
    """One input file; its own filter applies before the recipe's; its LoRA adapters merge into it first."""

    path: str
    top_level_key: str | None = None
    filter: Filter = Filter()
    lora: tuple[LoraSpec, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, **({"top_level_key": self.top_level_key} if self.top_level_key else {}),
                **({"filter": self.filter.to_json()} if not self.filter.is_empty else {}),
                **({"lora": [a.to_json() for a in self.lora]} if self.lora else {})}


@dataclass(frozen=True)
class CastRule:
    """Cast float tensors to ``to``: all of them, or only those in modules of the listed kinds."""

    to: str
    modules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.to not in CAST_TARGETS.values():
            raise RecipeError(f"cast: target {self.to!r} is not one of {', '.join(CAST_TARGETS.values())}")
        for kind in self.modules:
            if kind not in KINDS:
                raise RecipeError(f"cast to {self.to}: unknown module kind {kind!r}")

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.BY_NAME[self.to]

    def to_json(self) -> dict[str, Any]:
        return {"to": self.to, **({"modules": list(self.modules)} if self.modules else {})}


@dataclass(frozen=True)
class RotaryRule:
    """Undo llama.cpp's rotary row order (``ops.UnpermuteRotary``) on the tensors whose name in their file matches
    ``pattern``. ``heads`` is the head count, given as numbers or metadata keys, the first the file has winning
    (``llama.attention.head_count_kv``, then ``llama.attention.head_count``, for a k projection)."""

    pattern: str
    heads: tuple[str | int, ...]

    def __post_init__(self) -> None:
        from .filters import compile_pattern
        compile_pattern(self.pattern, "rotary_rows")  # a RecipeError naming the pattern when it does not compile
        if not self.heads or not all(isinstance(h, str) or (type(h) is int and h > 0) for h in self.heads):
            raise RecipeError(f"rotary_rows {self.pattern!r}: heads must be positive numbers or metadata keys")

    def head_count(self, metadata: dict[str, str]) -> int | None:
        """The first head count ``metadata`` gives (None when it gives none)."""
        for head in self.heads:
            value = head if isinstance(head, int) else metadata.get(head)
            if isinstance(value, int) or (isinstance(value, str) and value.isdecimal() and int(value) > 0):
                return int(value)
        return None

    def to_json(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "heads": list(self.heads)}


@dataclass(frozen=True)
class Recipe:
    sources: tuple[SourceSpec, ...] = ()
    filter: Filter = Filter()
    remaps: tuple[RemapRule, ...] = ()
    adapters: tuple[str, ...] = ()
    casts: tuple[CastRule, ...] = ()
    module_overrides: dict[str, str] = field(default_factory=dict)
    top_level_key: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    allow_partial: bool = False
    clear_metadata: bool = False  # burn-store's clear_metadata: the sources' metadata is not carried over
    template: str | None = None  # a file saved from the target model: names, shapes, module kinds, enum variants
    burn_version: BurnVersion = NEWEST  # the Burn release the output (and a printed Rust chain) must load in
    rotary_rows: tuple[RotaryRule, ...] = ()  # llama.cpp's q/k row order undone, on the files' own names

    def __post_init__(self) -> None:
        check_adapters(self.adapters)
        for path, kind in self.module_overrides.items():
            check_kind(kind, path)

    @property
    def changes_tensors(self) -> bool:
        """Whether replaying the recipe does more than copy its sources."""
        return bool(not self.filter.is_empty or self.remaps or self.adapters or self.casts or self.module_overrides
                    or self.rotary_rows or any(not s.filter.is_empty or s.lora for s in self.sources))

    def with_changes(self, **changes: Any) -> "Recipe":
        return replace(self, **changes)

    def source_spec(self, index: int) -> SourceSpec | None:
        return self.sources[index] if index < len(self.sources) else None

    # --- JSON -----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"version": VERSION}
        if self.sources:
            doc["sources"] = [s.to_json() for s in self.sources]
        if not self.filter.is_empty:
            doc["filter"] = self.filter.to_json()
        if self.remaps:
            doc["remaps"] = [r.to_json() for r in self.remaps]
        if self.adapters:
            doc["adapters"] = list(self.adapters)
        if self.casts:
            doc["casts"] = [c.to_json() for c in self.casts]
        if self.module_overrides:
            doc["module_overrides"] = dict(self.module_overrides)
        if self.top_level_key:
            doc["top_level_key"] = self.top_level_key
        if self.metadata:
            doc["metadata"] = dict(self.metadata)
        if self.allow_partial:
            doc["allow_partial"] = True
        if self.clear_metadata:
            doc["clear_metadata"] = True
        if self.template:
            doc["template"] = self.template
        if self.burn_version is not NEWEST:
            doc["burn_version"] = self.burn_version.value
        if self.rotary_rows:
            doc["rotary_rows"] = [r.to_json() for r in self.rotary_rows]
        return doc

    def canonical_json(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def digest(self) -> str:
        """A short, stable fingerprint of what the recipe does (for export metadata)."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    @classmethod
    def from_json(cls, doc: Any) -> "Recipe":
        if not isinstance(doc, dict):
            raise RecipeError("recipe: must be a JSON object")
        version = doc.get("version")
        if version is None:
            raise RecipeError("recipe: field 'version' is missing")
        if version != VERSION:
            raise RecipeError(f"recipe: field 'version' is {version!r}; this Store Studio reads version {VERSION}")
        unknown = set(doc) - _FIELDS
        if unknown:
            raise RecipeError(f"recipe: unknown field(s) {', '.join(sorted(unknown))}")
        with pattern_budget():  # a shared recipe's patterns, together, are read and compiled within a bound
            return cls(sources=tuple(_source(s, f"sources[{i}]") for i, s in enumerate(_typed(doc, "sources", list, []))),
                       filter=Filter.from_json(doc.get("filter")),
                       remaps=rules_from_json(doc.get("remaps")),
                       adapters=tuple(_strs(_typed(doc, "adapters", list, []), "adapters")),
                       casts=tuple(_cast(c, f"casts[{i}]") for i, c in enumerate(_typed(doc, "casts", list, []))),
                       module_overrides=_str_map(doc, "module_overrides"),
                       top_level_key=_typed(doc, "top_level_key", str, None),
                       metadata=_str_map(doc, "metadata"),
                       allow_partial=_typed(doc, "allow_partial", bool, False),
                       clear_metadata=_typed(doc, "clear_metadata", bool, False),
                       template=_typed(doc, "template", str, None),
                       burn_version=_burn_version(_typed(doc, "burn_version", str, NEWEST.value)),
                       rotary_rows=tuple(_rotary(r, f"rotary_rows[{i}]")
                                         for i, r in enumerate(_typed(doc, "rotary_rows", list, []))))

    def with_paths(self, convert: Callable[[str], str]) -> "Recipe":
        """The same recipe with every source and template path passed through ``convert``."""
        return replace(self, sources=tuple(replace(s, path=convert(s.path),
                                                   lora=tuple(replace(a, path=convert(a.path)) for a in s.lora))
                                           for s in self.sources),
                       template=convert(self.template) if self.template else self.template)

    def save(self, path: str | os.PathLike, *, overwrite: bool = False,
             keep: Iterable[str | os.PathLike] = ()) -> Path:
        """Write the recipe where ``check_destination`` allows, atomically as an export is written (a failure
        leaves ``path`` as it was); paths under its folder are stored relative to it, others absolute."""
        from ..exporting import atomic_file
        path = Path(path)
        self.check_destination(path, overwrite=overwrite, keep=keep)
        folder = path.parent.resolve()
        doc = self.with_paths(lambda p: _relative_to(p, folder)).to_json()
        with atomic_file(path) as out:
            out.write((json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        return path

    def check_destination(self, path: str | os.PathLike, *, overwrite: bool = False,
                          keep: Iterable[str | os.PathLike] = ()) -> None:
        """Refuse (``ExportError``) to save the recipe over a file it reads (a source, the template) or one in
        ``keep`` (the command's output, a shard, the recipe it extends), however spelled or linked; then apply
        an export's destination rules (an existing file only with ``overwrite``). Callable before anything is
        read, so that a command refuses before it touches a file."""
        from ..exporting import check_destination
        path = Path(path)
        named = [spec.path for spec in self.sources] + ([self.template] if self.template else [])
        clash = next((other for other in (*named, *keep) if not is_url(other) and _same_file(path, other)), None)
        if clash is not None:
            raise ExportError(f"{path.name}: the recipe would be saved over {os.fspath(clash)}, which this command "
                              "reads or writes; nothing was written")
        check_destination(path, overwrite)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Recipe":
        """The recipe in file ``path``, or the bundled recipe of that name (``gguf-llama-to-hf``) when no such
        file exists."""
        path = Path(path)
        if not os.path.lexists(path) and str(path) in bundled_recipes():
            path = bundled_recipes()[str(path)]
        try:
            doc = json.loads(_read_text(path))
        except OSError as exc:
            raise RecipeError(f"{path}: cannot read the recipe: {exc.strerror or exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RecipeError(f"{path.name}: not a JSON recipe: {exc}") from None
        try:
            recipe = cls.from_json(doc)
        except RecipeError as exc:
            raise RecipeError(f"{path.name}: {exc}") from None
        return recipe.with_paths(lambda p: p if is_url(p) else os.path.normpath(path.parent / p))


BUNDLED = Path(__file__).with_name("recipes")
BUNDLED_PURPOSES = {  # what each bundled recipe is for, as the window's Surgery menu says it
    "gguf-llama-to-hf": "llama.cpp's tensor names and q/k row order (a GGUF llama model) back to Hugging Face's",
}


def bundled_recipes() -> dict[str, Path]:
    """The recipes that ship with Store Studio, by name: ``--recipe NAME`` and the window's Surgery menu."""
    return {path.stem: path for path in sorted(BUNDLED.glob("*.json"))}


def _read_text(path: Path) -> str:
    """A recipe file's text; only a regular file is opened (reading a FIFO would wait for ever)."""
    fd, _ = open_regular(path)
    with open(fd, encoding="utf-8") as file:
        return file.read()


def _same_file(path: Path, other: str | os.PathLike) -> bool:
    """Whether two paths name one file: one inode when both exist (a link, another spelling), else one
    resolved path (a file about to be written)."""
    try:
        return os.path.samefile(path, other)
    except FileNotFoundError:
        return os.path.realpath(path) == os.path.realpath(other)
    except (OSError, ValueError):  # not a path any file has (a NUL in it, a file as a folder): none of ours
        return False


def _relative_to(path: str, folder: Path) -> str:
    if is_url(path):  # saved as the user wrote it: an address, never a token or a redirect's signed URL
        return path
    resolved = Path(path).resolve()
    return resolved.relative_to(folder).as_posix() if resolved.is_relative_to(folder) else str(resolved)


def _typed(doc: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = doc.get(key, default)
    if value is not default and not isinstance(value, kind):
        raise RecipeError(f"recipe: field {key!r} must be {'a list' if kind is list else 'a ' + kind.__name__}")
    return value


def _strs(items: list[Any], where: str) -> list[str]:
    if not all(isinstance(i, str) for i in items):
        raise RecipeError(f"recipe: field {where!r} must be a list of strings")
    return items


def _str_map(doc: dict[str, Any], key: str) -> dict[str, str]:
    value = _typed(doc, key, dict, {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise RecipeError(f"recipe: field {key!r} must map text to text")
    return dict(value)


def _source(doc: Any, where: str) -> SourceSpec:
    if isinstance(doc, str):
        return SourceSpec(doc)
    if not isinstance(doc, dict) or not isinstance(doc.get("path"), str):
        raise RecipeError(f"recipe: {where} must be a path or {{\"path\": ..., \"top_level_key\"?, \"filter\"?}}")
    unknown = set(doc) - {"path", "top_level_key", "filter", "lora"}
    if unknown:
        raise RecipeError(f"recipe: {where}: unknown field(s) {', '.join(sorted(unknown))}")
    key = doc.get("top_level_key")
    if key is not None and not isinstance(key, str):
        raise RecipeError(f"recipe: {where}.top_level_key must be a string")
    lora = doc.get("lora", [])
    if not isinstance(lora, list):
        raise RecipeError(f"recipe: {where}.lora must be a list of adapters")
    return SourceSpec(doc["path"], key, Filter.from_json(doc.get("filter"), f"{where}.filter"),
                      tuple(_lora(a, f"{where}.lora[{i}]") for i, a in enumerate(lora)))


def _lora(doc: Any, where: str) -> LoraSpec:
    if isinstance(doc, str):
        doc = {"path": doc}
    scale = doc.get("scale", 1.0) if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or set(doc) - {"path", "scale"} or not isinstance(doc.get("path"), str) or \
            isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise RecipeError(f"recipe: {where} must be a path or {{\"path\": ..., \"scale\"?: a finite number}}")
    return LoraSpec(doc["path"], float(scale))


def _cast(doc: Any, where: str) -> CastRule:
    if isinstance(doc, str):
        doc = {"to": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("to"), str):
        raise RecipeError(f"recipe: {where} must be {{\"to\": \"F16\"|\"BF16\"|\"F32\", \"modules\"?: [...]}}")
    to = CAST_TARGETS.get(doc["to"].lower(), doc["to"])
    modules = tuple(_strs(doc.get("modules", []), f"{where}.modules"))  # its error names the field already
    try:
        return CastRule(to, modules)
    except RecipeError as exc:
        raise RecipeError(f"recipe: {where}: {exc}") from None


def _rotary(doc: Any, where: str) -> RotaryRule:
    if not isinstance(doc, dict) or set(doc) != {"pattern", "heads"} or not isinstance(doc["pattern"], str) \
            or not isinstance(doc["heads"], list):
        raise RecipeError(f"recipe: {where} must be {{\"pattern\": regex, \"heads\": [count or metadata key, ...]}}")
    try:
        return RotaryRule(doc["pattern"], tuple(doc["heads"]))
    except RecipeError as exc:
        raise RecipeError(f"recipe: {where}: {exc}") from None


def _burn_version(text: str) -> BurnVersion:
    try:
        return parse_burn_version(text)
    except ValueError as exc:
        raise RecipeError(f"recipe: field 'burn_version': {exc}") from None
