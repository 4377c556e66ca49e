"""Following a model's constructor through its source without running it: what each field is built from.

The reader walks the syntax tree of a function (``init``, ``new``, whatever returns the model) the way the
program would run it, over ``values``: numbers the code spells out are computed (literals, consts, their
arithmetic), configs remember what ``*Config::new`` and ``.with_*`` set, and ``.init(device)`` turns a config
into the module it builds. Calls into the model's own functions are followed with their arguments bound;
what comes from outside the source (a config field read at run time, an argument no caller here passes) is
unknown. Where the code branches on something unknown, both ways are read and ``join``-ed.

Nothing runs and nothing is guessed; a hostile source can only cost steps, which are counted
(``MAX_STEPS``), and nesting, which is bounded (``MAX_DEPTH``, ``MAX_CALLS``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from ...burn_versions import BurnVersion
from ...errors import FormatError
from . import burn_nn, shapes
from .syntax import Crate, Declared, Function, Node, line_of, parse_expression, text
from .values import (
    NONE,
    UNKNOWN,
    Built,
    Closure,
    Config,
    ConfigVariant,
    Items,
    Mapped,
    Maybe,
    OpenVec,
    Shaped,
    Span,
    Struct,
    Value,
    Variant,
    as_vec,
    join,
    join_all,
    product,
)

MAX_STEPS = 50_000  # syntax nodes read (and elements copied) in all: Burn's examples' constructors take about 200
MAX_DEPTH = 120  # expressions nested inside each other, calls included (each takes a few of Python's 1,000 frames)
MAX_CALLS = 48  # functions calling functions
MAX_ITEMS = 100_000  # elements of one array or Vec the reader spells out

_SAME = frozenset({"clone", "to_device", "fork", "no_grad", "train", "valid", "into", "to_owned", "as_ref",
                   "iter", "into_iter", "to_vec", "require_grad", "set_require_grad", "detach", "unwrap", "expect",
                   "borrow", "deref"})
_TENSOR_MAKERS = frozenset({"zeros", "ones", "empty", "full", "random", "init", "init_with", "zeros_like"})
_PASS_THROUGH = {"Param": ("from_tensor", "initialized", "uninitialized"), "RunningState": ("new", "with_id")}
_INT_SUFFIXES = ("usize", "isize", "u128", "i128", "u64", "i64", "u32", "i32", "u16", "i16", "u8", "i8")


class _Return(Exception):
    def __init__(self, value: Value):
        self.value = value


class Scope:
    """The names a block sees. A branch the reader cannot decide writes into ``overlay`` instead of its
    parents' variables, so that the two ways can be joined afterwards."""

    def __init__(self, parent: "Scope | None" = None, isolated: bool = False):
        self.parent, self.names = parent, {}
        self.overlay: dict[str, Value] | None = {} if isolated else None

    def lookup(self, name: str) -> tuple[bool, Value]:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return True, scope.names[name]
            if scope.overlay is not None and name in scope.overlay:
                return True, scope.overlay[name]
            scope = scope.parent
        return False, UNKNOWN

    def let(self, name: str, value: Value) -> None:
        self.names[name] = value

    def assign(self, name: str, value: Value) -> None:
        """``name = value`` on the nearest variable of that name (an isolated branch keeps the write)."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                scope.names[name] = value
                return
            if scope.overlay is not None:
                scope.overlay[name] = value
                return
            scope = scope.parent


class Frame:
    """A function being read: its scope (``self`` is a name in it), the type its ``impl`` is for (``Self``), its file."""

    def __init__(self, scope: Scope, owner: str | None, file: Path):
        self.scope, self.owner, self.file = scope, owner, file

    def within(self, scope: Scope) -> "Frame":
        return Frame(scope, self.owner, self.file)


class Reader:
    """Reads constructors of ``crate`` as Burn ``version``'s ``nn`` defines its modules."""

    def __init__(self, crate: Crate, version: BurnVersion):
        self.crate, self.version = crate, version
        self.steps = 0
        self.depth = 0
        self.calls: list[Function] = []
        self.consts: dict[str, Value] = {}

    # --- the model ----------------------------------------------------------------------------------------------
    def construct(self, root: Declared) -> Value:
        """What the functions that build ``root`` build, joined (unknown when none builds it visibly)."""
        built = []
        for function in self.constructors(root):
            value = self.call(function, [UNKNOWN] * len(function.params), UNKNOWN)
            if isinstance(value, (Struct, Variant)):
                built.append(value)
        return join_all(built)

    def constructors(self, root: Declared) -> list[Function]:
        """Functions returning ``root`` (``Self`` in its own impl, its name anywhere), not methods of a built model."""
        found = []
        for (owner, _), functions in self.crate.functions.items():
            for function in functions:
                returned = _returned(function)
                if returned is None:
                    continue
                mine = returned.name == root.name or (returned.name == "Self" and owner == root.name)
                if mine and not (owner == root.name and function.takes_self):
                    found.append(function)
        return found

    def call(self, function: Function, args: list[Value], self_value: Value) -> Value:
        if function in self.calls or len(self.calls) >= MAX_CALLS:
            return UNKNOWN  # recursion: what it returns depends on a run the reader does not make
        scope = Scope()
        scope.let("self", self_value)
        for name, value in zip(function.params, args):
            if name is not None:
                scope.let(name, value)
        self.calls.append(function)
        try:
            return self.block(function.body, Frame(scope, function.owner, function.file))
        except _Return as returned:
            return returned.value
        finally:
            self.calls.pop()

    # --- statements -----------------------------------------------------------------------------------------------
    def block(self, node: Node, frame: Frame) -> Value:
        inner = frame.within(Scope(frame.scope))
        value: Value = ()
        for child in node.named_children:
            value = self.statement(child, inner)
        return value

    def statement(self, node: Node, frame: Frame) -> Value:
        kind = node.type
        if kind == "let_declaration":
            value = node.child_by_field_name("value")
            self.bind(node.child_by_field_name("pattern"), self.eval(value, frame) if value is not None else UNKNOWN,
                      frame.scope)
            return ()
        if kind == "expression_statement":
            if node.named_child_count:
                self.eval(node.named_children[0], frame)
            return ()
        if kind in ("line_comment", "block_comment", "attribute_item", "empty_statement") or kind.endswith("_item"):
            return ()
        return self.eval(node, frame)

    def bind(self, pattern: Node | None, value: Value, scope: Scope) -> None:
        if pattern is None:
            return
        if pattern.type == "mut_pattern" and pattern.named_child_count:
            pattern = pattern.named_children[0]
        if pattern.type == "identifier":
            scope.let(text(pattern), value)
        elif pattern.type in ("tuple_pattern", "slice_pattern"):
            parts = pattern.named_children
            items = value.items if isinstance(value, Items) and len(value.items) == len(parts) else [UNKNOWN] * len(parts)
            for part, item in zip(parts, items):
                self.bind(part, item, scope)
        else:
            for name in _identifiers(pattern):
                scope.let(name, UNKNOWN)

    # --- expressions ------------------------------------------------------------------------------------------
    def eval(self, node: Node | None, frame: Frame) -> Value:
        if node is None:
            return UNKNOWN
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise FormatError(frame.file, f"line {line_of(node)}: the model's constructors take more than "
                                          f"{MAX_STEPS:,} steps to follow (a loop too long to read offline)")
        if self.depth >= MAX_DEPTH:
            raise FormatError(frame.file, f"line {line_of(node)}: expressions nest more than {MAX_DEPTH} deep")
        handler = self._HANDLERS.get(node.type)
        if handler is None:
            return UNKNOWN
        self.depth += 1
        try:
            return handler(self, node, frame)
        finally:
            self.depth -= 1

    def _integer(self, node: Node, frame: Frame) -> Value:
        return _rust_int(text(node))

    def _float(self, node: Node, frame: Frame) -> Value:
        digits = text(node).replace("_", "").removesuffix("f32").removesuffix("f64")
        try:
            return float(digits) if len(digits) <= 64 else UNKNOWN
        except ValueError:
            return UNKNOWN

    def _boolean(self, node: Node, frame: Frame) -> Value:
        return text(node) == "true"

    def _string(self, node: Node, frame: Frame) -> Value:
        return text(node)

    def _first(self, node: Node, frame: Frame) -> Value:
        """Parentheses, ``&x``, ``x?``, ``*x``: the value inside."""
        inner = node.child_by_field_name("value") or (node.named_children[0] if node.named_child_count else None)
        return self.eval(inner, frame)

    def _unary(self, node: Node, frame: Frame) -> Value:
        value = self.eval(node.named_children[0] if node.named_child_count else None, frame)
        operator = text(node.children[0]) if node.child_count else ""
        if operator == "-":
            return shapes.negate(value)
        if operator == "!":
            return (not value) if isinstance(value, bool) else UNKNOWN
        return value

    def _binary(self, node: Node, frame: Frame) -> Value:
        operator = text(node.child_by_field_name("operator"))
        left = self.eval(node.child_by_field_name("left"), frame)
        if operator in ("&&", "||") and isinstance(left, bool) and left is (operator == "||"):
            return left  # short-circuit, as Rust does
        return shapes.arithmetic(operator, left, self.eval(node.child_by_field_name("right"), frame))

    def _cast(self, node: Node, frame: Frame) -> Value:
        return shapes.cast(self.eval(node.child_by_field_name("value"), frame), text(node.child_by_field_name("type")))

    def _array(self, node: Node, frame: Frame) -> Value:
        length = node.child_by_field_name("length")
        if length is not None:  # [value; length] (the grammar names only the length)
            value = next((c for c in node.named_children if c.type != "attribute_item" and c != length), None)
            return self.repeat(self.eval(value, frame), self.eval(length, frame))
        return Items(tuple(self.eval(child, frame) for child in node.named_children if child.type != "attribute_item"))

    def repeat(self, value: Value, count: Value) -> Value:
        """``[value; count]``: known elements when the count is known (and not absurd), else a run-time length."""
        if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= MAX_ITEMS:
            self.steps += count
            return Items((value,) * count)
        return OpenVec(value)

    def _tuple(self, node: Node, frame: Frame) -> Value:
        return Items(tuple(self.eval(child, frame) for child in node.named_children))

    def _range(self, node: Node, frame: Frame) -> Value:
        children = node.children
        operator = next((c for c in children if not c.is_named), None)
        if operator is None:
            return UNKNOWN
        start = next((c for c in children if c.is_named and c.end_byte <= operator.start_byte), None)
        end = next((c for c in children if c.is_named and c.start_byte >= operator.end_byte), None)
        return Span(self.eval(start, frame) if start is not None else 0, self.eval(end, frame) if end is not None
                    else UNKNOWN, text(operator) == "..=")

    def _identifier(self, node: Node, frame: Frame) -> Value:
        name = text(node)
        found, value = frame.scope.lookup(name)
        if found:
            return value
        if name == "None":
            return NONE
        return self.const(name)

    def _self(self, node: Node, frame: Frame) -> Value:
        return frame.scope.lookup("self")[1]

    def _path(self, node: Node, frame: Frame) -> Value:
        """``Type::NAME``: an associated const, a unit variant of a config or module enum, ``usize::MAX``."""
        owner, name = self.path_parts(node, frame)
        if owner is None:
            return self._identifier(node.child_by_field_name("name"), frame)
        if (owner, name) == ("usize", "MAX"):
            return shapes.USIZE_MAX
        nn_enum = burn_nn.enum(owner, self.version)
        if nn_enum is not None and owner == nn_enum.config:
            return ConfigVariant(nn_enum.name, name, UNKNOWN)
        declared = self.module_enum(owner)
        if declared is not None:
            return Variant(owner, {name: UNKNOWN})
        return self.const(f"{owner}::{name}")

    def path_parts(self, node: Node, frame: Frame) -> tuple[str | None, str]:
        """``a::B::f`` as (``B``, ``f``), with ``Self`` read as the impl's type."""
        path = node.child_by_field_name("path")
        name = text(node.child_by_field_name("name"))
        if path is None:
            return None, name
        owner = text(path.child_by_field_name("name") if path.type == "scoped_identifier" else path)
        if path.type == "generic_type":
            owner = text(path.child_by_field_name("type"))
        return (frame.owner if owner == "Self" else owner), name

    def const(self, name: str) -> Value:
        """A const of the source, read once (unknown when none or several have the name)."""
        if name in self.consts:
            return self.consts[name]
        found = self.crate.consts.get(name, [])
        self.consts[name] = UNKNOWN  # a const defined by itself reads as unknown, not as a loop
        if len(found) == 1:
            owner = name.rpartition("::")[0] or None
            self.consts[name] = self.eval(found[0].value, Frame(Scope(), owner, found[0].file))
        return self.consts[name]

    def _field(self, node: Node, frame: Frame) -> Value:
        value = self.eval(node.child_by_field_name("value"), frame)
        return self.field_of(value, text(node.child_by_field_name("field")))

    def field_of(self, value: Value, name: str) -> Value:
        if isinstance(value, Items) and name.isdigit():
            index = int(name)
            return value.items[index] if index < len(value.items) else UNKNOWN
        if isinstance(value, Struct):
            return value.fields.get(name, UNKNOWN)
        if isinstance(value, Config):
            return self.config_field(value, name)
        return UNKNOWN

    def config_field(self, config: Config, name: str) -> Value:
        """A config's field: set by the code, else its ``#[config(default)]`` (the source's or Burn's), else unknown."""
        if name in config.fields:
            return config.fields[name]
        nn_module = burn_nn.config(config.name, self.version)
        if nn_module is not None:
            return nn_module.defaults.get(name, UNKNOWN)
        declared = self.unique(config.name)
        for field in declared.fields if declared is not None else ():
            if field.name == name and field.default is not None:
                return self.eval(field.default, Frame(Scope(), config.name, declared.file))
            if field.name == name and field.type is not None and field.type.name == "Option" and not field.has_default:
                return NONE
        return UNKNOWN

    def _index(self, node: Node, frame: Frame) -> Value:
        parts = node.named_children
        if len(parts) != 2:
            return UNKNOWN
        value, index = self.eval(parts[0], frame), self.eval(parts[1], frame)
        if isinstance(value, Items) and isinstance(index, int) and not isinstance(index, bool):
            return value.items[index] if 0 <= index < len(value.items) else UNKNOWN
        if isinstance(value, OpenVec):
            return value.element
        return UNKNOWN

    def _block(self, node: Node, frame: Frame) -> Value:
        return self.block(node, frame)

    def _if(self, node: Node, frame: Frame) -> Value:
        condition = node.child_by_field_name("condition")
        decided = self.eval(condition, frame) if condition is not None and condition.type != "let_condition" else UNKNOWN
        consequence, alternative = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
        other = alternative.named_children[0] if alternative is not None and alternative.named_child_count else None
        if decided is True:
            return self.eval(consequence, frame)
        if decided is False:
            return self.eval(other, frame) if other is not None else ()
        return self.either([lambda f: self.eval(consequence, f),
                            lambda f: self.eval(other, f) if other is not None else ()], frame)

    def either(self, ways: list[Callable[[Frame], Value]], frame: Frame) -> Value:
        """Read each way in a branch of its own, then join their values and what each wrote outside."""
        values, writes = [], []
        for way in ways:
            branch = Scope(frame.scope, isolated=True)
            values.append(way(frame.within(branch)))
            writes.append(branch.overlay or {})
        for name in {n for written in writes for n in written}:
            before = frame.scope.lookup(name)[1]
            frame.scope.assign(name, join_all([written.get(name, before) for written in writes]))
        return join_all(values)

    def _match(self, node: Node, frame: Frame) -> Value:
        self.eval(node.child_by_field_name("value"), frame)
        body = node.child_by_field_name("body")
        arms = [arm.child_by_field_name("value") for arm in body.named_children if arm.type == "match_arm"] \
            if body is not None else []
        return self.either([lambda f, arm=arm: self.eval(arm, f) for arm in arms], frame) if arms else UNKNOWN

    def _return(self, node: Node, frame: Frame) -> Value:
        raise _Return(self.eval(node.named_children[0], frame) if node.named_child_count else ())

    def _assign(self, node: Node, frame: Frame) -> Value:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        value = self.eval(right, frame)
        if node.type == "compound_assignment_expr":
            operator = text(node.child_by_field_name("operator")).rstrip("=")
            value = shapes.arithmetic(operator, self.eval(left, frame), value)
        self.store(left, value, frame)
        return ()

    def store(self, target: Node | None, value: Value, frame: Frame) -> None:
        """``x = value`` or ``x.field = value`` (a config or struct held in a variable, ``self`` included)."""
        if target is None:
            return
        if target.type == "identifier":
            frame.scope.assign(text(target), value)
        elif target.type == "field_expression":
            holder = target.child_by_field_name("value")
            current = self.eval(holder, frame)
            name = text(target.child_by_field_name("field"))
            if isinstance(current, Config):
                updated: Value = current.with_field(name, value)
            elif isinstance(current, Struct):
                updated = Struct(current.name, {**current.fields, name: value})
            else:
                return
            if holder is not None and holder.type == "self":
                frame.scope.assign("self", updated)
            else:
                self.store(holder, updated, frame)

    def _for(self, node: Node, frame: Frame) -> Value:
        over = self.eval(node.child_by_field_name("value"), frame)
        pattern, body = node.child_by_field_name("pattern"), node.child_by_field_name("body")
        elements = self.elements(over)
        if elements is None:
            self.loop_of_unknown_length(lambda f: self.loop_body(pattern, UNKNOWN, body, f), frame)
            return ()
        for element in elements:
            self.loop_body(pattern, element, body, frame)
        return ()

    def loop_body(self, pattern: Node | None, element: Value, body: Node | None, frame: Frame) -> Value:
        scope = Scope(frame.scope)
        self.bind(pattern, element, scope)
        return self.eval(body, frame.within(scope))

    def _loop(self, node: Node, frame: Frame) -> Value:
        body = node.child_by_field_name("body")
        self.loop_of_unknown_length(lambda f: self.eval(body, f), frame)
        return UNKNOWN

    def loop_of_unknown_length(self, body: Callable[[Frame], Value], frame: Frame) -> None:
        """A loop whose count is set at run time: its body read once; a ``Vec`` it pushes to gets a run-time length."""
        branch = Scope(frame.scope, isolated=True)
        body(frame.within(branch))
        for name, after in (branch.overlay or {}).items():
            frame.scope.assign(name, _grown(frame.scope.lookup(name)[1], after))

    def elements(self, over: Value) -> list[Value] | None:
        """What a ``for`` or ``map`` walks through, when its length is known."""
        if isinstance(over, Span):
            length = over.length
            if length is None or length > MAX_ITEMS or not isinstance(over.start, int):
                return None
            self.steps += length
            return [over.start + i for i in range(length)]
        if isinstance(over, Items):
            return list(over.items)
        return None

    def _closure(self, node: Node, frame: Frame) -> Value:
        parameters = node.child_by_field_name("parameters")
        patterns = tuple(parameter.child_by_field_name("pattern") if parameter.type == "parameter" else parameter
                         for parameter in (parameters.named_children if parameters is not None else ()))
        return Closure(patterns, node.child_by_field_name("body"), frame)

    def apply(self, closure: Closure, args: list[Value]) -> Value:
        defining: Frame = closure.frame
        scope = Scope(defining.scope)
        for pattern, value in zip(closure.params, args):
            self.bind(pattern, value, scope)
        try:
            return self.eval(closure.body, defining.within(scope))
        except _Return as returned:
            return returned.value

    def _struct(self, node: Node, frame: Frame) -> Value:
        name = _type_name(node.child_by_field_name("name"))
        name = frame.owner or name if name == "Self" else name
        fields: dict[str, Value] = {}
        base: Value = UNKNOWN
        body = node.child_by_field_name("body")
        for child in body.named_children if body is not None else ():
            if child.type == "field_initializer":
                fields[text(child.child_by_field_name("field"))] = self.eval(child.child_by_field_name("value"), frame)
            elif child.type == "shorthand_field_initializer":
                fields[text(child)] = self._identifier(child.named_children[0] if child.named_child_count else child,
                                                       frame)
            elif child.type == "base_field_initializer":
                base = self.eval(child.named_children[0] if child.named_child_count else None, frame)
        if burn_nn.config(name, self.version) is not None or self.is_config(name):
            inherited = dict(base.fields) if isinstance(base, Config) and base.name == name else {}
            return Config(name, {**inherited, **fields})
        if isinstance(base, Struct) and base.name == name:
            fields = {**base.fields, **fields}
        return Struct(name, fields)

    def _macro(self, node: Node, frame: Frame) -> Value:
        """``vec![a, b]`` and ``vec![x; n]`` (their tokens read as an array); any other macro is unknown."""
        name = text(node.child_by_field_name("macro"))
        tokens = next((c for c in node.named_children if c.type == "token_tree"), None)
        if name != "vec" or tokens is None:
            return UNKNOWN
        inner = text(tokens)[1:-1]
        parsed = parse_expression(f"[{inner}]")
        if parsed is None:
            return UNKNOWN
        value = self.eval(parsed, frame)
        return value if isinstance(value, (Items, OpenVec)) else UNKNOWN

    # --- calls ----------------------------------------------------------------------------------------------------
    def _call(self, node: Node, frame: Frame) -> Value:
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        arg_nodes = [a for a in arguments.named_children if a.type != "attribute_item"] if arguments is not None else []
        if function is not None and function.type == "generic_function":
            function = function.child_by_field_name("function")
        if function is None:
            return UNKNOWN
        if function.type == "field_expression":
            return self.method(function.child_by_field_name("value"), text(function.child_by_field_name("field")),
                               arg_nodes, frame)
        args = [self.eval(a, frame) for a in arg_nodes]
        if function.type == "scoped_identifier":
            owner, name = self.path_parts(function, frame)
            return self.path_call(owner, name, args, frame) if owner is not None else self.free_call(name, args, frame)
        if function.type == "identifier":
            return self.free_call(text(function), args, frame)
        return UNKNOWN

    def free_call(self, name: str, args: list[Value], frame: Frame) -> Value:
        found, value = frame.scope.lookup(name)
        if found and isinstance(value, Closure):
            return self.apply(value, args)
        if name in ("Some", "Ok"):
            return Maybe(args[0] if args else UNKNOWN, True) if name == "Some" else (args[0] if args else UNKNOWN)
        functions = self.crate.functions.get((None, name), [])
        if functions:
            return join_all([self.call(f, args, UNKNOWN) for f in functions])
        declared = self.unique(name)
        if declared is not None and declared.kind == "struct":  # a tuple struct: Block(linear)
            return Struct(name, {str(i): a for i, a in enumerate(args)})
        return UNKNOWN

    def path_call(self, owner: str, name: str, args: list[Value], frame: Frame) -> Value:
        """``Type::function(args)``: Burn's configs and tensors, the source's own functions and enum variants."""
        if name in _PASS_THROUGH.get(owner, ()):
            return self.tensor_of(args)
        if owner == "Vec" and name in ("new", "with_capacity"):
            return Items(())
        if owner == "Tensor" and name in _TENSOR_MAKERS:
            return _shaped(args[0] if args else UNKNOWN)
        nn_module = burn_nn.config(owner, self.version)
        if nn_module is not None and name == "new":
            return Config(owner, dict(zip(nn_module.required, args)))
        nn_enum = burn_nn.enum(owner, self.version)
        if nn_enum is not None and owner == nn_enum.config:
            return ConfigVariant(nn_enum.name, name, args[0] if args else UNKNOWN)
        functions = self.crate.functions.get((owner, name), [])
        if functions:
            return join_all([self.call(f, args[1:] if f.takes_self else args, args[0] if f.takes_self and args
                                       else UNKNOWN) for f in functions])
        if name == "new" and self.is_config(owner):
            return self.new_config(owner, args)
        if self.module_enum(owner) is not None:
            return Variant(owner, {name: args[0] if args else UNKNOWN})
        return UNKNOWN

    def new_config(self, name: str, args: list[Value]) -> Config:
        """``MyConfig::new(a, b)``: the fields without a default (nor ``Option``), in order, take the arguments."""
        declared = self.unique(name)
        required = [f.name for f in declared.fields if not f.has_default
                    and not (f.type is not None and f.type.name == "Option")] if declared is not None else []
        return Config(name, dict(zip(required, args)))

    def tensor_of(self, args: list[Value]) -> Value:
        """``Param::from_tensor(t)``, ``RunningState::new(t)``, ``Some(x)``: the value passed on."""
        return next((a for a in args if isinstance(a, Shaped)), args[-1] if args else UNKNOWN)

    def method(self, receiver_node: Node | None, name: str, arg_nodes: list[Node], frame: Frame) -> Value:
        receiver = self.eval(receiver_node, frame)
        args = [self.eval(a, frame) for a in arg_nodes]
        if name == "push" and receiver_node is not None and receiver_node.type == "identifier" and args:
            if isinstance(receiver, Items):
                self.steps += len(receiver.items)  # the copy: pushes in a loop cost what they copy
                frame.scope.assign(text(receiver_node), Items(receiver.items + (args[0],)))
            elif isinstance(receiver, OpenVec):
                frame.scope.assign(text(receiver_node), OpenVec(join(receiver.element, args[0])))
            return ()
        if name == "extend" and receiver_node is not None and receiver_node.type == "identifier" and args:
            grown = self.collect(args[0])
            if isinstance(receiver, Items) and isinstance(grown, Items):
                frame.scope.assign(text(receiver_node), Items(receiver.items + grown.items))
            else:
                frame.scope.assign(text(receiver_node), OpenVec(join(as_vec(receiver).element, as_vec(grown).element))
                                   if isinstance(receiver, (Items, OpenVec)) and isinstance(grown, (Items, OpenVec))
                                   else UNKNOWN)
            return ()
        return self.call_method(receiver, name, args, frame)

    def call_method(self, receiver: Value, name: str, args: list[Value], frame: Frame) -> Value:
        if isinstance(receiver, Config):
            return self.config_method(receiver, name, args)
        if isinstance(receiver, ConfigVariant) and name == "init":
            payload = receiver.payload
            module = self.call_method(payload, "init", [], frame) if isinstance(payload, Config) else UNKNOWN
            return Variant(receiver.enum, {receiver.variant: module})
        if isinstance(receiver, (Span, Items, OpenVec, Mapped)) and name in ("map", "collect", "len", "product", "sum",
                                                                              "rev", "enumerate", "zip"):
            return self.sequence_method(receiver, name, args)
        if isinstance(receiver, Maybe):
            return self.option_method(receiver, name, args)
        if isinstance(receiver, int) and not isinstance(receiver, bool):
            return _int_method(receiver, name, args)
        if name in _SAME:
            return receiver
        if isinstance(receiver, (Struct, Variant)):
            owner = receiver.name if isinstance(receiver, Struct) else receiver.enum
            functions = self.crate.functions.get((owner, name), [])
            return join_all([self.call(f, args, receiver) for f in functions]) if functions else UNKNOWN
        if name in _TENSOR_MAKERS and args:
            return _shaped(args[0])  # Initializer::Zeros.init([a, b], device) and the like
        if isinstance(receiver, Shaped) and name == "reshape" and args:
            return _shaped(args[0])
        return UNKNOWN

    def config_method(self, config: Config, name: str, args: list[Value]) -> Value:
        """``with_<field>(v)`` sets a field; ``init`` builds Burn's module; the source's own methods are followed."""
        if name.startswith("with_") and len(args) == 1:
            return config.with_field(name[5:], args[0])
        if name in ("clone", "into"):
            return config
        nn_module = burn_nn.config(config.name, self.version)
        if nn_module is not None:
            return Built(nn_module.name, config) if name == "init" else UNKNOWN
        functions = self.crate.functions.get((config.name, name), [])
        return join_all([self.call(f, args, config) for f in functions]) if functions else UNKNOWN

    def sequence_method(self, receiver: Value, name: str, args: list[Value]) -> Value:
        if name == "map" and args and isinstance(args[0], Closure):
            return Mapped(receiver, args[0]) if not isinstance(receiver, Mapped) \
                else Mapped(self.collect(receiver), args[0])
        if name == "collect":
            return self.collect(receiver)
        if name == "len":
            elements = self.elements(receiver) if not isinstance(receiver, Mapped) else self.elements(receiver.over)
            return len(elements) if elements is not None else UNKNOWN
        if name == "rev":
            return receiver
        if name == "enumerate":
            elements = self.elements(receiver)
            if elements is not None:
                return Items(tuple(Items((i, e)) for i, e in enumerate(elements)))
            return OpenVec(Items((UNKNOWN, receiver.element if isinstance(receiver, OpenVec) else UNKNOWN)))
        if name in ("product", "sum") and isinstance(receiver, Items):
            return product(receiver) if name == "product" else _sum(receiver)
        return UNKNOWN

    def collect(self, value: Value) -> Value:
        """``iter.map(f).collect()``: a ``Vec`` of known length when the iterator's is known, else one element read."""
        if not isinstance(value, Mapped):
            return value if isinstance(value, (Items, OpenVec)) else UNKNOWN
        elements = self.elements(value.over)
        if elements is None:
            element = value.over.element if isinstance(value.over, OpenVec) else UNKNOWN
            return OpenVec(self.apply(value.closure, [element]))
        return Items(tuple(self.apply(value.closure, [e]) for e in elements))

    def option_method(self, option: Maybe, name: str, args: list[Value]) -> Value:
        if name in ("unwrap", "expect", "unwrap_or_default"):
            return option.value
        if name == "is_some":
            return option.present if option.present is not None else UNKNOWN
        if name == "map" and args and isinstance(args[0], Closure):
            return Maybe(self.apply(args[0], [option.value]), option.present)
        return option if name in _SAME else UNKNOWN

    # --- the source's types ---------------------------------------------------------------------------------
    def unique(self, name: str) -> Declared | None:
        """The struct or enum ``name`` when the source declares exactly one (modules first)."""
        found = self.crate.declared.get(name, [])
        modules = [d for d in found if d.is_module]
        chosen = modules or found
        return chosen[0] if len(chosen) == 1 else None

    def is_config(self, name: str) -> bool:
        declared = self.unique(name)
        return declared is not None and declared.is_config

    def module_enum(self, name: str | None) -> Declared | None:
        declared = self.unique(name) if name else None
        return declared if declared is not None and declared.is_module and declared.kind == "enum" else None

    _HANDLERS: dict[str, Callable[["Reader", Node, Frame], Value]] = {}


def _type_name(node: Node | None) -> str:
    """``a::B``, ``B<T>`` and ``B`` as ``B``."""
    if node is not None and node.type == "scoped_type_identifier":
        return text(node.child_by_field_name("name"))
    if node is not None and node.type == "generic_type":
        return _type_name(node.child_by_field_name("type"))
    return text(node)


def _grown(before: Value, after: Value) -> Value:
    """A variable after a loop of run-time length: a ``Vec`` it pushed to has a run-time length, whose elements are
    like those pushed; anything else it changed is what both the loop's start and its body agree on."""
    if isinstance(before, Items) and isinstance(after, Items):
        pushed = after.items[len(before.items):] if after.items[:len(before.items)] == before.items else after.items
        return OpenVec(join_all(before.items + pushed)) if pushed else before
    if isinstance(before, (Items, OpenVec)) and isinstance(after, (Items, OpenVec)):
        return OpenVec(join(as_vec(before).element, as_vec(after).element))
    return join(before, after)


def _returned(function: Function) -> Any:
    """The type a function returns, seen through ``Result<T, E>`` and ``Option<T>``."""
    returned = function.returns
    while returned is not None and returned.name in ("Result", "Option") and returned.args:
        returned = returned.args[0]
    return returned


def _identifiers(pattern: Node) -> Iterable[str]:
    stack = [pattern]
    while stack:
        node = stack.pop()
        if node.type == "identifier":
            yield text(node)
        stack.extend(node.named_children)


def _rust_int(literal: str) -> Value:
    """An integer literal as Rust reads it (``1_000``, ``0x10``, ``64usize``), unknown when absurd."""
    digits = literal.replace("_", "").lower()
    for suffix in _INT_SUFFIXES:
        if digits.endswith(suffix) and not (digits.startswith("0x") and suffix in ("u8", "i8")):
            digits = digits[: -len(suffix)]
            break
    if len(digits) > 66:
        return UNKNOWN
    try:
        base = {"0x": 16, "0o": 8, "0b": 2}.get(digits[:2], 10)
        value = int(digits[2:] if base != 10 else digits, base)
    except ValueError:
        return UNKNOWN
    return value if value <= shapes.USIZE_MAX else UNKNOWN


def _shaped(dims: Value) -> Value:
    return Shaped(dims.items) if isinstance(dims, Items) else Shaped(()) if dims is UNKNOWN else UNKNOWN


def _sum(values: Items) -> Value:
    total: Value = 0
    for value in values.items:
        total = shapes.arithmetic("+", total, value)
    return total


def _int_method(value: int, name: str, args: list[Value]) -> Value:
    other = args[0] if args else UNKNOWN
    if not isinstance(other, int) or isinstance(other, bool):
        return value if name in _SAME else UNKNOWN
    if name == "pow":
        return value ** other if 0 <= other and (value in (0, 1) or other * max(1, value.bit_length()) <= 64) \
            else UNKNOWN
    if name in ("max", "min"):
        return max(value, other) if name == "max" else min(value, other)
    if name == "div_ceil":
        return -(-value // other) if other > 0 else UNKNOWN
    if name == "saturating_sub":
        return max(0, value - other)
    return UNKNOWN


Reader._HANDLERS = {
    "integer_literal": Reader._integer, "float_literal": Reader._float, "boolean_literal": Reader._boolean,
    "string_literal": Reader._string, "raw_string_literal": Reader._string,
    "parenthesized_expression": Reader._first, "reference_expression": Reader._first, "try_expression": Reader._first,
    "unary_expression": Reader._unary, "binary_expression": Reader._binary, "type_cast_expression": Reader._cast,
    "array_expression": Reader._array, "tuple_expression": Reader._tuple, "range_expression": Reader._range,
    "identifier": Reader._identifier, "self": Reader._self, "scoped_identifier": Reader._path,
    "field_expression": Reader._field, "index_expression": Reader._index, "block": Reader._block,
    "unsafe_block": Reader._first, "if_expression": Reader._if, "match_expression": Reader._match,
    "return_expression": Reader._return, "assignment_expression": Reader._assign,
    "compound_assignment_expr": Reader._assign, "for_expression": Reader._for, "while_expression": Reader._loop,
    "loop_expression": Reader._loop, "closure_expression": Reader._closure, "struct_expression": Reader._struct,
    "macro_invocation": Reader._macro, "call_expression": Reader._call, "let_declaration": Reader.statement,
    "expression_statement": Reader.statement,
}
