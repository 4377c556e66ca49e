"""Which Burn releases can load a Burnpack file, read from its own bytes.

Only two dtype spellings differ between releases (burn-std ``tensor/dtype.rs:9-27`` is otherwise the same
at v0.20.0, v0.21.0, v0.22.0-pre.2 and main), and the Burnpack format version is 1 throughout
(burn-store ``burnpack/base.rs:17`` at v0.20.0 and v0.21.0, burn-pack ``base.rs:17`` at v0.22.0-pre.2):

- Bool: the unit variant ``"Bool"`` up to 0.20, ``{"Bool": storage}`` from 0.21 (bcaabad86, #4649). Both
  are derived serde enums with no alias, so each release refuses the other spelling.
- QFloat's scheme: generation 1 up to 0.22.0-pre.2, generation 2 from a8f9b960f (#5262). A generation 2
  scheme lacks the fields ``param`` and ``level`` that 0.20/0.21 require; Burn main's derived serde ignores
  a generation 1 scheme's ``param`` and ``level`` and reads it as one F32 tensor scale, which is right only
  for a per-tensor F32 scheme.
"""

from __future__ import annotations

from typing import Iterable

import msgspec

from .. import quantized as q
from ..burn_versions import BurnVersion


class Compatibility(msgspec.Struct, frozen=True):
    """``loads_in``: the releases that load the file as written; ``reasons``: why each other one cannot.
    A frozen msgspec Struct, as ``engine.quantized``'s records are (a dataclass cost start-up time)."""

    loads_in: tuple[BurnVersion, ...]
    reasons: tuple[tuple[BurnVersion, str], ...]

    def describe(self) -> str:
        """One line, e.g. ``Burn 0.21, 0.22`` or ``no Burn release Store Studio knows``."""
        if not self.loads_in:
            return "no Burn release from 0.20 to 0.22"
        return "Burn " + ", ".join(v.value for v in self.loads_in)


def compatibility(*, bare_bool: bool, bool_storages: set[str], quantized: Iterable[tuple[q.QuantScheme, tuple[int, ...]]],
                  format_version: int = 1) -> Compatibility:
    """The releases that load a file with these spellings (see the module's docstring for the rules)."""
    tensors = list(quantized)
    loads, reasons = [], []
    for version in BurnVersion:
        reason = _refusal(version, bare_bool, bool_storages, tensors, format_version)
        if reason:
            reasons.append((version, reason))
        else:
            loads.append(version)
    return Compatibility(tuple(loads), tuple(reasons))


def _refusal(version: BurnVersion, bare_bool: bool, bool_storages: set[str],
             tensors: list[tuple[q.QuantScheme, tuple[int, ...]]], format_version: int) -> str | None:
    if format_version != 1:
        return f"Burnpack version {format_version} (Burn reads version 1)"
    if version is BurnVersion.V0_20 and bool_storages:
        return "bools with their storage ({\"Bool\": ...}) are from Burn 0.21 (#4649)"
    if version is not BurnVersion.V0_20 and bare_bool:
        return f"the bare \"Bool\" spelling is Burn 0.20's; {version.value} reads bools with their storage (#4649)"
    for scheme, shape in tensors:
        reason = _scheme_refusal(version, scheme, shape)
        if reason:
            return reason
    return None


def _scheme_refusal(version: BurnVersion, scheme: q.QuantScheme, shape: tuple[int, ...]) -> str | None:
    if version is BurnVersion.V0_22:
        if scheme.generation == 1 and (scheme.block is not None or scheme.scale_dtype != "F32"):
            return ("its quantization scheme predates #5262, and Burn 0.22 reads such a scheme as one F32 tensor "
                    f"scale ({scheme.describe()} is not)")
        return None
    if scheme.generation == 2:
        return f"its quantization scheme is #5262's (value, store, mode, tensor, block), which Burn {version.value} cannot read"
    return q.inexpressible(scheme, version, shape)


def burn_compatibility(store: object) -> Compatibility | None:
    """The Burn releases that load ``store`` as it is (None when it is not a Burnpack file)."""
    return getattr(store, "burn", None)
