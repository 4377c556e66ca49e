"""What the reader knows of a value in a model's constructor, after following the code without running it.

A number or flag the code spells out is known; whatever comes from outside the source (a config field read
at run time, a function's argument nobody passed here) is ``UNKNOWN`` and stays so, never guessed. Where
the code takes one of two ways that the reader cannot decide (an ``if`` on a run-time flag, two
constructors), the two values are ``join``-ed: what both agree on stays known, the rest becomes unknown
(an ``Option`` present in one way only is "maybe", an enum "one of" its variants).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Union

from .shapes import UNKNOWN, Unknown, arithmetic


@dataclass(frozen=True, eq=True)
class Items:
    """An array, tuple or ``Vec`` whose length is known: ``[1, 8]``, ``vec![block; 4]``."""

    items: tuple["Value", ...]


@dataclass(frozen=True, eq=True)
class OpenVec:
    """A ``Vec`` whose length is set at run time; each element is like ``element``."""

    element: "Value"


@dataclass(frozen=True, eq=True)
class Maybe:
    """An ``Option``: ``present`` is True for ``Some(value)``, False for ``None``, None when either may be."""

    value: "Value"
    present: bool | None


NONE = Maybe(UNKNOWN, False)


@dataclass(frozen=True, eq=True)
class Config:
    """A ``*Config`` value: its type and the fields set so far (a field not set holds its default)."""

    name: str
    fields: Mapping[str, "Value"] = field(default_factory=dict)

    def with_field(self, name: str, value: "Value") -> "Config":
        return Config(self.name, {**self.fields, name: value})


@dataclass(frozen=True, eq=True)
class Built:
    """A module of Burn's ``nn`` built from its config (``LinearConfig::new(..).init(device)``)."""

    module: str
    config: Config


@dataclass(frozen=True, eq=True)
class Struct:
    """A struct literal of the model's own code: ``ConvBlock { conv, norm }``."""

    name: str
    fields: Mapping[str, "Value"]


@dataclass(frozen=True, eq=True)
class Variant:
    """An enum value: the variants it may be (one when the code says which), each with its payload."""

    enum: str
    choices: Mapping[str, "Value"]


@dataclass(frozen=True, eq=True)
class Shaped:
    """A tensor the code creates with a shape it spells (``Tensor::zeros([3, 4], device)``)."""

    dims: tuple["Value", ...]


@dataclass(frozen=True, eq=True)
class Span:
    """A range ``start..end`` (``..=`` makes ``end`` inclusive)."""

    start: "Value"
    end: "Value"
    inclusive: bool = False

    @property
    def length(self) -> int | None:
        if not (_is_int(self.start) and _is_int(self.end)):
            return None
        return max(0, self.end - self.start + (1 if self.inclusive else 0))


@dataclass(frozen=True, eq=False)
class Closure:
    """``|i| body``: its parameters' patterns and its body (tree-sitter nodes), and the frame it was made in."""

    params: tuple[Any, ...]
    body: Any
    frame: Any


@dataclass(frozen=True, eq=False)
class Mapped:
    """``iter.map(closure)``, collected later into a ``Vec``."""

    over: Union[Span, Items, OpenVec, "Unknown"]
    closure: Closure


@dataclass(frozen=True, eq=True)
class ConfigVariant:
    """A Burn config enum's variant (``NormalizationConfig::Batch(config)``), built into the module enum by ``init``."""

    enum: str
    variant: str
    payload: "Value"


Value = Any  # int | float | bool | str | Unknown | Items | OpenVec | Maybe | Config | Built | Struct | Variant | ...


def _is_int(value: Value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def join(a: Value, b: Value) -> Value:
    """What two values the code may produce have in common (the rest unknown)."""
    if a is b or (type(a) is type(b) and not isinstance(a, (Closure, Mapped)) and a == b):
        return a
    if isinstance(a, Maybe) or isinstance(b, Maybe):
        return _join_options(a, b)
    if isinstance(a, (Items, OpenVec)) and isinstance(b, (Items, OpenVec)) and type(a) is not type(b):
        return OpenVec(join(as_vec(a).element, as_vec(b).element))
    if type(a) is not type(b):
        return UNKNOWN
    if isinstance(a, Items):
        if len(a.items) == len(b.items):
            return Items(tuple(join(x, y) for x, y in zip(a.items, b.items)))
        return OpenVec(join_all(a.items + b.items))
    if isinstance(a, OpenVec):
        return OpenVec(join(a.element, b.element))
    if isinstance(a, (Config, Struct)) and a.name == b.name:
        return type(a)(a.name, _join_fields(a.fields, b.fields))
    if isinstance(a, Built) and a.module == b.module:
        return Built(a.module, join(a.config, b.config))
    if isinstance(a, Variant) and a.enum == b.enum:
        choices = dict(a.choices)
        for name, payload in b.choices.items():
            choices[name] = join(choices[name], payload) if name in choices else payload
        return Variant(a.enum, choices)
    if isinstance(a, Shaped) and len(a.dims) == len(b.dims):
        return Shaped(tuple(join(x, y) for x, y in zip(a.dims, b.dims)))
    return UNKNOWN


def join_all(values: tuple[Value, ...] | list[Value]) -> Value:
    """The join of every value (UNKNOWN for none)."""
    if not values:
        return UNKNOWN
    result = values[0]
    for value in values[1:]:
        result = join(result, value)
    return result


def item(values: Value, index: int) -> Value:
    """``values[index]`` where ``values`` is a known array, else set at run time."""
    if isinstance(values, Items) and 0 <= index < len(values.items):
        return values.items[index]
    return UNKNOWN


def product(values: Value) -> Value:
    """``values.iter().product()`` of a known array of numbers."""
    if not isinstance(values, Items):
        return UNKNOWN
    result: Value = 1
    for value in values.items:
        result = arithmetic("*", result, value)
    return result


def as_vec(value: "Items | OpenVec") -> OpenVec:
    """A known-length ``Vec`` read as one whose elements are all alike (to join it with an open one)."""
    return OpenVec(join_all(value.items)) if isinstance(value, Items) else value


def _join_options(a: Value, b: Value) -> Value:
    left = a if isinstance(a, Maybe) else Maybe(a, None if a is UNKNOWN else True)
    right = b if isinstance(b, Maybe) else Maybe(b, None if b is UNKNOWN else True)
    present = left.present if left.present == right.present else None
    if left.present is False:
        inner = right.value
    elif right.present is False:
        inner = left.value
    else:
        inner = join(left.value, right.value)
    return Maybe(inner, present)


def _join_fields(a: Mapping[str, Value], b: Mapping[str, Value]) -> dict[str, Value]:
    return {name: join(a.get(name, UNKNOWN), b.get(name, UNKNOWN)) for name in {**a, **b}}
