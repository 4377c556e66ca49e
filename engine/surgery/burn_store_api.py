"""What burn-store offers at each Burn release, as data read from Burn's source (never guessed).

The Rust printer may only call what a store type has at the recipe's target version; each entry
cites the line of ``tracel-ai/burn`` that defines it (tag v0.20.0, v0.21.0, v0.22.0-pre.2 for 0.20,
0.21 and 0.22). Read with ``git show TAG:FILE``; ``tests/engine/surgery/test_rust_chain_api.py``
re-reads the mirror, when present, and checks these tables against it.

Facts the printer relies on, also from the source:

- A second ``with_from_adapter`` replaces the first: each store assigns ``self.from_adapter =
  Box::new(adapter)`` (burnpack.rs:245-247 at v0.22.0-pre.2, burnpack/store.rs:276-279 at v0.21.0,
  safetensors/store.rs:461-468 at v0.20.0/v0.21.0, :460-467 at v0.22.0-pre.2), so adapters are
  composed with ``ModuleAdapter::chain`` (adapter.rs:80 at v0.21.0 and v0.22.0-pre.2), which runs
  ``self`` first, then ``next`` (adapter.rs:118-122).
- ``PytorchStore`` has no ``with_from_adapter``: it always applies ``PyTorchToBurnAdapter``
  (pytorch/store.rs:356-364 at v0.20.0/v0.21.0, :349-357 at v0.22.0-pre.2), renumbers indices
  (``map_indices_contiguous: true``, pytorch/store.rs:109 at v0.22.0-pre.2) and skips enum
  variants (``skip_enum_variants: true``, :106) unless told otherwise.
- ``BurnpackStore`` can neither renumber indices nor skip enum variants, and has no adapter at all
  at v0.20.0 (burnpack/store.rs:57-316 has no ``with_from_adapter``).
- ``KeyRemapper::remap`` applies every pattern in order, each to the previous result
  (keyremapper.rs:151-160 at v0.20.0), so explicit renames can follow the user's remaps.
- ``HalfPrecisionAdapter`` (v0.21+) infers its direction, F32 -> F16 and F16 -> F32 only, for a
  module set (default: Linear, Embedding, Conv*, DeformConv2d, LayerNorm, GroupNorm, InstanceNorm,
  RmsNorm, PRelu; not BatchNorm; adapter.rs:163-181, 277-310 at v0.21.0); ``FloatCastAdapter``
  (v0.22) casts every float tensor to one target (adapter.rs:342-389 at v0.22.0-pre.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..burn_versions import BurnVersion

BURNPACK = "BurnpackStore"
SAFETENSORS = "SafetensorsStore"
PYTORCH = "PytorchStore"
STORES = (BURNPACK, SAFETENSORS, PYTORCH)
TAGS: Mapping[BurnVersion, str] = {BurnVersion.V0_20: "v0.20.0", BurnVersion.V0_21: "v0.21.0",
                                   BurnVersion.V0_22: "v0.22.0-pre.2"}


@dataclass(frozen=True)
class StoreApi:
    """One store type at one release: its source file and builder methods (name -> line)."""

    store: str
    version: BurnVersion
    file: str
    methods: Mapping[str, int]

    def has(self, method: str) -> bool:
        return method in self.methods

    def cite(self, method: str) -> str:
        return f"{self.file}:{self.methods[method]} at {TAGS[self.version]}"


_SAFETENSORS_METHODS = ("from_file", "from_bytes", "filter", "with_regex", "with_regexes", "with_full_path",
                        "with_full_paths", "with_predicate", "with_predicates", "match_all", "remap",
                        "with_key_remapping", "metadata", "clear_metadata", "validate", "allow_partial",
                        "skip_enum_variants", "map_indices_contiguous", "overwrite", "with_from_adapter",
                        "with_to_adapter")
_PYTORCH_METHODS = ("from_file", "with_top_level_key", "filter", "with_regex", "with_regexes", "with_full_path",
                    "with_full_paths", "with_predicate", "with_predicates", "match_all", "remap",
                    "with_key_remapping", "validate", "allow_partial", "skip_enum_variants", "map_indices_contiguous")

_API = (
    StoreApi(BURNPACK, BurnVersion.V0_20, "crates/burn-store/src/burnpack/store.rs", dict(
        from_file=93, from_bytes=113, from_static=144, metadata=172, clear_metadata=181, allow_partial=192,
        validate=204, overwrite=215, zero_copy=231, auto_extension=257, with_filter=263, with_regex=270,
        with_full_path=277, match_all=284, remap=291, with_remap_pattern=298, filter=311)),
    StoreApi(BURNPACK, BurnVersion.V0_21, "crates/burn-store/src/burnpack/store.rs", dict(
        from_file=100, from_bytes=122, from_static=155, metadata=185, clear_metadata=194, allow_partial=205,
        validate=217, overwrite=228, zero_copy=244, auto_extension=270, with_from_adapter=276, with_to_adapter=282,
        with_filter=288, with_regex=295, with_full_path=302, match_all=309, remap=316, with_remap_pattern=323,
        filter=336)),
    StoreApi(BURNPACK, BurnVersion.V0_22, "crates/burn-store/src/burnpack.rs", dict(
        from_file=91, from_bytes=111, from_static=142, metadata=170, clear_metadata=179, allow_partial=190,
        validate=202, overwrite=213, auto_extension=239, with_from_adapter=245, with_to_adapter=251, with_filter=257,
        with_regex=264, with_full_path=271, match_all=278, remap=285, with_remap_pattern=292, filter=305)),
    StoreApi(SAFETENSORS, BurnVersion.V0_20, "crates/burn-store/src/safetensors/store.rs", dict(zip(
        _SAFETENSORS_METHODS,
        (115, 135, 155, 176, 187, 209, 219, 242, 252, 265, 276, 294, 319, 339, 353, 363, 392, 427, 450, 461, 471))))
    ,
    StoreApi(SAFETENSORS, BurnVersion.V0_21, "crates/burn-store/src/safetensors/store.rs", dict(zip(
        _SAFETENSORS_METHODS,
        (115, 135, 155, 176, 187, 209, 219, 242, 252, 265, 276, 294, 319, 339, 353, 363, 392, 427, 450, 461, 471)))),
    StoreApi(SAFETENSORS, BurnVersion.V0_22, "crates/burn-store/src/safetensors/store.rs", dict(zip(
        _SAFETENSORS_METHODS,
        (114, 134, 154, 175, 186, 208, 218, 241, 251, 264, 275, 293, 318, 338, 352, 362, 391, 426, 449, 460, 470)))),
    StoreApi(PYTORCH, BurnVersion.V0_20, "crates/burn-store/src/pytorch/store.rs", dict(zip(
        _PYTORCH_METHODS, (98, 126, 132, 148, 154, 172, 178, 197, 203, 212, 218, 232, 245, 251, 272, 302)))),
    StoreApi(PYTORCH, BurnVersion.V0_21, "crates/burn-store/src/pytorch/store.rs", dict(zip(
        _PYTORCH_METHODS, (98, 126, 132, 148, 154, 172, 178, 197, 203, 212, 218, 232, 245, 251, 272, 302)))),
    StoreApi(PYTORCH, BurnVersion.V0_22, "crates/burn-store/src/pytorch/store.rs", dict(zip(
        _PYTORCH_METHODS, (97, 125, 131, 147, 153, 171, 177, 196, 202, 211, 217, 231, 244, 250, 271, 301)))),
)
STORE_API: Mapping[tuple[str, BurnVersion], StoreApi] = {(a.store, a.version): a for a in _API}

# Adapters and the adapter methods each release exports (crates/burn-store/src/adapter.rs; lib.rs re-exports them)
ADAPTERS: Mapping[BurnVersion, Mapping[str, int]] = {
    BurnVersion.V0_20: {"PyTorchToBurnAdapter": 89, "BurnToPyTorchAdapter": 116},
    BurnVersion.V0_21: {"ModuleAdapter::chain": 80, "HalfPrecisionAdapter::new": 225, "HalfPrecisionAdapter::with_module": 236,
                        "HalfPrecisionAdapter::without_module": 247, "PyTorchToBurnAdapter": 318, "BurnToPyTorchAdapter": 345},
    BurnVersion.V0_22: {"ModuleAdapter::chain": 80, "HalfPrecisionAdapter::new": 225, "HalfPrecisionAdapter::with_module": 236,
                        "HalfPrecisionAdapter::without_module": 247, "FloatCastAdapter::to": 353,
                        "PyTorchToBurnAdapter": 397, "BurnToPyTorchAdapter": 424},
}
PATH_FILTER_METHODS = ("new", "with_regex", "with_full_path", "with_predicate")  # filter.rs:48, 67, 91, 107 at every tag

# HalfPrecisionAdapter's default module set (adapter.rs:163-181 at v0.21.0 and v0.22.0-pre.2), as Burn names them
HALF_PRECISION_DEFAULT = ("Linear", "Embedding", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                          "ConvTranspose3d", "DeformConv2d", "LayerNorm", "GroupNorm", "InstanceNorm", "RmsNorm", "PRelu")


def store_api(store: str, version: BurnVersion) -> StoreApi:
    return STORE_API[(store, version)]


def has_adapter(version: BurnVersion, name: str) -> bool:
    return name in ADAPTERS[version]
