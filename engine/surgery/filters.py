"""Which tensors a recipe keeps, with burn-store's ``PathFilter`` semantics, as plain data.

burn-store keeps a tensor when the filter is empty or when any include regex matches anywhere
in its path (``Regex::is_match``, in Rust's dialect: ``engine.rust_regex``), any exact full path equals it, or any
predicate accepts it. Exclusions are ours: they drop a tensor the includes kept. Predicates are
data (field, operator, value), never code, so a recipe can be saved, diffed and replayed safely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Sequence, Union

from .. import rust_regex
from ..errors import RecipeError
from ..humanize import quoted
from ..rust_regex import PatternError, RustRegex, quoted_pattern

FIELDS = ("name", "dtype", "ndim", "shape", "numel", "module")
OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "contains", "matches", "in")


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str, rule: str) -> RustRegex:
    """Compile once per (pattern, rule), in burn-store's dialect and in linear time (``engine.rust_regex``);
    the error names the rule the pattern belongs to and says why it cannot be matched as burn-store would."""
    try:
        return rust_regex.compile(pattern)
    except PatternError as exc:
        raise RecipeError(f"{rule}: invalid regex {quoted_pattern(pattern)}: {exc}") from None


@dataclass(frozen=True)
class Predicate:
    """``field operator value``, e.g. ``ndim == 2`` or ``module in ["Linear", "Conv2d"]``."""

    field: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.field not in FIELDS:
            raise RecipeError(f"predicate {self.label}: unknown field {self.field!r} (one of {', '.join(FIELDS)})")
        if self.op not in OPERATORS:
            raise RecipeError(f"predicate {self.label}: unknown operator {self.op!r} (one of {', '.join(OPERATORS)})")
        if self.op == "in" and not isinstance(self.value, (list, tuple)):
            raise RecipeError(f"predicate {self.label}: 'in' wants a list of values")
        if self.op == "matches":
            compile_pattern(str(self.value), f"predicate {self.label}")

    @property
    def label(self) -> str:
        return f"{self.field} {self.op} {self.value!r}"

    def accepts(self, facts: Mapping[str, Any]) -> bool:
        actual = facts[self.field]
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        try:
            if self.op == "==":
                return actual == value
            if self.op == "!=":
                return actual != value
            if self.op == "contains":
                return value in actual
            if self.op == "matches":
                return compile_pattern(str(value), f"predicate {self.label}").search(str(actual))
            if self.op == "in":
                return actual in value
            return {"<": actual < value, "<=": actual <= value, ">": actual > value, ">=": actual >= value}[self.op]
        except TypeError:
            raise RecipeError(f"predicate {self.label}: cannot compare {self.field} {actual!r} with {value!r}") from None


@dataclass(frozen=True)
class PredicateGroup:
    """Predicates (or nested groups) combined with ``and`` / ``or``."""

    combine: str
    items: tuple[Union[Predicate, "PredicateGroup"], ...]

    def __post_init__(self) -> None:
        if self.combine not in ("and", "or"):
            raise RecipeError(f"predicate group: combine must be 'and' or 'or', not {self.combine!r}")

    @property
    def label(self) -> str:
        return "(" + f" {self.combine} ".join(item.label for item in self.items) + ")"

    def accepts(self, facts: Mapping[str, Any]) -> bool:
        results = (item.accepts(facts) for item in self.items)
        return all(results) if self.combine == "and" else any(results)


Rule = Union[Predicate, PredicateGroup]


def facts(name: str, dtype: Any, shape: Sequence[int], module_kind: str = "Unknown") -> dict[str, Any]:
    """What predicates can ask about one tensor (shape as a list, dtype as its name)."""
    numel = 1
    for dim in shape:
        numel *= dim
    return {"name": name, "dtype": str(dtype), "ndim": len(shape), "shape": list(shape), "numel": numel,
            "module": module_kind}


INCLUDE, PATH, WHERE, EXCLUDE, REMAP = "include", "path", "where", "exclude", "remap"  # the kinds of rule


@dataclass(frozen=True)
class RuleHits:
    """How many tensors one recipe rule matches: the count the window shows on each rule's row.

    Data, so readers pick rules by ``kind`` and ``index`` (the rule's place among those of its kind):
    ``pattern`` is the regex, exact path or predicate label, ``replacement`` a remap's. ``rule`` is
    the line a terminal prints, made from those, never read back.
    """

    kind: str
    index: int
    pattern: str
    count: int
    replacement: str = ""

    @classmethod
    def remap(cls, index: int, rule: Any, count: int) -> "RuleHits":
        return cls(REMAP, index, rule.pattern, count, rule.replacement)

    @property
    def subject(self) -> str:
        """What the rule matches, as the user wrote it: ``'^fc' -> 'head'``, ``'bias$'``, ``ndim == 2``."""
        if self.kind == REMAP:
            return f"{quoted(self.pattern)} -> {quoted(self.replacement)}"
        return self.pattern if self.kind == WHERE else quoted(self.pattern)

    @property
    def rule(self) -> str:
        return f"{self.kind} {self.subject}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "index": self.index, "pattern": self.pattern,
                **({"replacement": self.replacement} if self.kind == REMAP else {}), "count": self.count,
                "rule": self.rule}


@dataclass(frozen=True)
class Filter:
    """Includes (regexes, exact paths, predicates: OR-ed; none means keep all), then exclusions."""

    include: tuple[str, ...] = ()
    full_paths: tuple[str, ...] = ()
    where: tuple[Rule, ...] = ()
    exclude: tuple[str, ...] = ()
    _paths: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)
    _includes: tuple[RustRegex, ...] = field(default=(), init=False, repr=False, compare=False)
    _excludes: tuple[tuple[RustRegex, str], ...] = field(default=(), init=False, repr=False, compare=False)
    _selects: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # compiled once: the filter now runs on every plan, after renames, for every tensor
        object.__setattr__(self, "_paths", frozenset(self.full_paths))
        object.__setattr__(self, "_includes", tuple(compile_pattern(p, f"include rule {i + 1}")
                                                    for i, p in enumerate(self.include)))
        object.__setattr__(self, "_excludes", tuple((compile_pattern(p, f"exclude rule {i + 1}"),
                                                     f"excluded by rule {i + 1} ({quoted(p)})")
                                                    for i, p in enumerate(self.exclude)))
        object.__setattr__(self, "_selects", bool(self.include or self.full_paths or self.where))

    @property
    def is_empty(self) -> bool:
        return not (self.include or self.full_paths or self.where or self.exclude)

    def needs_modules(self) -> bool:
        """Whether a predicate asks for module types (inferring them is only worth it then)."""
        return any(_uses_module(rule) for rule in self.where)

    def verdict(self, name: str, tensor_facts: Mapping[str, Any] | None = None) -> str | None:
        """None when the tensor is kept, else why it is dropped (naming the rule)."""
        if self._selects:
            if not (name in self._paths or any(regex.search(name) for regex in self._includes)
                    or any(rule.accepts(tensor_facts or {}) for rule in self.where)):
                return "matched no include rule"
        for regex, reason in self._excludes:
            if regex.search(name):
                return reason
        return None

    def judge(self, names: Sequence[str]) -> tuple[list[str | None], tuple[int, ...]]:
        """``verdict`` for every name, and each rule's match count (``rule_hits``' counts, a path's 0 or 1),
        when no predicate needs facts: one regex pass a rule serves both (hot: every plan runs it)."""
        if self.where:
            raise ValueError("judge is for filters without predicates: they need each tensor's facts")
        found = [list(map(regex.search, names)) for regex in self._includes]  # whether it matches, per name
        counts = [column.count(True) for column in found]
        if self.full_paths:
            present = set(names)
            counts += [int(path in present) for path in self.full_paths]
            paths = self._paths
            found.append([name in paths for name in names])
        if not found:
            out: list[str | None] = [None] * len(names)
        elif len(found) == 1:
            out = [None if hit else "matched no include rule" for hit in found[0]]
        else:
            out = [None if any(hits) else "matched no include rule" for hits in zip(*found)]
        for regex, reason in self._excludes:  # the first exclusion that matches names the reason
            column = list(map(regex.search, names))
            counts.append(column.count(True))
            out = [verdict if verdict is not None or not hit else reason for verdict, hit in zip(out, column)]
        return out, tuple(counts)

    def rule_hits(self, names: Sequence[str], tensors: Sequence[Mapping[str, Any]] | None = None) -> list[RuleHits]:
        """Each rule's match count over the names (and, for predicates, the tensors' facts), in rule order:
        includes, paths, predicates, excludes."""
        present = set(names) if self.full_paths else set()
        counts = [*(sum(1 for n in names if r.search(n)) for r in self._includes),
                  *(int(p in present) for p in self.full_paths),
                  *(sum(1 for t in tensors or () if rule.accepts(t)) for rule in self.where),
                  *(sum(1 for n in names if r.search(n)) for r, _ in self._excludes)]
        return self.hits(counts)

    def hits(self, counts: Sequence[int]) -> list[RuleHits]:
        """``RuleHits`` for counts in ``rule_hits``' order (includes, paths, predicates, excludes)."""
        rules = [*((INCLUDE, i, p) for i, p in enumerate(self.include)), *((PATH, i, p) for i, p in enumerate(self.full_paths)),
                 *((WHERE, i, r.label) for i, r in enumerate(self.where)), *((EXCLUDE, i, p) for i, p in enumerate(self.exclude))]
        return [RuleHits(kind, index, pattern, count) for (kind, index, pattern), count in zip(rules, counts)]

    def merged_counts(self, per_source: Sequence[Sequence[int]]) -> list[int]:
        """Counts over several sources' names from each source's: summed, but a path is there (1) or not (0)."""
        paths = range(len(self.include), len(self.include) + len(self.full_paths))
        return [max(column) if i in paths else sum(column) for i, column in enumerate(zip(*per_source))]

    # --- JSON -----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.include:
            out["include"] = list(self.include)
        if self.full_paths:
            out["full_paths"] = list(self.full_paths)
        if self.where:
            out["where"] = [_rule_to_json(rule) for rule in self.where]
        if self.exclude:
            out["exclude"] = list(self.exclude)
        return out

    @classmethod
    def from_json(cls, doc: Any, where: str = "filter") -> "Filter":
        if doc is None:
            return cls()
        if not isinstance(doc, dict):
            raise RecipeError(f"{where}: must be an object")
        unknown = set(doc) - {"include", "full_paths", "where", "exclude"}
        if unknown:
            raise RecipeError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        return cls(include=_strings(doc.get("include"), f"{where}.include"),
                   full_paths=_strings(doc.get("full_paths"), f"{where}.full_paths"),
                   where=tuple(_rule_from_json(r, f"{where}.where[{i}]") for i, r in enumerate(_list(doc.get("where"),
                                                                                                    f"{where}.where"))),
                   exclude=_strings(doc.get("exclude"), f"{where}.exclude"))


def _uses_module(rule: Rule) -> bool:
    if isinstance(rule, Predicate):
        return rule.field == "module"
    return any(_uses_module(item) for item in rule.items)


def _rule_to_json(rule: Rule) -> dict[str, Any]:
    if isinstance(rule, Predicate):
        value = list(rule.value) if isinstance(rule.value, tuple) else rule.value
        return {"field": rule.field, "op": rule.op, "value": value}
    return {rule.combine: [_rule_to_json(item) for item in rule.items]}


def _rule_from_json(doc: Any, where: str) -> Rule:
    if isinstance(doc, dict) and len(doc) == 1 and next(iter(doc)) in ("and", "or"):
        (combine, items), = doc.items()
        return PredicateGroup(combine, tuple(_rule_from_json(item, f"{where}.{combine}[{i}]")
                                             for i, item in enumerate(_list(items, f"{where}.{combine}"))))
    if not isinstance(doc, dict) or set(doc) != {"field", "op", "value"}:
        raise RecipeError(f"{where}: a predicate is {{\"field\", \"op\", \"value\"}} or {{\"and\"|\"or\": [...]}}")
    value = tuple(doc["value"]) if isinstance(doc["value"], list) and doc["op"] == "in" else doc["value"]
    try:
        return Predicate(doc["field"], doc["op"], value)
    except RecipeError as exc:
        raise RecipeError(f"{where}: {exc}") from None


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecipeError(f"{where}: must be a list")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    items = _list(value, where)
    if not all(isinstance(item, str) for item in items):
        raise RecipeError(f"{where}: must be a list of strings")
    return tuple(items)
