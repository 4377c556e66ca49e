"""The tensors a Burn model saves, read from its struct declarations and what its constructor builds.

The walk follows the root struct's fields as Burn's ``#[derive(Module)]`` visits them (burn-derive
``module/codegen_struct.rs``, ``codegen_enum.rs``; burn-core ``module/param/primitive.rs``): a field's name
is a path segment, a nested module's tensors sit under it, an enum adds its variant's name, a ``Vec`` or
array its indices (``.0``, ``.1``, ...), a tuple its positions, an ``Option`` nothing; ``Param`` and
``RunningState`` tensors are saved, raw ``Tensor`` fields are not, nor ``#[module(skip)]`` fields. What the
constructor leaves open stays open: a ``Vec`` of run-time length is one family of names with ``*`` for its
index, an ``Option`` or enum variant the code does not settle is "optional", a dimension from a config
field is ``RUNTIME_DIM``. A field whose type the source does not declare and Burn's ``nn`` does not have
is refused in one line naming the struct, the field, its file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ... import dtypes
from ...burn_versions import BurnVersion
from ...dtypes import DType
from ...errors import FormatError
from . import burn_nn
from .burn_nn import Param
from .evaluate import Frame, Reader, Scope
from .shapes import OPEN, ShapeError, shape_of
from .syntax import Crate, Declared, Field, TypeRef
from .values import UNKNOWN, Built, Config, Items, Maybe, OpenVec, Shaped, Struct, Value, Variant

MAX_TENSORS = 100_000  # as many as a Burnpack file may hold (engine/formats/burnpack.py)
MAX_NESTING = 64  # modules inside modules
# Types that are never saved: Burn's constants (burn-core module/param/constant.rs:135-160, 167, 226, 287 at
# v0.21.0): numbers, flags, text, raw tensors (not persisted), PhantomData, Ignored.
_NOT_SAVED = frozenset({"bool", "char", "str", "String", "f32", "f64", "bf16", "f16", "usize", "u64", "u32", "u16",
                        "u8", "u128", "isize", "i64", "i32", "i16", "i8", "i128", "Tensor", "PhantomData", "Ignored"})
_BACKEND = "B"
_DTYPES = {"Int": dtypes.I64, "Bool": dtypes.BOOL}  # Burn's default int element is i64 (ndarray, tch); float F32


@dataclass(frozen=True)
class TemplateTensor:
    """One tensor the model saves: its dotted name (``*`` segments: indices of a run-time-length Vec), its shape
    (``RUNTIME_DIM`` where set at run time), dtype, whether the model may lack it, and its module's Burn type."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    optional: bool
    module: str


@dataclass(frozen=True)
class ModelTemplate:
    """A model read from source: the struct it is, its tensors in Burn's order, and the kind of each nn module
    (by module path, ``*`` as above) in Store Studio's terms (``engine.surgery.modules.KINDS``)."""

    root: Declared
    version: BurnVersion
    tensors: tuple[TemplateTensor, ...]
    kinds: dict[str, str] = field(default_factory=dict)

    @property
    def rust_type(self) -> str:
        """``Net<B>`` (a generic model) or ``Net`` (Burn 0.22's non-generic modules), as the loader spells it."""
        return self.root.name + (f"<{', '.join(self.root.generics)}>" if self.root.generics else "")


def read_model(crate: Crate, root_path: Path, struct: str | None, version: BurnVersion) -> ModelTemplate:
    """The template of the model ``struct`` (or the source's one top-level module) at Burn ``version``."""
    root = choose_root(crate, root_path, struct)
    reader = Reader(crate, version)
    walk = _Walk(crate, reader, version)
    walk.visit([], TypeRef(root.name), reader.construct(root), False, root, None, 0)
    return ModelTemplate(root, version, tuple(walk.tensors), walk.kinds)


def choose_root(crate: Crate, root_path: Path, struct: str | None) -> Declared:
    """The model's struct: the one named, else the one module no other module holds."""
    modules = list(crate.modules())
    if struct is not None:
        found = [d for d in modules if d.name == struct]
        if len(found) == 1:
            return _usable(found[0])
        problem = "declares it twice" if found else "has no #[derive(Module)] struct or enum of that name"
        raise FormatError(root_path, f"{problem}: {struct} ({_listed(modules)})")
    held = {name for d in modules for f in d.fields if f.type is not None for name in _type_names(f.type)}
    tops = [d for d in modules if d.name not in held] or modules  # every module held by another: a cycle
    if len(tops) == 1:
        return _usable(tops[0])
    if not modules:
        raise FormatError(root_path, "declares no #[derive(Module)] struct or enum (is it the model's source?)")
    raise FormatError(root_path, f"holds {len(tops)} top-level modules ({_listed(tops)}): name the model's struct, "
                                 f"e.g. --template {root_path.name}::{tops[0].name if tops else modules[0].name}")


def _usable(declared: Declared) -> Declared:
    if declared.broken:
        raise FormatError(declared.file, f"line {declared.line}: {declared.kind} {declared.name} does not parse as "
                                         "Rust (a syntax error inside it)")
    return declared


def _listed(declared: list[Declared]) -> str:
    names = [f"{d.name} ({d.where})" for d in declared[:6]]
    return ", ".join(names) + (f" and {len(declared) - 6} more" if len(declared) > 6 else "")


def _type_names(type_ref: TypeRef) -> set[str]:
    found, stack = set(), [type_ref]
    while stack:
        current = stack.pop()
        found.add(current.name)
        stack.extend(current.args)
    return found


class _Walk:
    """One walk of the root struct's fields, gathering its tensors and its nn modules' kinds."""

    def __init__(self, crate: Crate, reader: Reader, version: BurnVersion):
        self.crate, self.reader, self.version = crate, reader, version
        self.tensors: list[TemplateTensor] = []
        self.kinds: dict[str, str] = {}

    def visit(self, path: list[str], type_ref: TypeRef, value: Value, optional: bool, owner: Declared,
              field_: Field | None, depth: int) -> None:
        """Add what a field of type ``type_ref`` holding ``value`` saves under ``path``."""
        if depth > MAX_NESTING:
            raise FormatError(owner.file, f"line {owner.line}: modules nest more than {MAX_NESTING} deep under "
                                          f"{'.'.join(path[:8])}...")
        name, depth = type_ref.name, depth + 1
        if name in _NOT_SAVED or (name == "()" and not type_ref.args):
            return
        if name in ("Vec", "[]", "()"):
            self.sequence(path, type_ref, value, optional, owner, field_, depth)
        elif name == "Option" and type_ref.args:
            self.option(path, type_ref.args[0], value, optional, owner, field_, depth)
        elif name in ("Param", "RunningState") and type_ref.args:
            self.tensor(path, type_ref.args[0], value, optional, owner, field_)
        else:
            self.module(path, type_ref, value, optional, owner, field_, depth)

    def sequence(self, path: list[str], type_ref: TypeRef, value: Value, optional: bool, owner: Declared,
                 field_: Field | None, depth: int) -> None:
        """A ``Vec``, array or tuple: its elements under their indices (``*`` when the length is set at run time)."""
        if type_ref.name == "()":
            items = value.items if isinstance(value, Items) and len(value.items) == len(type_ref.args) else ()
            for i, element_type in enumerate(type_ref.args):
                self.visit([*path, str(i)], element_type, items[i] if items else UNKNOWN, optional, owner, field_, depth)
            return
        if not type_ref.args:
            return
        element_type = type_ref.args[0]
        if type_ref.name == "[]" and not isinstance(value, Items) and type_ref.consts:
            length = self.reader.eval(type_ref.consts[0], Frame(Scope(), owner.name, owner.file))
            value = self.reader.repeat(UNKNOWN, length)
        if isinstance(value, Items) and len(value.items) > 1 and all(e == value.items[0] for e in value.items):
            self.alike(path, element_type, value.items[0], len(value.items), optional, owner, field_, depth)
        elif isinstance(value, Items):
            for i, element in enumerate(value.items):
                self.visit([*path, str(i)], element_type, element, optional, owner, field_, depth)
        else:
            element = value.element if isinstance(value, OpenVec) else UNKNOWN
            self.visit([*path, OPEN], element_type, element, optional, owner, field_, depth)

    def alike(self, path: list[str], element_type: TypeRef, element: Value, count: int, optional: bool, owner: Declared,
              field_: Field | None, depth: int) -> None:
        """``count`` elements built alike (``vec![block; 8]``, ``(0..8).map(|_| Block::new(..))``): the first is
        walked, the others are its tensors under their own index (a long Vec costs its names, not its walks)."""
        start, before = len(self.tensors), set(self.kinds)
        self.visit([*path, "0"], element_type, element, optional, owner, field_, depth)
        first = ".".join([*path, "0"])
        made, kinds = self.tensors[start:], {k: v for k, v in self.kinds.items() if k not in before}
        if len(self.tensors) + len(made) * (count - 1) > MAX_TENSORS:
            raise FormatError(owner.file, f"the model would save more than {MAX_TENSORS:,} tensors")
        for i in range(1, count):
            prefix = ".".join([*path, str(i)])
            self.tensors += [TemplateTensor(prefix + t.name[len(first):], t.shape, t.dtype, t.optional, t.module)
                             for t in made]
            self.kinds.update((prefix + k[len(first):], kind) for k, kind in kinds.items())

    def option(self, path: list[str], inner: TypeRef, value: Value, optional: bool, owner: Declared,
               field_: Field | None, depth: int) -> None:
        if isinstance(value, Maybe):
            if value.present is not False:
                self.visit(path, inner, value.value, optional or value.present is None, owner, field_, depth)
            return
        self.visit(path, inner, UNKNOWN, True, owner, field_, depth)

    def tensor(self, path: list[str], tensor_type: TypeRef, value: Value, optional: bool, owner: Declared,
               field_: Field | None) -> None:
        """A ``Param<Tensor<B, D[, Int|Bool]>>``: rank from the type, sizes from the code that makes it."""
        rank = self.reader.eval(tensor_type.consts[0], Frame(Scope(), owner.name, owner.file)) \
            if tensor_type.consts else UNKNOWN
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank <= 16:
            raise self.unresolved(owner, field_, path, f"a tensor of rank {'set at run time' if rank is UNKNOWN else rank}")
        dims = value.dims if isinstance(value, Shaped) and len(value.dims) == rank else (UNKNOWN,) * rank
        element = next((a.name for a in tensor_type.args if a.name in _DTYPES), None)
        self.add(path, dims, _DTYPES.get(element, dtypes.F32), optional, owner.name, owner, field_)

    def module(self, path: list[str], type_ref: TypeRef, value: Value, optional: bool, owner: Declared,
               field_: Field | None, depth: int) -> None:
        """A module type: the source's own struct or enum, one of Burn's nn modules, or one without parameters."""
        name = type_ref.name
        declared = self.declared(name, owner, field_, path)
        if declared is not None:
            if declared.kind == "enum":
                self.enum(path, declared.name, {v.name: v.type for v in declared.fields}, value, optional, declared,
                          depth)
            else:
                fields = value.fields if isinstance(value, Struct) and value.name == name else {}
                for member in declared.fields:
                    if not member.skipped and member.type is not None:
                        self.visit([*path, member.name], member.type, fields.get(member.name, UNKNOWN), optional,
                                   declared, member, depth)
            return
        nn_module = burn_nn.module(name, self.version)
        if nn_module is not None:
            config = value.config if isinstance(value, Built) and value.module == name else None
            self.nn(path, nn_module, config, optional, owner, field_, depth)
            return
        nn_enum = burn_nn.enum(name, self.version)
        if nn_enum is not None:
            self.enum(path, name, {v: TypeRef(m) for v, m in nn_enum.variants.items()}, value, optional, owner, depth)
            return
        if burn_nn.parameter_free(name, self.version) or self.not_a_module(name, type_ref):
            return
        if name == "?":
            raise self.unresolved(owner, field_, path, "a type the reader cannot follow (a function or trait type, "
                                                       "or generics nested too deeply)")
        raise self.unresolved(owner, field_, path, f"type {type_ref.describe()}, which the source declares nowhere "
                                                   f"and Burn {self.version.value}'s nn does not have")

    def enum(self, path: list[str], name: str, variants: dict[str, TypeRef | None], value: Value, optional: bool,
             owner: Declared, depth: int) -> None:
        """An enum module: its variant's name, then the variant's module; every variant, optional, when unknown."""
        choices = value.choices if isinstance(value, Variant) and value.enum == name else {}
        chosen = [v for v in choices if v in variants]
        for variant, payload in variants.items():
            if payload is None or (chosen and variant not in chosen):
                continue
            self.visit([*path, variant], payload, choices.get(variant, UNKNOWN), optional or len(chosen) != 1, owner,
                       None, depth)

    def nn(self, path: list[str], nn_module: burn_nn.NnModule, config: Config | None, optional: bool, owner: Declared,
           field_: Field | None, depth: int) -> None:
        """Burn's module: its parameters and nested modules as its config says (every size unknown without one)."""
        if nn_module.kind is not None:
            self.kinds[".".join(path)] = nn_module.kind
        for part in nn_module.saved(config):
            if isinstance(part, Param):
                if part.present is not False:
                    self.add([*path, part.name], part.dims, dtypes.F32, optional or part.present is not True,
                             nn_module.name, owner, field_)
                continue
            built = Built(part.module, part.config)
            child_type = TypeRef(part.module)
            if part.count is None:
                self.visit([*path, part.name], child_type, built, optional, owner, field_, depth)
            else:
                count = self.reader.repeat(built, part.count)
                self.sequence([*path, part.name], TypeRef("Vec", (child_type,)), count, optional, owner, field_, depth)

    def add(self, path: list[str], dims: tuple[Value, ...], dtype: DType, optional: bool, module: str, owner: Declared,
            field_: Field | None) -> None:
        if len(self.tensors) >= MAX_TENSORS:
            raise FormatError(owner.file, f"the model would save more than {MAX_TENSORS:,} tensors")
        try:
            shape = shape_of(dims)
        except ShapeError as exc:
            raise self.unresolved(owner, field_, path, str(exc)) from None
        self.tensors.append(TemplateTensor(".".join(path), shape, dtype, optional, module))

    def declared(self, name: str, owner: Declared, field_: Field | None, path: list[str]) -> Declared | None:
        """The source's module ``name``: None when it declares none (two of one name are refused: which is meant?)."""
        found = [d for d in self.crate.declared.get(name, []) if d.is_module]
        if len(found) > 1:
            raise self.unresolved(owner, field_, path, f"type {name}, declared more than once ({_listed(found)})")
        return _usable(found[0]) if found else None

    def not_a_module(self, name: str, type_ref: TypeRef) -> bool:
        """A type that saves nothing: one the source declares without ``#[derive(Module)]`` (a config, a plain
        struct), or, in Burn 0.21 (which visits only fields that mention the backend, a Param or a Tensor), an
        unknown type that mentions none (codegen_struct.rs:376-402 at v0.21.0). Burn 0.20 and 0.22 visit every
        field, so there an unknown type may save anything."""
        if self.crate.declared.get(name):
            return True
        return self.version is BurnVersion.V0_21 and _BACKEND not in _type_names(type_ref)

    def unresolved(self, owner: Declared, field_: Field | None, path: list[str], problem: str) -> FormatError:
        line = field_.line if field_ is not None else owner.line
        where = f"field {field_.name} of {owner.name}" if field_ is not None else owner.name
        return FormatError(owner.file, f"line {line}: {where} ({'.'.join(path) or 'the model'}) has {problem}: "
                                       "give the file or folder that declares it, or the crate's src/ folder")
