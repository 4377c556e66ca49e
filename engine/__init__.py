"""Store Studio's engine: lazy model stores, formats, export. Pure Python + numpy, never Qt.

The public names are imported on first use (PEP 562), so ``import engine`` costs nothing a command does
not need: ``store-studio --version`` never loads numpy, ``inspect`` never loads the surgery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import ExportCancelled, ExportError, FormatError, RecipeError, StoreStudioError
from .version import __version__

# public name -> (module, name there): imported on first use
_LAZY = {
    "Compatibility": (".formats.burn_compat", "Compatibility"), "burn_compatibility": (".formats.burn_compat", "burn_compatibility"),
    "BURN_VERSIONS": (".burn_versions", "CHOICES"), "NEWEST_BURN": (".burn_versions", "NEWEST"),
    "BurnVersion": (".burn_versions", "BurnVersion"), "parse_burn_version": (".burn_versions", "parse_burn_version"),
    "DType": (".dtypes", "DType"), "export": (".exporting", "export"), "open_store": (".formats", "open_store"),
    "open_template": (".formats", "open_template"),
    "CheckpointBranches": (".formats.pytorch.branches", "CheckpointBranches"),
    "checkpoint_branches": (".formats.pytorch.branches", "checkpoint_branches"),
    "watch_downloads": (".sources.downloads", "watch_downloads"),
    "Location": (".sources.locations", "Location"), "RemoteLocation": (".sources.locations", "RemoteLocation"),
    "is_url": (".sources.locations", "is_url"), "location": (".sources.locations", "location"),
    "QuantizedValues": (".quantized", "QuantizedValues"), "scheme_description": (".quantized", "scheme_description"),
    "stored_values": (".quantized", "stored_values"), "why_undecoded": (".quantized", "why_undecoded"),
    "QuantizeSpec": (".quantize", "QuantizeSpec"), "QUANTIZED_VALUES": (".quantize", "RANGES"),
    "quantized_choices": (".quantize", "quantized_choices"),
    "gguf_conversions": (".exporting.written_forms", "conversions"),
    "with_adapters": (".lora", "with_adapters"), "adapter_name": (".lora", "adapter_name"),
    "ArrayStore": (".store", "ArrayStore"), "Store": (".store", "Store"), "TensorEntry": (".store", "TensorEntry"),
    "TensorSource": (".store", "TensorSource"),
    "WRITABLE_FORMATS": (".formats", "WRITABLE_FORMATS"), "WritableFormat": (".formats", "WritableFormat"),
    "format_for_path": (".formats", "format_for_path"), "writable_format": (".formats", "writable_format"),
    "takes_top_level_key": (".formats", "takes_top_level_key"), "split_struct": (".formats.rust_model", "split_struct"),
    "writable_to": (".dtypes", "writable_to"), "collector_paused": (".collector", "collector_paused"),
    "PatternError": (".rust_regex", "PatternError"), "TensorStats": (".stats", "TensorStats"),
    "stats_for": (".stats", "stats_for"), "ORDERS": (".tree", "ORDERS"), "TreeNode": (".tree", "TreeNode"),
    "build_tree": (".tree", "build_tree"), "dtypes_of": (".tree", "dtypes_of"),
    "filter_entries": (".tree", "filter_entries"), "first_levels": (".tree", "first_levels"),
    "is_buffer": (".tree", "is_buffer"), "name_matcher": (".tree", "name_matcher"),
    "natural_key": (".tree", "natural_key"), "values_by_dtype": (".tree", "values_by_dtype"),
    "humanize": (".humanize", None), "terminal": (".cli.terminal", None), "COMMANDS": (".cli", "COMMANDS"),
    "EXIT_USAGE": (".cli.exits", "USAGE"), "command_line": (".cli.dispatch", "dispatch"),
    "run_command_line": (".cli.dispatch", "run"),
}

if TYPE_CHECKING:
    from . import humanize
    from .burn_versions import CHOICES as BURN_VERSIONS
    from .burn_versions import NEWEST as NEWEST_BURN
    from .burn_versions import BurnVersion, parse_burn_version
    from .cli import COMMANDS, terminal
    from .cli.dispatch import dispatch as command_line
    from .cli.dispatch import run as run_command_line
    from .cli.exits import USAGE as EXIT_USAGE
    from .collector import collector_paused
    from .dtypes import DType, writable_to
    from .exporting import export
    from .formats import (
        WRITABLE_FORMATS,
        WritableFormat,
        format_for_path,
        open_store,
        open_template,
        takes_top_level_key,
        writable_format,
    )
    from .formats.burn_compat import Compatibility, burn_compatibility
    from .formats.pytorch.branches import CheckpointBranches, checkpoint_branches
    from .formats.rust_model import split_struct
    from .quantize import RANGES as QUANTIZED_VALUES
    from .exporting.written_forms import conversions as gguf_conversions
    from .lora import adapter_name, with_adapters
    from .quantize import QuantizeSpec, quantized_choices
    from .quantized import QuantizedValues, scheme_description, stored_values, why_undecoded
    from .rust_regex import PatternError
    from .sources.downloads import watch_downloads
    from .sources.locations import Location, RemoteLocation, is_url, location
    from .stats import TensorStats, stats_for
    from .store import ArrayStore, Store, TensorEntry, TensorSource
    from .tree import (
        ORDERS,
        TreeNode,
        build_tree,
        dtypes_of,
        filter_entries,
        first_levels,
        is_buffer,
        name_matcher,
        natural_key,
        values_by_dtype,
    )

__all__ = ["ArrayStore", "BURN_VERSIONS", "BurnVersion", "COMMANDS", "CheckpointBranches", "Compatibility", "DType",
           "EXIT_USAGE", "ExportCancelled", "ExportError", "FormatError", "Location", "NEWEST_BURN", "ORDERS",
           "PatternError", "QuantizedValues", "RecipeError", "RemoteLocation", "Store", "StoreStudioError",
           "TensorEntry", "TensorSource", "TensorStats", "TreeNode", "WRITABLE_FORMATS", "WritableFormat",
           "QuantizeSpec", "QUANTIZED_VALUES", "quantized_choices", "gguf_conversions", "with_adapters", "adapter_name",
           "__version__", "build_tree", "burn_compatibility", "checkpoint_branches", "collector_paused",
           "command_line", "dtypes_of", "export", "filter_entries", "first_levels", "format_for_path", "humanize",
           "is_buffer", "is_url", "location", "name_matcher", "natural_key", "open_store", "open_template",
           "parse_burn_version", "run_command_line", "scheme_description", "split_struct", "stats_for",
           "stored_values", "takes_top_level_key", "terminal", "values_by_dtype", "watch_downloads", "why_undecoded",
           "writable_format", "writable_to"]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _LAZY[name]
    imported = importlib.import_module(module, __name__)
    value = imported if attribute is None else getattr(imported, attribute)
    globals()[name] = value  # once: later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
