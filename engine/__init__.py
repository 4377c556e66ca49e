"""Store Studio's engine: lazy model stores, formats, export. Pure Python + numpy, never Qt."""

__version__ = "0.1.0"

from .burn_compat import Compatibility, burn_compatibility
from .burn_versions import CHOICES as BURN_VERSIONS, NEWEST as NEWEST_BURN, BurnVersion, parse_burn_version
from .dtypes import DType
from .errors import ExportCancelled, ExportError, FormatError, RecipeError, StoreStudioError
from .export import export
from .formats import open_store
from .locations import Location, RemoteLocation, is_url, location
from .quantized import QuantizedValues, scheme_description, stored_values, why_undecoded
from .store import ArrayStore, Store, TensorEntry, TensorSource

__all__ = ["ArrayStore", "BURN_VERSIONS", "BurnVersion", "Compatibility", "DType", "ExportCancelled", "ExportError",
           "FormatError", "Location", "NEWEST_BURN", "QuantizedValues", "RecipeError", "RemoteLocation", "Store",
           "StoreStudioError", "TensorEntry", "TensorSource", "burn_compatibility", "export", "is_url", "location",
           "open_store", "parse_burn_version", "scheme_description", "stored_values", "why_undecoded", "__version__"]
