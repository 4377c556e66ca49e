"""A Burn model's Rust source read with tree-sitter's Rust grammar: the declarations a template is made from.

Nothing is compiled, expanded or run: the files are parsed (a ``.rs`` file, or every ``.rs`` file under a
folder such as a crate's ``src/``) and their items collected by name: the ``#[derive(Module)]`` structs and
enums with their fields, the ``#[derive(Config)]`` structs with their defaults, consts, and the functions
(free, or in an ``impl`` of some type) whose bodies the constructor reader follows. ``#[cfg(test)]`` modules
are left out (their structs are test fixtures, not the model). Limits keep a hostile folder from costing
more than reading a large crate would: the bytes read in all, the files, and how deeply items nest.
"""

from __future__ import annotations

import os
import stat
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from ...errors import FormatError
from ...sources.regular_files import open_regular

SUFFIX = ".rs"
MAX_SOURCE_BYTES = 4 << 20  # all files together: a model crate's src/ is a few hundred KiB; parsing is linear in it
MAX_FILES = 2000
MAX_ITEM_NESTING = 32  # inline `mod` blocks inside each other
MAX_TYPE_NESTING = 32  # generic types inside each other (Vec<Option<Vec<...>>>): deeper reads as no type
SKIPPED_FOLDERS = frozenset({"target", ".git"})  # cargo's build output and git's objects: never the model's source

Node = Any  # a tree_sitter.Node


@dataclass(frozen=True, eq=False)
class TypeRef:
    """A type as written: ``nn::conv::Conv2d<B>`` is ``Conv2d`` with argument ``B``; ``[T; N]`` is ``[]`` with
    ``T`` and the length expression ``N``; ``(A, B)`` is ``()``. ``consts`` holds const arguments (``2`` in
    ``Tensor<B, 2>``) as expression nodes."""

    name: str
    args: tuple["TypeRef", ...] = ()
    consts: tuple[Node, ...] = ()

    def describe(self) -> str:
        """The type for a message, rebuilt from its names (never the raw text, which may hold comments)."""
        if self.name == "[]":
            return f"[{self.args[0].describe()}; N]" if self.args else "[]"
        if self.name == "()":
            return "(" + ", ".join(a.describe() for a in self.args) + ")"
        inner = [a.describe() for a in self.args] + ["N"] * len(self.consts)
        return self.name + (f"<{', '.join(inner)}>" if inner else "")


@dataclass(frozen=True, eq=False)
class Field:
    """A struct's field (or an enum's variant, with its one payload type; None for a unit variant)."""

    name: str
    type: TypeRef | None
    skipped: bool
    line: int
    default: Node | None = None  # a config field's #[config(default = ...)], parsed as an expression
    has_default: bool = False


@dataclass(frozen=True, eq=False)
class Declared:
    """A struct or enum of the source: what it derives, its fields or variants, and where it is."""

    name: str
    kind: str  # "struct" or "enum"
    derives: frozenset[str]
    fields: tuple[Field, ...]
    generics: tuple[str, ...]
    file: Path
    line: int
    broken: bool  # tree-sitter found a syntax error inside it

    @property
    def is_module(self) -> bool:
        return "Module" in self.derives

    @property
    def is_config(self) -> bool:
        return "Config" in self.derives

    @property
    def where(self) -> str:
        return f"{self.file.name}:{self.line}"


@dataclass(frozen=True, eq=False)
class Function:
    """A function: its owner (the type of the ``impl`` it is in, None for a free function), its parameters'
    names (None for a pattern the reader does not bind), whether it takes ``self``, and its body."""

    owner: str | None
    name: str
    params: tuple[str | None, ...]
    takes_self: bool
    returns: TypeRef | None
    body: Node
    file: Path
    line: int


@dataclass(frozen=True, eq=False)
class Const:
    value: Node
    file: Path


@dataclass
class Crate:
    """Every item the files declare, by name (a name declared twice keeps both: the reader says so if it matters)."""

    files: list[Path] = field(default_factory=list)
    declared: dict[str, list[Declared]] = field(default_factory=lambda: defaultdict(list))
    functions: dict[tuple[str | None, str], list[Function]] = field(default_factory=lambda: defaultdict(list))
    consts: dict[str, list[Const]] = field(default_factory=lambda: defaultdict(list))
    trees: list[Any] = field(default_factory=list)  # the parse trees, kept alive while their nodes are used

    def modules(self) -> Iterator[Declared]:
        for found in self.declared.values():
            yield from (d for d in found if d.is_module)


def source_files(root: Path) -> list[Path]:
    """``root`` itself when it is a file, else every ``.rs`` file under it (links not followed), in path order."""
    try:
        mode = root.stat().st_mode
    except OSError as exc:
        raise FormatError(root, f"cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISREG(mode):
        return [root]
    if not stat.S_ISDIR(mode):
        raise FormatError(root, "is neither a .rs file nor a folder")
    found: list[Path] = []
    for folder, subfolders, names in os.walk(root, onerror=None, followlinks=False):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS)
        found += [Path(folder, n) for n in sorted(names) if n.endswith(SUFFIX) and Path(folder, n).is_file()
                  and not Path(folder, n).is_symlink()]
        if len(found) > MAX_FILES:
            raise FormatError(root, f"holds more than {MAX_FILES:,} .rs files: give the folder of the model's crate "
                                    "(its src/) or the file that declares the model")
    if not found:
        raise FormatError(root, "holds no .rs file")
    return sorted(found)


def read_crate(root: Path) -> Crate:
    """Parse every source file under ``root`` and collect its items."""
    parser = _parser()
    crate = Crate()
    budget = MAX_SOURCE_BYTES
    for path in source_files(root):
        text = _read(path, root, budget)
        budget -= len(text)
        tree = parser.parse(text)
        crate.files.append(path)
        crate.trees.append(tree)
        _collect(tree.root_node, path, crate, owner=None, depth=0)
    return crate


def _read(path: Path, root: Path, budget: int) -> bytes:
    """A source file's bytes, at most ``budget`` (a regular file only: a FIFO swapped in would never end)."""
    try:
        fd, _ = open_regular(path)
        with os.fdopen(fd, "rb") as handle:
            text = handle.read(budget + 1)
    except OSError as exc:
        raise FormatError(path, f"cannot be read ({exc.strerror or exc})") from None
    if len(text) > budget:
        raise FormatError(root, f"holds more than {MAX_SOURCE_BYTES >> 20} MiB of Rust source: give the model's own "
                                "file or its crate's src/ folder")
    return text


@lru_cache(maxsize=1)
def _language() -> Any:
    import tree_sitter_rust
    from tree_sitter import Language  # here: only a Rust template needs tree-sitter
    return Language(tree_sitter_rust.language())


def _parser() -> Any:
    """A parser of its own for each use: a template may be read on several worker threads at once."""
    from tree_sitter import Parser
    return Parser(_language())


def parse_expression(text: str) -> Node | None:
    """An expression from text (a ``#[config(default = "...")]`` string or a macro's tokens), or None."""
    parsed = _parsed_expression(text)
    return parsed[1] if parsed is not None else None


@lru_cache(maxsize=4096)  # each parsed once; the tree is kept with its node, which refers into it
def _parsed_expression(text: str) -> tuple[Any, Node] | None:
    tree = _parser().parse(("const _: () = " + text + ";").encode("utf-8", "replace"))
    item = tree.root_node.named_children[0] if tree.root_node.named_child_count else None
    if item is None or item.type != "const_item" or tree.root_node.has_error:
        return None
    return tree, item.child_by_field_name("value")


def line_of(node: Node) -> int:
    return node.start_point[0] + 1


def text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


# --- items ------------------------------------------------------------------------------------------------------
def _collect(container: Node, path: Path, crate: Crate, owner: str | None, depth: int) -> None:
    """The items of a file, an inline module or an impl block (attributes apply to the item after them)."""
    if depth > MAX_ITEM_NESTING:
        raise FormatError(path, f"nests modules more than {MAX_ITEM_NESTING} deep (line {line_of(container)})")
    attributes: list[Node] = []
    for node in container.named_children:
        if node.type == "attribute_item":
            attributes.append(node)
            continue
        if node.type in ("line_comment", "block_comment"):
            continue
        _item(node, attributes, path, crate, owner, depth)
        attributes = []


def _item(node: Node, attributes: list[Node], path: Path, crate: Crate, owner: str | None, depth: int) -> None:
    kind = node.type
    if kind == "mod_item" and not _is_test_only(attributes):
        body = node.child_by_field_name("body")
        if body is not None:
            _collect(body, path, crate, None, depth + 1)
    elif kind in ("struct_item", "enum_item"):
        declared = _declared(node, attributes, path)
        if declared is not None:
            crate.declared[declared.name].append(declared)
    elif kind == "impl_item":
        target = _type(node.child_by_field_name("type"))
        body = node.child_by_field_name("body")
        if body is not None and target is not None:
            _collect(body, path, crate, target.name, depth + 1)
    elif kind == "function_item":
        function = _function(node, path, owner)
        if function is not None:
            crate.functions[(owner, function.name)].append(function)
    elif kind in ("const_item", "static_item"):
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is not None and value is not None:
            crate.consts[f"{owner}::{text(name)}" if owner else text(name)].append(Const(value, path))


def _is_test_only(attributes: list[Node]) -> bool:
    return any(_attribute_path(a) == "cfg" and "test" in _attribute_words(a) for a in attributes)


def _attribute_path(item: Node) -> str:
    attribute = item.named_children[0] if item.named_child_count else None
    path = attribute.named_children[0] if attribute is not None and attribute.named_child_count else None
    return text(path)


def _attribute_arguments(item: Node) -> Node | None:
    attribute = item.named_children[0] if item.named_child_count else None
    return attribute.child_by_field_name("arguments") if attribute is not None else None


def _attribute_words(item: Node) -> set[str]:
    """The identifiers in an attribute's arguments: ``#[derive(Module, Debug)]`` gives {Module, Debug}."""
    arguments = _attribute_arguments(item)
    words, stack = set(), [arguments] if arguments is not None else []
    while stack:
        node = stack.pop()
        if node.type == "identifier":
            words.add(text(node))
        stack.extend(node.named_children)
    return words


def _declared(node: Node, attributes: list[Node], path: Path) -> Declared | None:
    name = node.child_by_field_name("name")
    if name is None:
        return None
    derives = frozenset(w for a in attributes if _attribute_path(a) == "derive" for w in _attribute_words(a))
    generics = node.child_by_field_name("type_parameters")
    params = tuple(text(p.child_by_field_name("name")) for p in generics.named_children
                   if p.type == "type_parameter") if generics is not None else ()
    body = node.child_by_field_name("body")
    kind = "struct" if node.type == "struct_item" else "enum"
    fields = _variants(body) if kind == "enum" else _fields(body)
    return Declared(text(name), kind, derives, fields, params, path, line_of(node), node.has_error)


def _fields(body: Node | None) -> tuple[Field, ...]:
    if body is None:
        return ()
    found, attributes, position = [], [], 0
    for child in body.named_children:
        if child.type == "attribute_item":
            attributes.append(child)
            continue
        if child.type == "field_declaration":
            name = text(child.child_by_field_name("name"))
        elif child.type in ("primitive_type", "type_identifier", "generic_type", "scoped_type_identifier",
                            "array_type", "tuple_type", "reference_type"):  # a tuple struct's field
            name, position = str(position), position + 1
        else:
            continue
        type_node = child.child_by_field_name("type") if child.type == "field_declaration" else child
        default, has_default = _config_default(attributes)
        skipped = any(_attribute_path(a) == "module" and "skip" in _attribute_words(a) for a in attributes)
        found.append(Field(name, _type(type_node), skipped, line_of(child), default, has_default))
        attributes = []
    return tuple(found)


def _variants(body: Node | None) -> tuple[Field, ...]:
    if body is None:
        return ()
    found = []
    for variant in body.named_children:
        if variant.type != "enum_variant":
            continue
        payload = variant.child_by_field_name("body")
        types = [c for c in payload.named_children if c.type != "attribute_item"] if payload is not None else []
        type_ref = _type(types[0]) if len(types) == 1 and payload.type == "ordered_field_declaration_list" else None
        found.append(Field(text(variant.child_by_field_name("name")), type_ref, False, line_of(variant)))
    return tuple(found)


def _config_default(attributes: list[Node]) -> tuple[Node | None, bool]:
    """A ``#[config(default = ...)]``'s expression: a string's content is Rust code (burn-derive parses it),
    anything else is the literal itself. (None, True) when it cannot be read: a default is there, unknown."""
    for attribute in attributes:
        if _attribute_path(attribute) != "config":
            continue
        arguments = _attribute_arguments(attribute)
        words = text(arguments).strip()[1:-1] if arguments is not None else ""
        key, sep, value = words.partition("=")
        if not sep or key.strip() != "default":
            continue
        value = value.strip()
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        return parse_expression(value), True
    return None, False


def _function(node: Node, path: Path, owner: str | None) -> Function | None:
    name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
    parameters = node.child_by_field_name("parameters")
    if name is None or body is None or parameters is None:
        return None
    params: list[str | None] = []
    takes_self = False
    for parameter in parameters.named_children:
        if parameter.type == "self_parameter":
            takes_self = True
        elif parameter.type == "parameter":
            pattern = parameter.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "mut_pattern" and pattern.named_child_count:
                pattern = pattern.named_children[0]
            params.append(text(pattern) if pattern is not None and pattern.type == "identifier" else None)
    returns = node.child_by_field_name("return_type")
    return Function(owner, text(name), tuple(params), takes_self, _type(returns) if returns is not None else None,
                    body, path, line_of(node))


def _type(node: Node | None, depth: int = 0) -> TypeRef | None:
    """A type node as a ``TypeRef`` (``?`` for what a model's field cannot be: a function or trait type)."""
    if node is None:
        return None
    if depth > MAX_TYPE_NESTING:
        return TypeRef("?")
    kind, depth = node.type, depth + 1
    if kind in ("type_identifier", "primitive_type"):
        return TypeRef(text(node))
    if kind == "scoped_type_identifier":
        return TypeRef(text(node.child_by_field_name("name")))
    if kind == "generic_type":
        base = _type(node.child_by_field_name("type"), depth)
        arguments = node.child_by_field_name("type_arguments")
        args, consts = [], []
        for argument in arguments.named_children if arguments is not None else ():
            parsed = _type(argument, depth) if argument.type not in ("integer_literal", "block", "identifier") else None
            if parsed is not None:
                args.append(parsed)
            elif argument.type in ("integer_literal", "block", "identifier"):
                consts.append(argument)
        return TypeRef(base.name if base is not None else "?", tuple(args), tuple(consts))
    if kind == "array_type":
        element = _type(node.child_by_field_name("element"), depth)
        length = node.child_by_field_name("length")
        return TypeRef("[]", (element,) if element is not None else (), (length,) if length is not None else ())
    if kind == "tuple_type":
        return TypeRef("()", tuple(t for t in (_type(c, depth) for c in node.named_children) if t is not None))
    if kind == "unit_type":
        return TypeRef("()")
    if kind == "reference_type":
        return _type(node.child_by_field_name("type"), depth)
    return TypeRef("?")
