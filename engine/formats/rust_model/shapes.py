"""Shape arithmetic on what a model's source code says: known numbers, and dimensions set at run time.

A template read from Rust source knows a dimension when the constructor spells it with literals, consts
or arithmetic of them (``64 * 5 * 5``); a dimension that comes from a config field or an argument is set at
run time. Such a dimension is ``RUNTIME_DIM`` in a template tensor's shape: an int, so every shape stays a
tuple of ints, and a negative one, which no file's shape holds. ``fits`` is the one rule that compares a
template's shape with a file's: equal rank, and every known dimension equal.

The arithmetic is Rust's: integer division rounding toward zero, and where Rust would panic or overflow
(a division by zero, a result past ``usize::MAX``) the value cannot be known, so it is unknown, never guessed.
A dimension below zero is no size at all: ``dimension`` refuses it (``ShapeError``).
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

Value = Any  # what the reader knows of a value (engine.formats.rust_model.values)

RUNTIME_DIM = -1  # a dimension set at run time (the model's config or arguments decide it)
OPEN = "*"  # a name's index segment in a Vec whose length is set at run time
USIZE_MAX = 2**64 - 1


class Unknown:
    """A value set at run time: a config field, an argument no caller in the source passes."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()


class ShapeError(ValueError):
    """A dimension no tensor can have (below zero), found while reading the constructor."""


def fits(wanted: Sequence[int], actual: Sequence[int]) -> bool:
    """Whether a tensor of shape ``actual`` loads where ``wanted`` is expected (run-time dimensions take any size)."""
    return len(wanted) == len(actual) and all(w == RUNTIME_DIM or w == a for w, a in zip(wanted, actual))


def is_runtime(shape: Sequence[int]) -> bool:
    """Whether any dimension of ``shape`` is set at run time."""
    return RUNTIME_DIM in shape


def dimension(value: Value) -> int:
    """A shape dimension from a value: a known size, or ``RUNTIME_DIM`` for anything not a number."""
    if isinstance(value, bool) or not isinstance(value, int):
        return RUNTIME_DIM
    if value < 0:
        raise ShapeError(f"a dimension of {value} (a size cannot be negative)")
    return value


def shape_of(dims: Sequence[Value]) -> tuple[int, ...]:
    return tuple(dimension(d) for d in dims)


def div(a: Value, b: Value) -> Value:
    return arithmetic("/", a, b)


def _checked_div(a: int, b: int) -> int:
    if b == 0:
        raise ShapeError("a division by zero")
    quotient = abs(a) // abs(b)  # Rust's integer division rounds toward zero
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _checked_rem(a: int, b: int) -> int:
    if b == 0:
        raise ShapeError("a remainder by zero")
    return a - b * _checked_div(a, b)


def _checked_shift(a: int, b: int) -> int:
    if not 0 <= b < 64:
        raise ShapeError(f"a shift by {b} bits")
    return a << b


_INTEGER: dict[str, Callable[[int, int], int]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": _checked_div, "%": _checked_rem,
    "<<": _checked_shift, ">>": lambda a, b: a >> b if 0 <= b < 64 else 0, "&": operator.and_, "|": operator.or_,
    "^": operator.xor,
}
_FLOAT: dict[str, Callable[[float, float], float]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "/": lambda a, b: a / b if b else float("nan"),
}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def arithmetic(op: str, a: Value, b: Value) -> Value:
    """``a op b`` as Rust computes it, or set at run time when either side is."""
    if op in ("&&", "||"):
        return _logic(op, a, b)
    if isinstance(a, bool) or isinstance(b, bool):
        return _COMPARE[op](a, b) if op in _COMPARE and isinstance(a, bool) and isinstance(b, bool) else UNKNOWN
    if isinstance(a, int) and isinstance(b, int):
        if op in _COMPARE:
            return _COMPARE[op](a, b)
        if op not in _INTEGER:
            return UNKNOWN
        try:
            return checked(_INTEGER[op](a, b))
        except ShapeError:  # a panic or an overflow at run time: no value to know
            return UNKNOWN
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if op in _COMPARE:
            return _COMPARE[op](a, b)
        return _FLOAT[op](float(a), float(b)) if op in _FLOAT else UNKNOWN
    return UNKNOWN


def _logic(op: str, a: Value, b: Value) -> Value:
    """``&&``/``||``: one known side can settle it (``false && x`` is false whatever ``x`` is)."""
    settles = op == "||"
    if a is settles or b is settles:
        return settles
    if isinstance(a, bool) and isinstance(b, bool):
        return a and b if op == "&&" else a or b
    return UNKNOWN


def checked(value: int) -> int:
    """An integer a Rust program could hold (``i64::MIN`` to ``usize::MAX``); past that Rust overflows."""
    if not -(2**63) <= value <= USIZE_MAX:
        raise ShapeError("a number past usize::MAX (an overflow)")
    return value


def negate(value: Value) -> Value:
    if isinstance(value, bool):
        return UNKNOWN
    if isinstance(value, int):
        return -value if -value >= -(2**63) else UNKNOWN
    return -value if isinstance(value, float) else UNKNOWN


def cast(value: Value, target: str) -> Value:
    """``value as target`` for the numeric types (float to int truncates, as Rust's ``as`` does)."""
    if isinstance(value, bool):
        return int(value) if target not in ("f32", "f64", "bool") else UNKNOWN
    if target in ("f32", "f64"):
        return float(value) if isinstance(value, (int, float)) else UNKNOWN
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or not -(2**63) <= value <= USIZE_MAX:
            return UNKNOWN
        return int(value)
    return value if isinstance(value, int) else UNKNOWN
