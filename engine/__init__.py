"""Store Studio's engine: lazy model stores, formats, export. Pure Python + numpy, never Qt."""

__version__ = "0.1.0"

from .dtypes import DType
from .errors import ExportCancelled, ExportError, FormatError, RecipeError, StoreStudioError
from .export import export
from .formats import open_store
from .locations import Location, RemoteLocation, is_url, location
from .store import ArrayStore, Store, TensorEntry, TensorSource

__all__ = ["ArrayStore", "DType", "ExportCancelled", "ExportError", "FormatError", "Location", "RecipeError",
           "RemoteLocation", "Store", "StoreStudioError", "TensorEntry", "TensorSource", "export", "is_url", "location",
           "open_store", "__version__"]
