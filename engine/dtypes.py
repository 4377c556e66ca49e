"""One dtype model for every format, with each format's spelling of it.

Burnpack spells dtypes as Rust serde enum values, SafeTensors as short upper-case names,
PyTorch as storage classes or ``torch.<name>``. ``DType`` is the meeting point.
"""

from __future__ import annotations

import functools
import math
import operator
import sys
from typing import TYPE_CHECKING, Any

import msgspec

from . import quantized as q
from .burn_versions import NEWEST, BurnVersion

if TYPE_CHECKING:
    import numpy as np


class DType(msgspec.Struct, frozen=True):
    """A tensor element type.

    ``name`` is the canonical spelling (SafeTensors' where it has one). ``bits`` is the
    element width; packed sub-byte types (F4, F6) and opaque ones (QFloat) have no numpy view.
    ``storage`` is only used by Burnpack bools ("Native", "U8", "U32"); ``scheme`` only by
    quantized tensors, kept verbatim as canonical JSON so the dtype stays hashable. ``quant`` (the
    parsed scheme, in the generation its file spells it) takes no part in equality or hashing.

    A frozen ``msgspec.Struct`` like ``TensorEntry`` (every store loads msgspec anyway), not a frozen
    dataclass, which generates and compiles its methods at import: 1-2 ms of every command's start-up.
    """

    name: str
    bits: int | None
    kind: str  # "float", "int", "uint", "bool", "complex", "quantized", "gguf" (a GGML block type)
    storage: str | None = None
    scheme: str | None = None
    quant: q.QuantScheme | None = None

    def __eq__(self, other: object) -> bool:
        if type(other) is not DType:
            return NotImplemented
        return _COMPARED(self) == _COMPARED(other)

    def __hash__(self) -> int:
        return hash(_COMPARED(self))

    @property
    def itemsize(self) -> int | None:
        if self.name == "BOOL" and self.storage == "U32":
            return 4
        if self.bits is None or self.bits % 8:
            return None
        return self.bits // 8

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def values_dtype(self) -> np.dtype | None:
        """The numpy dtype ``read()`` gives (quantized tensors read dequantized, as F32); None when their
        values are not decoded at all."""
        if self.kind == "quantized":
            return None if q.undecodable(self.quant_scheme) else numpy_dtype("<f4")
        if self.kind == "gguf":  # a GGML block type (engine/ggml.py): read as gguf's F32 values
            return numpy_dtype("<f4")
        return self.numpy

    @property
    def quant_scheme(self) -> q.QuantScheme:
        """A quantized dtype's scheme, with the generation its file spells it in (ValueError for other dtypes)."""
        if self.quant is None:
            raise ValueError(f"{self} is not quantized")
        return self.quant

    @property
    def numpy(self) -> np.dtype | None:
        """The numpy dtype an array of this type reads as (None when there is none)."""
        if self.name == "BOOL":
            return numpy_dtype("<u4" if self.storage == "U32" else "?")
        if self.name in ML_DTYPES:
            return _ml_dtypes()[self.name]
        code = NUMPY_CODES.get(self.name)
        return None if code is None else numpy_dtype(code)

    def nbytes(self, shape: tuple[int, ...]) -> int | None:
        """Bytes a dense tensor of this type and shape holds (None for opaque types)."""
        if self.bits is None:
            return None
        return (math.prod(shape) * self.bits + 7) // 8

    def __repr__(self) -> str:
        return f"DType({self})"

    def __str__(self) -> str:
        if self.name == "BOOL" and self.storage not in (None, "Native"):
            return f"BOOL({self.storage})"
        return self.name


_COMPARED = operator.attrgetter("name", "bits", "kind", "storage", "scheme")  # all but ``quant``


def _d(name: str, bits: int | None, kind: str) -> DType:
    return DType(name, bits, kind)


F64, F32, F16, BF16 = _d("F64", 64, "float"), _d("F32", 32, "float"), _d("F16", 16, "float"), _d("BF16", 16, "float")
FLEX32 = _d("FLEX32", 32, "float")
F8_E4M3, F8_E5M2, F8_E8M0 = _d("F8_E4M3", 8, "float"), _d("F8_E5M2", 8, "float"), _d("F8_E8M0", 8, "float")
F6_E2M3, F6_E3M2, F4 = _d("F6_E2M3", 6, "float"), _d("F6_E3M2", 6, "float"), _d("F4", 4, "float")
I64, I32, I16, I8 = _d("I64", 64, "int"), _d("I32", 32, "int"), _d("I16", 16, "int"), _d("I8", 8, "int")
U64, U32, U16, U8 = _d("U64", 64, "uint"), _d("U32", 32, "uint"), _d("U16", 16, "uint"), _d("U8", 8, "uint")
BOOL = _d("BOOL", 8, "bool")
C64, C128 = _d("C64", 64, "complex"), _d("C128", 128, "complex")

ALL = (F64, F32, FLEX32, F16, BF16, F8_E4M3, F8_E5M2, F8_E8M0, F6_E2M3, F6_E3M2, F4,
       I64, I32, I16, I8, U64, U32, U16, U8, BOOL, C64, C128)
BY_NAME = {d.name: d for d in ALL}

# numpy's codes as plain text: numpy is imported when a tensor's values are first touched, never to copy bytes
# (it was 0.1-0.3 s of a conversion's start-up, against cp's 0.45 s for a gigabyte; issue 23).
NUMPY_CODES: dict[str, str] = {
    "F64": "<f8", "F32": "<f4", "FLEX32": "<f4", "F16": "<f2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1",
    "C64": "<c8", "C128": "<c16",
}


@functools.cache
def numpy_dtype(code: str) -> np.dtype:
    """The numpy dtype of a code such as ``<f4``, numpy imported on the first call."""
    import numpy as np
    return np.dtype(code)


ML_DTYPES = frozenset({"BF16", "F8_E4M3", "F8_E5M2", "F8_E8M0"})


@functools.cache
def _ml_dtypes() -> dict[str, np.dtype]:
    """bfloat16 and the float8s, whose numpy types come from ml_dtypes: imported when a tensor needs one,
    not at start-up (it is a fifth of a command's start-up time)."""
    import ml_dtypes
    import numpy as np
    return {"BF16": np.dtype(ml_dtypes.bfloat16), "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
            "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2), "F8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu)}


def from_numpy(dtype: np.dtype) -> DType:
    """The DType of a numpy array (bool arrays become native bools)."""
    import numpy as np
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return BOOL
    little = dtype.newbyteorder("<")
    for name, code in NUMPY_CODES.items():
        if name != "FLEX32" and numpy_dtype(code) == little:
            return BY_NAME[name]
    if "ml_dtypes" in sys.modules:  # an array can only be of an ml_dtypes type once ml_dtypes is loaded
        for name, candidate in _ml_dtypes().items():
            if candidate == little:
                return BY_NAME[name]
    raise ValueError(f"numpy dtype {dtype} has no Store Studio equivalent")


def quantized(scheme: Any) -> DType:
    """A Burn quantized dtype; the scheme is checked here (``quantized.SchemeError`` says what is wrong).

    Two dtypes are equal when their schemes mean the same, whichever generation spells them (``scheme``
    is that meaning as canonical JSON), so a file rewritten for another Burn version diffs as identical.
    """
    import json  # here: only a quantized dtype spells its scheme as JSON
    parsed = q.parse_scheme(scheme)
    return DType("QFLOAT", None, "quantized", scheme=json.dumps(q.meaning(parsed), sort_keys=True), quant=parsed)


# --- Burnpack (Rust serde enum) ------------------------------------------------------------

_BURNPACK_PLAIN = {"F64": F64, "F32": F32, "Flex32": FLEX32, "F16": F16, "BF16": BF16,
                   "I64": I64, "I32": I32, "I16": I16, "I8": I8,
                   "U64": U64, "U32": U32, "U16": U16, "U8": U8}
_BURNPACK_SPELLING = {d.name: spelling for spelling, d in _BURNPACK_PLAIN.items()}
BOOL_STORAGES = ("Native", "U8", "U32")


def from_burnpack(value: Any) -> DType:
    """Parse a Burnpack dtype; raises ValueError with the offending value."""
    if isinstance(value, str):
        if value in _BURNPACK_PLAIN:
            return _BURNPACK_PLAIN[value]
        if value == "Bool":
            return BOOL
    elif isinstance(value, dict) and len(value) == 1:
        (variant, payload), = value.items()
        if variant == "Bool" and payload in BOOL_STORAGES:
            return BOOL if payload == "Native" else DType("BOOL", 8 if payload == "U8" else 32, "bool", storage=payload)
        if variant == "QFloat":
            return quantized(payload)
    raise ValueError(f"unknown Burnpack dtype {value!r}")


def to_burnpack(dtype: DType, version: BurnVersion = NEWEST) -> Any:
    """The serde value Burn ``version`` reads for this dtype; raises ValueError when it has none.

    Bool is a unit variant up to 0.20 (burn-std tensor/dtype.rs:24 at v0.20.0) and carries its storage
    from bcaabad86, #4649 (``Bool(BoolStore)``, dtype.rs:24 and :307-316 at v0.21.0); the quantization
    scheme takes the generation ``version`` reads (engine.quantized).
    """
    if dtype.name == "BOOL":
        storage = dtype.storage or "Native"
        if version is BurnVersion.V0_20:
            if storage != "Native":
                raise ValueError(f"Burn 0.20 has only one-byte bools (DType::Bool, burn-std dtype.rs:24 at v0.20.0), "
                                 f"not {dtype}")
            return "Bool"
        return {"Bool": storage}
    if dtype.name == "QFLOAT":
        return {"QFloat": q.encode_scheme(dtype.quant_scheme, version)}
    if dtype.name in _BURNPACK_SPELLING:
        return _BURNPACK_SPELLING[dtype.name]
    raise ValueError(f"Burnpack cannot hold dtype {dtype}")


# --- SafeTensors ----------------------------------------------------------------------------

# Names the official library knows; newer files may carry others, which we list but cannot decode.
SAFETENSORS_NAMES = {"BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64", "F16", "BF16", "F32", "F64",
                     "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"}


def from_safetensors(name: str) -> DType:
    if name in BY_NAME and name != "FLEX32":
        return BY_NAME[name]
    raise ValueError(f"unknown SafeTensors dtype {name!r}")


def to_safetensors(dtype: DType) -> str:
    """SafeTensors' spelling; Flex32 is stored as F32 (same bytes).

    Bools go as burn-store's SafetensorsStore writes them (safetensors/store.rs:1086-1088 at v0.21.0,
    :1088-1090 at main): native ones as BOOL, U8- and U32-stored ones as U8 and U32 with their bytes.
    """
    if dtype.name == "FLEX32":
        return "F32"
    if dtype.name == "BOOL" and dtype.storage in ("U8", "U32"):
        return dtype.storage
    if dtype.name == "QFLOAT":
        raise ValueError(f"SafeTensors has no quantized dtype for {dtype.quant_scheme.describe()} (burn-store refuses "
                         "it too: safetensors/store.rs:1091 at main); dequantizing (convert --dequantize) writes its F32 values")
    if dtype.name in SAFETENSORS_NAMES:
        return dtype.name
    raise ValueError(f"SafeTensors cannot hold dtype {dtype}")


def writable_to(dtype: DType, fmt: str, version: BurnVersion = NEWEST, shape: tuple[int, ...] | None = None) -> str | None:
    """None when ``fmt`` (for Burn ``version``) can hold ``dtype``; otherwise the reason it cannot."""
    if dtype.kind == "gguf":  # a GGML block type is always written: as Burn's blocks or as its values (written_forms)
        return None
    try:
        if fmt != "burnpack":
            to_safetensors(dtype)
        elif dtype.name == "QFLOAT":
            reason = q.inexpressible(dtype.quant_scheme, version, shape)
            if reason:
                return f"cannot be written for Burn {version.value}: {reason}"
        else:
            to_burnpack(dtype, version)
    except ValueError as exc:
        return str(exc)
    return None
