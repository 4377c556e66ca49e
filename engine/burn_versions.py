"""The Burn releases Store Studio writes for: each decides what a written file may contain.

A Burnpack written for one release must load in that release: the Bool dtype's spelling, the
quantization scheme's generation and the burn-store methods a printed Rust chain may call all
changed between releases (see docs/formats.md). One enum, shared by the CLI's
``--burn-version``, recipes and the export dialog, so every writer and printer asks the same question.
"""

from __future__ import annotations

from enum import Enum


class BurnVersion(str, Enum):
    """A Burn release line, oldest first; the value is what a user types (``--burn-version 0.21``)."""

    V0_20 = "0.20"
    V0_21 = "0.21"
    V0_22 = "0.22"

    @property
    def label(self) -> str:
        return f"Burn {self.value}"


NEWEST = BurnVersion.V0_22
CHOICES: tuple[str, ...] = tuple(v.value for v in BurnVersion)


def parse_burn_version(text: str) -> BurnVersion:
    """The release ``text`` names (``0.21``, ``v0.21`` or ``0.21.0``); ValueError naming the choices if none."""
    cleaned = text.strip().lower().removeprefix("v")
    parts = cleaned.split(".")
    if len(parts) == 3 and parts[2].isdigit():  # a patch release loads what its line loads
        cleaned = ".".join(parts[:2])
    for version in BurnVersion:
        if version.value == cleaned:
            return version
    raise ValueError(f"Burn version {text!r} is not one of {', '.join(CHOICES)}")
