"""What each global a checkpoint names stands for; nothing named is ever imported or called.

``resolve`` maps ``module.name`` to a ``Global``: an inert stand-in for the tensor machinery and
plain containers (the table below), a refusal for what is on the deny list (``denylist``), and
for every other class a placeholder that only records what it would have received
(``Placeholder``). "Calling" a stand-in runs the small builder below, which makes descriptors
and plain values; the real torch, numpy or builtin callable is never imported or called.
"""

from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING, Any, Callable

from ... import dtypes
from ...dtypes import DType
from ...errors import FormatError
from ...humanize import with_article
from .denylist import denied
from .tensors import STORAGE_CLASSES, TORCH_DTYPES, StorageRef, TensorRef, tensor

if TYPE_CHECKING:
    pass

Builder = Callable[[str | os.PathLike, tuple], Any]


class Global:
    """A global the checkpoint names. ``kind`` says what it stands for: "function", "storage", "dtype",
    "tensor_type", "class" or "placeholder" (a class nothing here knows); ``dtype`` is set for
    storages and dtypes. ``torch_allows``: ``torch.load(weights_only=True)`` accepts it by default
    (torch/_weights_only_unpickler.py, ``_get_allowed_globals``)."""

    def __init__(self, module: str, name: str, kind: str, build: Builder | None, dtype: DType | None,
                 torch_allows: bool):
        self.module, self.name, self.kind, self._build, self.dtype = module, name, kind, build, dtype
        self.torch_allows = torch_allows

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"

    def call(self, path: str | os.PathLike, args: tuple) -> Any:
        if self._build is None:
            raise ValueError(f"{self.qualname} cannot be called")
        return self._build(path, args)

    def __repr__(self) -> str:
        return self.qualname


class Buildable:
    """A stand-in object that accepts BUILD state (numpy dtypes and arrays)."""

    def setstate(self, path: str | os.PathLike, state: Any) -> None:
        raise NotImplementedError


class Placeholder:
    """An object of a class nothing here imports: its class path and the state it would have received.

    ``args`` from REDUCE/NEWOBJ/INST/OBJ, ``state`` from BUILD (a ``__dict__``, or ``(__dict__,
    __slots__)``, or anything ``__setstate__`` would take), ``items``/``listitems`` from SETITEMS
    and APPENDS on dict and list subclasses. It hashes by identity, so nesting never recurses in C.
    """

    __slots__ = ("qualname", "args", "state", "items", "listitems")

    def __init__(self, qualname: str, args: tuple):
        self.qualname, self.args = qualname, args
        self.state: Any = None
        self.items: dict | None = None
        self.listitems: list | None = None

    def attributes(self) -> dict[str, Any]:
        """The instance attributes BUILD would set: ``__dict__`` and ``__slots__`` values merged."""
        state = self.state
        if isinstance(state, tuple) and len(state) == 2 and all(s is None or isinstance(s, dict) for s in state):
            return {**(state[0] or {}), **(state[1] or {})}
        return state if isinstance(state, dict) else {}

    @property
    def is_module(self) -> bool:
        """A pickled ``torch.nn.Module``: its ``__dict__`` holds the parameter, buffer and child tables."""
        attributes = self.attributes()
        return all(isinstance(attributes.get(key), dict) for key in ("_parameters", "_buffers", "_modules"))

    def __repr__(self) -> str:
        return f"<{self.qualname}>"


def resolve(path: str | os.PathLike, module: str, name: str) -> Global:
    found = allowed().get((module, name))
    if found is not None:
        return found
    qualname = f"{module}.{name}"
    if denied(module, name):
        raise FormatError(path, f"refused to load the global {qualname}: a weights file never needs it, "
                                "and unpickling it could run code")
    if module in _TENSOR_MODULES:  # torch's other rebuild functions: a tensor whose values are not a plain view
        raise FormatError(path, f"the checkpoint holds a kind of tensor this reader does not decode ({qualname}: "
                                "quantized, sparse, nested or meta tensors)")
    # A class read as a placeholder may still be one torch's safe loader takes (collections.Counter, complex).
    return Global(module, name, "placeholder", lambda _, args: Placeholder(qualname, args), None,
                  _torch_allows(module, name))


_TENSOR_MODULES = {"torch._utils", "torch._tensor"}

# --- torch ------------------------------------------------------------------------------------

def _args(args: tuple, low: int, high: int, what: str) -> tuple:
    if not low <= len(args) <= high:
        raise ValueError(f"{what} takes {low} to {high} arguments, got {len(args)}")
    return args


def _rebuild_tensor(path: str | os.PathLike, args: tuple) -> TensorRef:
    storage, offset, size, stride = _args(args, 4, 4, "_rebuild_tensor")
    return tensor(path, storage, offset, size, stride)


def _rebuild_tensor_v2(path: str | os.PathLike, args: tuple) -> TensorRef:
    storage, offset, size, stride = _args(args, 6, 7, "_rebuild_tensor_v2")[:4]
    return tensor(path, storage, offset, size, stride)


def _rebuild_tensor_v3(path: str | os.PathLike, args: tuple) -> TensorRef:
    storage, offset, size, stride, _, _, dtype = _args(args, 7, 8, "_rebuild_tensor_v3")[:7]
    if not isinstance(dtype, Global) or dtype.kind != "dtype":
        raise ValueError(f"_rebuild_tensor_v3 needs a torch dtype, got {dtype!r:.80}")
    return tensor(path, storage, offset, size, stride, dtype.dtype)


def _rebuild_parameter(path: str | os.PathLike, args: tuple) -> TensorRef:
    data = _args(args, 3, 4, "_rebuild_parameter")[0]
    if not isinstance(data, TensorRef):
        raise ValueError(f"a parameter's data is {type(data).__name__}, not a tensor")
    return data


def _parameter(path: str | os.PathLike, args: tuple) -> TensorRef:
    """``Parameter(data, requires_grad)``: how torch 0.3 pickled a parameter (a REDUCE on the class itself)."""
    data = _args(args, 1, 2, "Parameter")[0]
    if not isinstance(data, TensorRef):
        raise ValueError(f"a parameter's data is {type(data).__name__}, not a tensor")
    return data


def _rebuilt_subclass(path: str | os.PathLike, args: tuple, what: str) -> tuple[Any, Global]:
    """``func(*args)`` of a tensor subclass's rebuild (Parameter, or the user's own class, read as the plain tensor
    it wraps), and the subclass."""
    func, new_type, func_args = _args(args, 4, 4, what)[:3]
    if not isinstance(new_type, Global) or new_type.kind not in ("tensor_type", "placeholder"):
        raise ValueError(f"tensor subclass {new_type!r:.80} is not torch.Tensor or Parameter")
    if not isinstance(func, Global) or func.kind != "function" or not isinstance(func_args, tuple):
        raise ValueError(f"{func!r:.80} is not a tensor rebuild function")
    return func.call(path, func_args), new_type


def _a_tensor(rebuilt: Any) -> TensorRef:
    """torch makes what a subclass's rebuild function returned a subclass with ``as_subclass``, which only a tensor
    has (torch/_tensor.py, ``_rebuild_from_type`` and ``_rebuild_from_type_v2``)."""
    if not isinstance(rebuilt, TensorRef):
        raise ValueError(f"a tensor subclass's rebuild function returned {type(rebuilt).__name__}, not a tensor")
    return rebuilt


def _rebuild_from_type(path: str | os.PathLike, args: tuple) -> Any:
    """``_rebuild_from_type(func, type, args, dict)``: torch returns ``func(*args)`` as it is for torch.Tensor."""
    rebuilt, new_type = _rebuilt_subclass(path, args, "_rebuild_from_type")
    return rebuilt if new_type.qualname in ("torch.Tensor", "torch._tensor.Tensor") else _a_tensor(rebuilt)


def _rebuild_from_type_v2(path: str | os.PathLike, args: tuple) -> TensorRef:
    """``_rebuild_from_type_v2(func, new_type, args, state)``: what ``func`` returns is always made a subclass."""
    return _a_tensor(_rebuilt_subclass(path, args, "_rebuild_from_type_v2")[0])


def _size(path: str | os.PathLike, args: tuple) -> tuple:
    (dims,) = _args(args, 1, 1, "torch.Size")
    if not isinstance(dims, (tuple, list)) or not all(isinstance(d, int) for d in dims):
        raise ValueError("torch.Size takes a list of whole numbers")
    return tuple(dims)


def _device(path: str | os.PathLike, args: tuple) -> str:
    kind, *index = _args(args, 1, 2, "torch.device")
    if not isinstance(kind, str) or not all(isinstance(i, int) for i in index):
        raise ValueError("torch.device takes a name and an optional index")
    return f"{kind}:{index[0]}" if index else kind


def _jit_list(path: str | os.PathLike, args: tuple) -> list:
    """``torch.jit._pickle.build_intlist(data)`` and its siblings: TorchScript's typed lists, which torch.jit
    returns as they are (torch/jit/_pickle.py)."""
    (items,) = _args(args, 1, 1, "a TorchScript list")
    if not isinstance(items, list):
        raise ValueError(f"a TorchScript list is built from a list, not {with_article(type(items).__name__)}")
    return items


def _restore_type_tag(path: str | os.PathLike, args: tuple) -> Any:
    """``torch.jit._pickle.restore_type_tag(value, type_str)``: the value as it is; the tag only told TorchScript
    its static type (``Dict[str, Tensor]``)."""
    value, tag = _args(args, 2, 2, "restore_type_tag")
    if not isinstance(tag, str):
        raise ValueError("restore_type_tag's type is not text")
    return value


# --- builtins ---------------------------------------------------------------------------------

def _ordered_dict(path: str | os.PathLike, args: tuple) -> dict:
    if not args:
        return {}
    (items,) = _args(args, 1, 1, "OrderedDict")
    return dict(items)


def _set(path: str | os.PathLike, args: tuple) -> set:
    return set(*_args(args, 0, 1, "set"))


def _frozenset(path: str | os.PathLike, args: tuple) -> frozenset:
    return frozenset(*_args(args, 0, 1, "frozenset"))


def _slice(path: str | os.PathLike, args: tuple) -> slice:
    return slice(*_args(args, 1, 3, "slice"))


def _bytes(path: str | os.PathLike, args: tuple) -> bytes:
    """Protocol 2 spells empty bytes as ``bytes()``; a size argument (an allocation) is refused."""
    if args and not isinstance(args[0], bytes):
        raise ValueError("bytes() is only allowed without arguments")
    return bytes(*_args(args, 0, 1, "bytes"))


def _encode(path: str | os.PathLike, args: tuple) -> bytes:
    """Protocol 2 spells bytes as ``_codecs.encode(text, 'latin1')``; no other codec is allowed. A call without
    a codec encodes as UTF-8, as Python (and so torch.load) does."""
    text, *encoding = _args(args, 1, 2, "_codecs.encode")
    if not isinstance(text, str) or (encoding and encoding[0] not in ("latin1", "latin-1")):
        raise ValueError(f"_codecs.encode is only allowed from text to latin1, got {encoding or 'utf-8'}")
    return text.encode("latin-1" if encoding else "utf-8")


# --- numpy ------------------------------------------------------------------------------------

# Plain numeric dtypes only: an object dtype ('O') holds more pickled Python objects.
_NUMPY_CODE = re.compile(r"[<>|=]?(b1|\?|[iu][1248]|f[248]|c(8|16)|bool|u?int(8|16|32|64)|float(16|32|64)"
                         r"|complex(64|128))")


class NumpyDType(Buildable):
    """``numpy.dtype(code, align, copy)`` plus its BUILD state (the byte order)."""

    def __init__(self, code: str):
        import numpy as np
        self.numpy = np.dtype(code)

    def setstate(self, path: str | os.PathLike, state: Any) -> None:
        if not isinstance(state, tuple) or len(state) < 5 or state[3] is not None or state[4] is not None:
            raise ValueError("numpy dtype state is not that of a plain numeric dtype")
        if state[1] == ">":
            self.numpy = self.numpy.newbyteorder(">")
        elif state[1] not in ("<", "|", "="):
            raise ValueError(f"numpy dtype byte order {state[1]!r:.20} is unknown")


def _numpy_dtype(path: str | os.PathLike, args: tuple) -> NumpyDType:
    code = _args(args, 1, 3, "numpy.dtype")[0]
    if not isinstance(code, str) or not _NUMPY_CODE.fullmatch(code):
        raise FormatError(path, f"refused numpy dtype {code!r:.40}: only plain numeric arrays are allowed "
                                "(object arrays hold more pickled code)")
    return NumpyDType(code)


class NumpyArray(Buildable):
    """``numpy.core.multiarray._reconstruct`` then BUILD: an array stored inside the pickle."""

    def __init__(self) -> None:
        self.tensor: TensorRef | None = None

    def setstate(self, path: str | os.PathLike, state: Any) -> None:
        if not isinstance(state, tuple) or len(state) not in (4, 5):
            raise ValueError("numpy array state is not (version, shape, dtype, fortran, data)")
        shape, dtype, fortran, raw = state[-4:]
        if not isinstance(dtype, NumpyDType):
            raise ValueError("numpy array state lacks a numpy dtype")
        if isinstance(raw, str):
            raw = raw.encode("latin-1")  # Python 2 pickles
        if not isinstance(raw, (bytes, bytearray)):
            raise ValueError("numpy array data is not raw bytes")
        kind = dtypes.from_numpy(dtype.numpy)
        storage = StorageRef(f"numpy:{id(self)}", kind, len(raw), data=bytes(raw),
                             big_endian=dtype.numpy.byteorder == ">")
        if not isinstance(shape, (tuple, list)) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError("numpy array shape is not a list of sizes")
        strides, step = [], 1
        for dim in (shape if fortran else reversed(shape)):
            strides.append(step)
            step *= dim
        strides = strides if fortran else strides[::-1]
        self.tensor = tensor(path, storage, 0, shape, tuple(strides))
        if self.tensor.nbytes != len(raw):
            raise ValueError(f"numpy array data has {len(raw)} bytes, its shape needs {self.tensor.nbytes}")


def _reconstruct(path: str | os.PathLike, args: tuple) -> NumpyArray:
    cls = _args(args, 3, 3, "numpy _reconstruct")[0]
    if cls is not allowed()[("numpy", "ndarray")]:
        raise ValueError(f"numpy _reconstruct of {cls!r:.80}, not numpy.ndarray")
    return NumpyArray()


def _scalar(path: str | os.PathLike, args: tuple) -> Any:
    import numpy as np
    dtype, raw = _args(args, 2, 2, "numpy scalar")
    if isinstance(raw, str):
        raw = raw.encode("latin-1")
    if not isinstance(dtype, NumpyDType) or not isinstance(raw, bytes) or len(raw) != dtype.numpy.itemsize:
        raise ValueError("numpy scalar is not a dtype and its raw bytes")
    return np.frombuffer(raw, dtype.numpy)[0].item()


def _reconstructor(path: str | os.PathLike, args: tuple) -> Placeholder:
    """``copyreg._reconstructor(cls, base, state)``: how protocols 0 and 1 pickle a plain instance."""
    cls, base, state = _args(args, 3, 3, "copyreg._reconstructor")
    if not isinstance(cls, Global) or cls.kind != "placeholder":
        raise ValueError(f"copyreg._reconstructor of {cls!r:.80}, which is not a class")
    if not isinstance(base, Global) or base.module not in ("builtins", "__builtin__"):
        raise ValueError(f"copyreg._reconstructor from base {base!r:.80}, which is not a builtin type")
    made = Placeholder(cls.qualname, ())
    if base.name == "dict" and isinstance(state, dict):  # a dict subclass: its items, as SETITEMS would give
        made.items = state
    elif base.name == "list" and isinstance(state, list):
        made.listitems = state
    elif state is not None:
        made.args = (state,)
    return made


# torch.load(weights_only=True) accepts these by default besides storages, tensor types, canonical
# dtypes and the rebuild functions (torch/_weights_only_unpickler.py, _get_allowed_globals).
_TORCH_DEFAULTS = {"_codecs.encode", "builtins.bytearray", "builtins.complex", "builtins.set", "collections.Counter",
                   "collections.OrderedDict", "torch.nn.parameter.Parameter", "torch.Size", "torch.device",
                   "torch.Tensor", "torch._tensor._rebuild_from_type_v2", "torch.storage.TypedStorage",
                   "torch.storage.UntypedStorage"}


def _torch_allows(module: str, name: str) -> bool:
    module = "builtins" if module == "__builtin__" else module  # torch maps Python 2's name too
    if f"{module}.{name}" in _TORCH_DEFAULTS or module == "torch._utils":
        return True
    if module in ("torch", "torch.cuda") and name.endswith("Storage"):
        return name not in ("UntypedStorage", "TypedStorage")
    if module in ("torch", "torch.cuda") and name.endswith("Tensor"):  # torch has no complex legacy tensor types
        return name != "Tensor" and not name.startswith("Complex")
    return module == "torch" and name in TORCH_DTYPES and name not in _DTYPE_ALIASES


# torch's table keys dtypes by str(dtype), the canonical name: "torch.float32", never "torch.float".
_DTYPE_ALIASES = {"double", "float", "half", "long", "int", "short", "cfloat", "cdouble", "chalf"}


# --- the table --------------------------------------------------------------------------------

def _table() -> dict[tuple[str, str], Global]:
    table: dict[tuple[str, str], Global] = {}

    def add(module: str, name: str, kind: str, build: Builder | None = None, dtype: DType | None = None) -> None:
        table[(module, name)] = Global(module, name, kind, build, dtype, _torch_allows(module, name))

    for name, build in (("_rebuild_tensor", _rebuild_tensor), ("_rebuild_tensor_v2", _rebuild_tensor_v2),
                        ("_rebuild_tensor_v3", _rebuild_tensor_v3), ("_rebuild_parameter", _rebuild_parameter),
                        ("_rebuild_parameter_with_state", _rebuild_parameter)):
        add("torch._utils", name, "function", build)
    add("torch._tensor", "_rebuild_from_type_v2", "function", _rebuild_from_type_v2)
    add("torch._tensor", "_rebuild_from_type", "function", _rebuild_from_type)
    for module in ("torch", "torch._tensor"):
        add(module, "Tensor", "tensor_type")
    add("torch.nn.parameter", "Parameter", "tensor_type", _parameter)
    for name, dtype in STORAGE_CLASSES.items():
        add("torch", name, "storage", dtype=dtype)
        add("torch.cuda", name, "storage", dtype=dtype)  # GPU checkpoints name CUDA storages
        # Tar-layout files name the tensor type of each tensor (torch.FloatTensor, ...).
        add("torch", name.replace("Storage", "Tensor"), "class")
        add("torch.cuda", name.replace("Storage", "Tensor"), "class")
    for module in ("torch", "torch.storage"):
        add(module, "UntypedStorage", "storage", dtype=dtypes.U8)
        add(module, "TypedStorage", "storage")
    for name, dtype in TORCH_DTYPES.items():
        add("torch", name, "dtype", dtype=dtype)
    # TorchScript's pickle helpers (torch.jit.save writes them for list and dict attributes); the rest of torch.jit
    # stays on the deny list, build_tensor_from_id (a tensor by a number only the running program knows) too.
    for name in ("build_intlist", "build_tensorlist", "build_doublelist", "build_boollist", "build_genericlist"):
        add("torch.jit._pickle", name, "function", _jit_list)
    add("torch.jit._pickle", "restore_type_tag", "function", _restore_type_tag)
    add("torch", "Size", "class", _size)
    add("torch", "device", "class", _device)
    add("collections", "OrderedDict", "class", _ordered_dict)
    for module in ("builtins", "__builtin__"):
        add(module, "set", "class", _set)
        add(module, "frozenset", "class", _frozenset)
        add(module, "slice", "class", _slice)
        add(module, "bytes", "class", _bytes)
    add("_codecs", "encode", "function", _encode)
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        add(module, "_reconstruct", "function", _reconstruct)
        add(module, "scalar", "function", _scalar)
    add("numpy", "dtype", "class", _numpy_dtype)
    add("numpy", "ndarray", "class")
    add("copyreg", "_reconstructor", "function", _reconstructor)
    add("copy_reg", "_reconstructor", "function", _reconstructor)
    return table


@functools.cache
def allowed() -> dict[tuple[str, str], Global]:
    """The table, built on the first global a pickle names rather than as the module loads: a file that is not
    a checkpoint never pays for it."""
    return _table()
