"""How a tensor whose stored bytes are not its values is written (kept as Burn stores it, or as its values), and
a float tensor ``convert --quantize`` selects (as Burn's block quantization of its values, ``engine/quantize.py``).

A Burn QFloat tensor keeps its bytes (``--dequantize``: F32 values). A GGUF tensor of a GGML block type has no
Burn or SafeTensors spelling, except Q8_0 and Q4_0 into a Burnpack, which become Burn's Q8S and Q4S block
quantization of the same values (``engine/ggml.py``); every other one is written as its values in F16, or the
float type ``dequantize_to`` names, and ``conversions`` says so, one line a type, before anything is written.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple, Sequence

from .. import ggml
from ..burn_versions import NEWEST, BurnVersion
from ..quantize import QuantizeSpec, quantizable

DEFAULT_DEQUANTIZE_TO = "f16"


class Conversion(NamedTuple):
    """What an export does to the tensors of one GGML type: ``kept`` (as Burn's quantization) or dequantized."""

    type_name: str
    count: int
    kept: bool
    written_as: str  # the scheme in words, or the float dtype
    why: str = ""  # why a dequantized type is not kept

    def line(self) -> str:
        tensors = f"{self.count:,} {self.type_name} tensor{'s' if self.count != 1 else ''}"
        if self.kept:
            return f"{tensors} kept quantized, as Burn's {self.written_as}"
        return f"{tensors} dequantized to {self.written_as} ({self.why})"


def written_form(item: Any, fmt: str, burn_version: BurnVersion = NEWEST, dequantize: bool = False,
                 dequantize_to: str = DEFAULT_DEQUANTIZE_TO, quantize: QuantizeSpec | None = None) -> Any:
    """``item`` as the export writes it: itself, or a source of its Burn quantization or of its values (a float
    tensor ``quantize`` selects and can quantize: Burn's quantization of it)."""
    kind = item.dtype.kind
    if quantize is not None and quantize.selects(item) and \
            not quantizable(item.dtype, tuple(item.shape), quantize.block, quantize.value):
        from ..values.chunked import Quantized
        return Quantized(item, quantize.value, quantize.block, burn_version)
    if kind == "quantized" and dequantize:
        from ..values.chunked import Dequantized  # numpy: only a dequantizing export needs it
        return Dequantized(item)
    if kind != ggml.KIND:
        return item
    from ..values.chunked import BurnBlocks, Dequantized
    if keeps_quantized(item.dtype.name, fmt, dequantize):
        return BurnBlocks(item, burn_version)
    return Dequantized(item, ggml.DEQUANTIZE_TO[dequantize_to])


def keeps_quantized(type_name: str, fmt: str | None, dequantize: bool) -> bool:
    """Whether a GGML block type goes into the file quantized (Q8_0 and Q4_0 into a Burnpack)."""
    return fmt == "burnpack" and not dequantize and type_name in ggml.BURN_VALUES


def conversions(items: Sequence[Any], fmt: str, burn_version: BurnVersion = NEWEST, dequantize: bool = False,
                dequantize_to: str = DEFAULT_DEQUANTIZE_TO) -> list[Conversion]:
    """One ``Conversion`` per GGML block type among ``items``, in the order the types first appear."""
    counts = Counter(item.dtype.name for item in items if item.dtype.kind == ggml.KIND)
    result = []
    for name, count in counts.items():
        if keeps_quantized(name, fmt, dequantize):
            result.append(Conversion(name, count, True, ggml.burn_scheme(name, burn_version).describe()))
        else:
            why = ("--dequantize" if dequantize and name in ggml.BURN_VALUES else
                   f"Burn has no {name}" if fmt == "burnpack" else "SafeTensors has no quantized types")
            result.append(Conversion(name, count, False, str(ggml.DEQUANTIZE_TO[dequantize_to]), why))
    return result
