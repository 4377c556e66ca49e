"""A Burn model's Rust source as a template: ``--template model.rs`` (a file, or a crate's ``src/`` folder).

What a ``.bpk`` template tells the alignment (the names and shapes the model loads) is read here from the
model's own code, with tree-sitter's Rust grammar; nothing is compiled or run (``syntax`` parses,
``evaluate`` follows the constructors, ``burn_nn`` knows Burn's modules, ``template`` walks the struct).
``model.rs::Net`` names the struct when the source holds several top-level modules.

How a template is represented, for every reader of it (the alignment, the plan, suggestions, the window):

- ``RustTemplate`` (``template_store``) is a ``Store`` (``format`` ``"rust"``, ``has_values`` False: reading a tensor is an
  error); its ``entries`` are the tensors whose names are known, in Burn's order, as ``TensorEntry`` with
  dtype F32 (``I64``/``BOOL`` for ``Int``/``Bool`` tensors) and a shape in which a dimension set at run time
  is ``shapes.RUNTIME_DIM`` (-1). ``shapes.fits(wanted, actual)`` is how a shape is compared.
- ``is_optional(name)``: the model may lack the tensor (an ``Option`` or a bias whose presence is set at run
  time, an enum whose variant the code does not settle: then every variant's tensors are optional).
- ``expected(offered)``: the entries plus the elements of each ``Vec`` whose length is set at run time, as
  many as the offered names fill (at least the first: a model's ``Vec`` is taken to hold one element).
  ``entry(name)`` answers for such an element too.
- ``declared_kinds(path)``: the module kind the source declares at a module path (``Linear``, ``Conv2d``,
  ..., as ``engine.surgery.modules.KINDS`` spells them), for the plan's module inference.
- ``model`` (``template.ModelTemplate``): the root struct (``model.root``, its name, file and line;
  ``model.rust_type`` is ``Net<B>`` or ``Net``) and every ``TemplateTensor``, ``*`` marking run-time indices.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...burn_versions import NEWEST, BurnVersion
from ...errors import FormatError
from ...sources.locations import is_url
from .shapes import RUNTIME_DIM, fits, is_runtime

if TYPE_CHECKING:
    from .template_store import RustTemplate

STRUCT_SEPARATOR = "::"  # model.rs::Net names the struct

__all__ = ["RUNTIME_DIM", "RustTemplate", "fits", "is_runtime", "is_rust_source", "open_rust_template"]


def split_struct(where: str | os.PathLike) -> tuple[Path, str | None]:
    """``model.rs::Net`` as (``model.rs``, ``Net``); a path without a struct as it is."""
    text = os.fspath(where)
    head, sep, tail = text.rpartition(STRUCT_SEPARATOR)
    if sep and tail.isidentifier() and "/" not in tail and not Path(text).exists():
        return Path(head), tail
    return Path(text), None


def is_rust_source(where: object) -> bool:
    """Whether a template path names Rust source: a ``.rs`` file or a folder (optionally ``::Struct``), never a URL."""
    if not isinstance(where, (str, os.PathLike)) or is_url(where):
        return False
    path, _ = split_struct(where)
    return path.suffix == ".rs" or path.is_dir()


def open_rust_template(where: str | os.PathLike, burn_version: BurnVersion = NEWEST) -> "RustTemplate":
    """Read the model at ``where`` (``model.rs``, ``src/``, either with ``::Struct``) as Burn ``burn_version`` saves it."""
    from .syntax import read_crate  # here: importing the package costs nothing until a template is read
    from .template import read_model
    from .template_store import RustTemplate
    path, struct = split_struct(where)
    try:
        return RustTemplate(Path(where), path, read_model(read_crate(path), path, struct, burn_version))
    except RecursionError:  # the last line of defence: every walk caps its nesting before this
        raise FormatError(path, "nests too deeply to read") from None


def __getattr__(name: str) -> Any:
    """``RustTemplate`` on first use (PEP 562): a plain conversion that imports ``shapes`` never loads the store."""
    if name == "RustTemplate":
        from .template_store import RustTemplate
        return RustTemplate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
