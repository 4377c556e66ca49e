"""One number format for the whole window: thousands separators for integers, significant digits for floats.

A float is shown with the digits its dtype holds: a bf16 weight printed as 0.0353553 claims four digits it
does not have (bf16 keeps about 3 significant decimal digits, f16 about 4, the 8-bit floats about 2).
"""

from __future__ import annotations

import math
from typing import Any

DEFAULT_DIGITS = 6
DIGITS = {"bfloat16": 3, "bf16": 3, "float16": 4, "f16": 4}  # numpy names and Store Studio's, lower-cased
EIGHT_BIT_DIGITS = 2


def digits_for(dtype: object) -> int:
    """Significant decimal digits worth showing for a dtype (a DType, a numpy dtype or a name)."""
    name = str(getattr(dtype, "name", dtype)).lower()
    if name in DIGITS:
        return DIGITS[name]
    if name.startswith(("float8", "f8")):
        return EIGHT_BIT_DIGITS
    return DEFAULT_DIGITS


def format_number(value: Any, digits: int = DEFAULT_DIGITS) -> str:
    """``1,234`` for integers, ``-0.0353553`` (``digits`` significant) for floats, ``NaN``/``+Inf``/``-Inf``."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "true" if value else "false"
    if isinstance(value, int) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"):
        return f"{int(value):,}"
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return f"{number:.{digits}g}"


def format_percent(share: float) -> str:
    """A share as a percent that never reads 0.0 % or 100.0 % when it is not exactly that."""
    if 0 < share < 0.001:
        return "<0.1%"
    if 0.999 < share < 1:
        return ">99.9%"
    return f"{share:.1%}"
