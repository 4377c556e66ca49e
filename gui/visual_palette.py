"""The colours of the visual language and the dark palette, with nothing decided yet: pure definitions.

``gui.visual`` picks the light or dark variant once, from the application's palette; the app sets that
palette (``--theme dark``) from here before importing anything that draws.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette

# meaning: (on a light background, on a dark background)
TONES = {
    "amber": ("#9a5b00", "#f0b14a"),  # transformed: distinct from red in grey screenshots
    "grey": ("#6b6b6b", "#a8a8a8"),  # dropped
    "red": ("#b23232", "#ff8a80"),  # conflict, missing, invalid
    "blue": ("#2a65a8", "#8ab4f8"),  # unused
    "green": ("#276b2b", "#81c995"),  # applied
}
DARK_ROLES = {  # a dark palette for --theme dark: every text role readable on every background role
    QPalette.ColorRole.Window: "#2d2d2d", QPalette.ColorRole.WindowText: "#e6e6e6",
    QPalette.ColorRole.Base: "#1e1e1e", QPalette.ColorRole.AlternateBase: "#262626",
    QPalette.ColorRole.Text: "#e6e6e6", QPalette.ColorRole.Button: "#353535",
    QPalette.ColorRole.ButtonText: "#e6e6e6", QPalette.ColorRole.ToolTipBase: "#353535",
    QPalette.ColorRole.ToolTipText: "#e6e6e6", QPalette.ColorRole.PlaceholderText: "#9e9e9e",
    QPalette.ColorRole.Highlight: "#2f6fb5", QPalette.ColorRole.HighlightedText: "#ffffff",
    QPalette.ColorRole.Link: "#8ab4f8", QPalette.ColorRole.BrightText: "#ffffff",
    QPalette.ColorRole.Light: "#4a4a4a", QPalette.ColorRole.Midlight: "#3e3e3e", QPalette.ColorRole.Mid: "#555555",
    QPalette.ColorRole.Dark: "#1a1a1a", QPalette.ColorRole.Shadow: "#000000",
}
DARK_DISABLED_TEXT = "#7a7a7a"
TEXT_ROLES = (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText,
              QPalette.ColorRole.PlaceholderText, QPalette.ColorRole.ToolTipText, QPalette.ColorRole.Link)
BACKGROUND_ROLES = (QPalette.ColorRole.Window, QPalette.ColorRole.Base, QPalette.ColorRole.AlternateBase,
                    QPalette.ColorRole.Button)


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Base).lightness() < 128


def dark_palette() -> QPalette:
    palette = QPalette()
    for role, colour in DARK_ROLES.items():
        palette.setColor(role, QColor(colour))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(DARK_DISABLED_TEXT))
    return palette


def tone(name: str, dark: bool) -> QColor:
    return QColor(TONES[name][1 if dark else 0])


def relative_luminance(colour: QColor) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG 2 contrast ratio, 1 (same) to 21 (black on white); body text needs at least 4.5."""
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)
