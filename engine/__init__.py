"""Store Studio's engine: lazy model stores, formats, export. Pure Python + numpy, never Qt."""

__version__ = "0.1.0"

from .burn_compat import Compatibility, burn_compatibility
from .burn_versions import CHOICES as BURN_VERSIONS, NEWEST as NEWEST_BURN, BurnVersion, parse_burn_version
from .dtypes import DType
from .errors import ExportCancelled, ExportError, FormatError, RecipeError, StoreStudioError
from .export import export
from .formats import open_store
from .quantized import QuantizedValues, scheme_description, stored_values
from .store import ArrayStore, Store, TensorEntry, TensorSource

__all__ = ["BURN_VERSIONS", "NEWEST_BURN", "BurnVersion", "Compatibility", "QuantizedValues", "burn_compatibility",
           "parse_burn_version", "scheme_description", "stored_values", "ArrayStore", "DType", "ExportCancelled", "ExportError", "FormatError", "RecipeError", "Store", "StoreStudioError",
           "TensorEntry", "TensorSource", "export", "open_store", "__version__"]
