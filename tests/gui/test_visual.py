"""Every text colour of the visual language is readable: WCAG contrast of 4.5:1 or more, light and dark."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QStyleFactory

from gui.visual_palette import (BACKGROUND_ROLES, TEXT_ROLES, TONES, contrast_ratio, dark_palette, is_dark,
                                tone)

MINIMUM = 4.5


def test_contrast_ratio_follows_wcag():
    assert contrast_ratio(QColor("black"), QColor("white")) == pytest.approx(21.0)
    assert contrast_ratio(QColor("#777777"), QColor("white")) == pytest.approx(4.48, abs=0.01)
    assert contrast_ratio(QColor("#123456"), QColor("#123456")) == pytest.approx(1.0)


def _palettes(qapp) -> dict[str, QPalette]:
    return {"light": QStyleFactory.create("Fusion").standardPalette(), "dark": dark_palette()}


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_meaning_colour_reads_on_every_background_of_its_palette(qapp, theme: str):
    palette = _palettes(qapp)[theme]
    assert is_dark(palette) == (theme == "dark")
    for name in TONES:
        for role in BACKGROUND_ROLES:
            ratio = contrast_ratio(tone(name, theme == "dark"), palette.color(role))
            assert ratio >= MINIMUM, f"{name} on {role.name} in the {theme} palette: {ratio:.2f}:1"


def test_every_text_role_of_the_dark_palette_reads_on_its_backgrounds(qapp):
    palette = dark_palette()
    for text in TEXT_ROLES:
        for role in BACKGROUND_ROLES:
            ratio = contrast_ratio(palette.color(text), palette.color(role))
            assert ratio >= MINIMUM, f"{text.name} on {role.name}: {ratio:.2f}:1"
    selected = contrast_ratio(palette.color(QPalette.ColorRole.HighlightedText),
                              palette.color(QPalette.ColorRole.Highlight))
    assert selected >= MINIMUM


def test_the_old_hard_coded_colours_would_fail_in_dark_mode(qapp):
    """Why the dark variants exist: the light red, blue and green reach about 3:1 on a dark base."""
    base = dark_palette().color(QPalette.ColorRole.Base)
    assert all(contrast_ratio(QColor(light), base) < MINIMUM for light, _ in TONES.values())
