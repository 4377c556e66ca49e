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

# public name -> (module, name there): imported on first use
_LAZY = {
    "Compatibility": (".burn_compat", "Compatibility"), "burn_compatibility": (".burn_compat", "burn_compatibility"),
    "BURN_VERSIONS": (".burn_versions", "CHOICES"), "NEWEST_BURN": (".burn_versions", "NEWEST"),
    "BurnVersion": (".burn_versions", "BurnVersion"), "parse_burn_version": (".burn_versions", "parse_burn_version"),
    "DType": (".dtypes", "DType"), "export": (".export", "export"), "open_store": (".formats", "open_store"),
    "open_template": (".formats", "open_template"),
    "CheckpointBranches": (".formats.pytorch.branches", "CheckpointBranches"),
    "checkpoint_branches": (".formats.pytorch.branches", "checkpoint_branches"),
    "watch_downloads": (".downloads", "watch_downloads"),
    "Location": (".locations", "Location"), "RemoteLocation": (".locations", "RemoteLocation"),
    "is_url": (".locations", "is_url"), "location": (".locations", "location"),
    "QuantizedValues": (".quantized", "QuantizedValues"), "scheme_description": (".quantized", "scheme_description"),
    "stored_values": (".quantized", "stored_values"), "why_undecoded": (".quantized", "why_undecoded"),
    "ArrayStore": (".store", "ArrayStore"), "Store": (".store", "Store"), "TensorEntry": (".store", "TensorEntry"),
    "TensorSource": (".store", "TensorSource"),
}

if TYPE_CHECKING:
    from .burn_compat import Compatibility, burn_compatibility
    from .burn_versions import CHOICES as BURN_VERSIONS, NEWEST as NEWEST_BURN, BurnVersion, parse_burn_version
    from .downloads import watch_downloads
    from .dtypes import DType
    from .export import export
    from .formats import open_store, open_template
    from .formats.pytorch.branches import CheckpointBranches, checkpoint_branches
    from .locations import Location, RemoteLocation, is_url, location
    from .quantized import QuantizedValues, scheme_description, stored_values, why_undecoded
    from .store import ArrayStore, Store, TensorEntry, TensorSource

__all__ = ["ArrayStore", "BURN_VERSIONS", "BurnVersion", "CheckpointBranches", "Compatibility", "DType",
           "ExportCancelled", "ExportError", "FormatError", "Location", "NEWEST_BURN", "QuantizedValues", "RecipeError",
           "RemoteLocation", "Store", "StoreStudioError", "TensorEntry", "TensorSource", "burn_compatibility",
           "checkpoint_branches", "export", "is_url", "location", "open_store", "open_template", "parse_burn_version",
           "scheme_description", "stored_values", "watch_downloads", "why_undecoded", "__version__"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module, __name__), attribute)
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
