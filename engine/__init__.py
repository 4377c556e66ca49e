"""Store Studio's engine: lazy model stores, formats, export. Pure Python + numpy, never Qt.

The public names are imported on first use (PEP 562), so ``import engine`` costs nothing a command does
not need: ``store-studio --version`` never loads numpy, ``inspect`` never loads the surgery.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from .errors import ExportCancelled, ExportError, FormatError, RecipeError, StoreStudioError

__version__ = "0.1.0"

_LAZY = {"DType": ".dtypes", "export": ".export", "open_store": ".formats", "ArrayStore": ".store",
         "Store": ".store", "TensorEntry": ".store", "TensorSource": ".store"}

if TYPE_CHECKING:
    from .dtypes import DType
    from .export import export
    from .formats import open_store
    from .store import ArrayStore, Store, TensorEntry, TensorSource

__all__ = ["ArrayStore", "DType", "ExportCancelled", "ExportError", "FormatError", "RecipeError", "Store", "StoreStudioError",
           "TensorEntry", "TensorSource", "export", "open_store", "__version__"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # once: later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    """``engine.export`` is the function, as when it was imported eagerly: importing the submodule of the
    same name (``from engine.export import ...``) would otherwise rebind the package's name to the module."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "export" and isinstance(value, types.ModuleType):
            value = value.export
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
