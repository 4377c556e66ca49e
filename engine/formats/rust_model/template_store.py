"""The ``Store`` a model's Rust source opens as (see the package's docstring for how it is read by the others)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Collection, Iterable

import re2
from msgspec.structs import force_setattr

from ...errors import FormatError
from ...store import Store, TensorEntry
from .shapes import OPEN, is_runtime
from .template import MAX_TENSORS, ModelTemplate, TemplateTensor

NAME = "rust"  # the format a store read from Rust source reports

INDEX = "([0-9]{1,20})"  # an index segment (20 digits hold any usize; a longer run of digits is no index)


@dataclass(frozen=True)
class _Family:
    """The tensors under one ``Vec`` whose length is set at run time: ``prefix`` is the name before its index."""

    prefix: str
    members: tuple[TemplateTensor, ...]
    patterns: tuple[re.Pattern[str], ...]  # each member's name, every ``*`` an index, enum variants optional

    def indices(self, offered: Iterable[str]) -> set[tuple[int, ...]]:
        """The index tuples the offered names fill (``layers.3.fc.weight`` fills (3,))."""
        found = set()
        for name in offered:
            if self.prefix and not _could_start(name, self.prefix):
                continue
            for pattern in self.patterns:
                match = pattern.match(name)
                if match:
                    found.add(tuple(int(i) for i in match.groups()))
                    break
        return found

    def instances(self, offered: Iterable[str], path: Path) -> list[tuple[str, TemplateTensor]]:
        """Each member at each index the offered names fill (at least the first), as (name, member)."""
        filled = self.indices(offered)
        if len(filled) * len(self.members) > MAX_TENSORS:
            raise FormatError(path, f"would want more than {MAX_TENSORS:,} tensors under {self.prefix}* (one for "
                                    f"each of {len(filled):,} indices the source fills)")
        out = []
        for member in self.members:
            stars = member.name.split(".").count(OPEN)
            wanted = sorted({t[:stars] + (0,) * (stars - len(t)) for t in filled} or {(0,) * stars})
            out += [(_filled(member.name, indices), member) for indices in wanted]
        return out


class RustTemplate(Store):
    """A model read from its Rust source: names and shapes (see the module's docstring), no values."""

    format = NAME
    has_values = False

    def __init__(self, path: Path, source: Path, model: ModelTemplate):
        """``path`` as the user named it (``model.rs::Net`` too), ``source`` the file or folder read."""
        self.model = model
        known = [t for t in model.tensors if OPEN not in t.name.split(".")]
        self._optional = frozenset(t.name for t in known if t.optional)
        try:
            self._families = _families([t for t in model.tensors if OPEN in t.name.split(".")])
            self._kinds = _KindIndex(model.kinds)
        except ValueError as exc:
            raise FormatError(path, f"the model's source makes {exc}") from None
        self._made: dict[str, TemplateTensor] = {}
        super().__init__(path, [_entry(t.name, t) for t in known], files=[source],
                         metadata={"rust.struct": model.rust_type, "rust.file": f"{model.root.where}",
                                   "rust.burn_version": model.version.value})

    @property
    def description(self) -> str:
        return f"Rust source ({self.model.rust_type}, Burn {self.model.version.value})"

    def expected(self, offered: Collection[str]) -> list[TensorEntry]:
        if not self._families:
            return self.entries
        found = list(self.entries)
        for family in self._families:
            for name, member in family.instances(offered, self.path):
                found.append(self._made_entry(name, member))
        return found

    def is_optional(self, name: str) -> bool:
        member = self._made.get(name) or self._member(name)
        return name in self._optional or (member is not None and member.optional)

    @property
    def declared_kinds(self) -> Callable[[str], str | None]:
        return self._kinds.kind

    def entry(self, name: str) -> TensorEntry:
        if name not in self._by_name:
            member = self._member(name)
            if member is not None:
                return self._made_entry(name, member)
        return super().entry(name)

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or (isinstance(name, str) and self._member(name) is not None)

    def _member(self, name: str) -> TemplateTensor | None:
        """The run-time-length Vec's tensor that ``name`` is an element of, spelled exactly."""
        for family in self._families:
            if name.startswith(family.prefix):
                for member in family.members:
                    if re.fullmatch(_exact(member.name), name):
                        return member
        return None

    def _made_entry(self, name: str, member: TemplateTensor) -> TensorEntry:
        self._made[name] = member
        return _entry(name, member, self)

    def _read(self, entry: TensorEntry):
        raise FormatError(self.path, f"is Rust source: tensor {entry.name!r} has a name and a shape, no values")


def _entry(name: str, tensor: TemplateTensor, store: Store | None = None) -> TensorEntry:
    size = 0 if is_runtime(tensor.shape) else _numel(tensor.shape) * (tensor.dtype.itemsize or 1)
    entry = TensorEntry(name, tensor.dtype, tensor.shape, size)
    if store is not None:
        force_setattr(entry, "store", store)
    return entry


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def _families(open_tensors: list[TemplateTensor]) -> list[_Family]:
    grouped: dict[str, list[TemplateTensor]] = {}
    for tensor in open_tensors:
        parts = tensor.name.split(".")
        grouped.setdefault(".".join(parts[:parts.index(OPEN)]), []).append(tensor)
    return [_Family(prefix + "." if prefix else "", tuple(members),
                    tuple(_compiled(_pattern(m.name, leaf=True)) for m in members)) for prefix, members in grouped.items()]


def _exact(name: str) -> str:
    return "\\.".join(INDEX if part == OPEN else re.escape(part) for part in name.split("."))


def _pattern(name: str, leaf: bool) -> str:
    """``name`` as a pattern: ``*`` an index (a group), and a CamelCase segment (an enum's variant) that a source
    may leave out, as burn-store's ``skip_enum_variants`` does (a tensor's ``leaf`` is never one)."""
    parts = name.split(".")
    pattern, separator = "", ""
    for i, part in enumerate(parts):
        if part == OPEN:
            pattern, separator = pattern + separator + INDEX, "\\."
        elif part[:1].isupper() and not (leaf and i == len(parts) - 1):
            pattern += f"(?:{separator}{re.escape(part)})?" if separator else f"(?:{re.escape(part)}\\.)?"
        else:
            pattern, separator = pattern + separator + re.escape(part), "\\."
    return pattern + "$"


def _compiled(pattern: str) -> "re2._Regexp":
    """RE2, not ``re``: a name's optional enum variants are optional groups one after another, which ``re``
    backtracks through exponentially (26 of them against a name that does not fit: 1.7 s, doubling with each).
    A name too long for RE2's program (identifiers of megabytes) is refused by the caller's FormatError."""
    options = re2.Options()
    options.log_errors = False  # the refusal is our one line, not also RE2's log line on stderr
    try:
        return re2.compile(pattern, options)
    except re2.error:
        raise ValueError("a tensor name too long to match") from None


def _could_start(name: str, prefix: str) -> bool:
    """A cheap test before the patterns: the name starts like the family (its first segment at least)."""
    return name.startswith(prefix.split(".", 1)[0])


def _filled(name: str, indices: tuple[int, ...]) -> str:
    values = iter(indices)
    return ".".join(str(next(values)) if part == OPEN else part for part in name.split("."))


class _KindIndex:
    """Module kinds by path; a path with ``*`` or enum variants also matches its element paths and plain spelling."""

    def __init__(self, kinds: dict[str, str]):
        self.exact = dict(kinds)
        self.patterns = [(_compiled(_pattern(path, leaf=False)), kind) for path, kind in kinds.items()
                         if OPEN in path.split(".") or any(p[:1].isupper() for p in path.split("."))]
        self.kind = lru_cache(maxsize=65536)(self._kind)

    def _kind(self, path: str) -> str | None:
        if path in self.exact:
            return self.exact[path]
        return next((kind for pattern, kind in self.patterns if pattern.match(path)), None)
