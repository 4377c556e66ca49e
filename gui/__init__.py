"""Store Studio's desktop window (PySide6). Only this package imports Qt; it shows what the engine returns."""
