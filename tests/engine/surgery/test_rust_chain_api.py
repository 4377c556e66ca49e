"""The printed burn-store chain calls only what its store type has at the recipe's Burn version.

The method lists below were read from Burn's source (``git show TAG:FILE`` in tracel-ai/burn; every
``pub fn`` of ``impl <Store>`` that returns ``Self``):

- BurnpackStore: crates/burn-store/src/burnpack/store.rs:93-311 at v0.20.0, :100-336 at v0.21.0,
  crates/burn-store/src/burnpack.rs:91-305 at v0.22.0-pre.2;
- SafetensorsStore: crates/burn-store/src/safetensors/store.rs:115-471 at v0.20.0 and v0.21.0, :114-470 at v0.22.0-pre.2;
- PytorchStore: crates/burn-store/src/pytorch/store.rs:98-302 at v0.20.0 and v0.21.0, :97-301 at v0.22.0-pre.2;
- adapters: crates/burn-store/src/adapter.rs (``chain`` :80 and ``HalfPrecisionAdapter`` :219 from v0.21.0,
  ``FloatCastAdapter`` :342 at v0.22.0-pre.2); PathFilter: crates/burn-store/src/filter.rs:48-107 at every tag.

Every chain printed for the sample and test recipes, and for a matrix of every adapter, cast, filter
and store type at every version, is checked against these lists; where a store lacks renumbering or
enum-variant skipping, the explicit renames it prints are replayed and must give the plan's names.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import open_store
from engine.burn_versions import BurnVersion
from engine.cli.recipe import rust
from engine.surgery import Recipe, RemapRule, plan
from engine.surgery import burn_store_api as api
from engine.surgery.filters import Filter
from engine.surgery.printers import as_rust, rust_escape
from engine.surgery.recipe import CastRule, SourceSpec
from engine.surgery.remap import compile_rules, remap_name

ROOT = Path(__file__).parents[3]
MIRROR = Path("/work/.mirror/tracel-ai+burn/repo")
V20, V21, V22 = BurnVersion.V0_20, BurnVersion.V0_21, BurnVersion.V0_22

_BPK_COMMON = {"from_file", "from_bytes", "from_static", "metadata", "clear_metadata", "allow_partial", "validate",
               "overwrite", "auto_extension", "with_filter", "with_regex", "with_full_path", "match_all", "remap",
               "with_remap_pattern", "filter"}
_SAFETENSORS = {"from_file", "from_bytes", "filter", "with_regex", "with_regexes", "with_full_path", "with_full_paths",
                "with_predicate", "with_predicates", "match_all", "remap", "with_key_remapping", "metadata",
                "clear_metadata", "validate", "allow_partial", "skip_enum_variants", "map_indices_contiguous",
                "overwrite", "with_from_adapter", "with_to_adapter"}
_PYTORCH = {"from_file", "with_top_level_key", "filter", "with_regex", "with_regexes", "with_full_path",
            "with_full_paths", "with_predicate", "with_predicates", "match_all", "remap", "with_key_remapping",
            "validate", "allow_partial", "skip_enum_variants", "map_indices_contiguous"}
METHODS = {
    ("BurnpackStore", V20): _BPK_COMMON | {"zero_copy"},
    ("BurnpackStore", V21): _BPK_COMMON | {"zero_copy", "with_from_adapter", "with_to_adapter"},
    ("BurnpackStore", V22): _BPK_COMMON | {"with_from_adapter", "with_to_adapter"},
    **{("SafetensorsStore", v): _SAFETENSORS for v in BurnVersion},
    **{("PytorchStore", v): _PYTORCH for v in BurnVersion},
}
ADAPTER_NAMES = {V20: {"PyTorchToBurnAdapter", "BurnToPyTorchAdapter"},
                 V21: {"PyTorchToBurnAdapter", "BurnToPyTorchAdapter", "HalfPrecisionAdapter", "chain", "new",
                       "with_module", "without_module"},
                 V22: {"PyTorchToBurnAdapter", "BurnToPyTorchAdapter", "HalfPrecisionAdapter", "FloatCastAdapter",
                       "chain", "new", "with_module", "without_module", "to"}}
PATH_FILTER = {"new", "with_predicate"}
SOURCE_FILES = {"BurnpackStore": {V20: "crates/burn-store/src/burnpack/store.rs",
                                  V21: "crates/burn-store/src/burnpack/store.rs", V22: "crates/burn-store/src/burnpack.rs"},
                "SafetensorsStore": dict.fromkeys(BurnVersion, "crates/burn-store/src/safetensors/store.rs"),
                "PytorchStore": dict.fromkeys(BurnVersion, "crates/burn-store/src/pytorch/store.rs")}


def test_the_api_tables_are_the_lists_read_from_burn():
    for (store, version), methods in METHODS.items():
        assert set(api.store_api(store, version).methods) == methods, (store, version)
    assert not api.store_api("BurnpackStore", V20).has("with_from_adapter")  # no adapter at all in 0.20
    assert not api.has_adapter(V21, "FloatCastAdapter::to") and api.has_adapter(V22, "FloatCastAdapter::to")


@pytest.mark.skipif(not MIRROR.is_dir(), reason="Burn's source mirror is not on this machine")
@pytest.mark.parametrize("store,version", sorted(METHODS, key=str))
def test_each_cited_line_defines_the_method_at_that_tag(store, version):
    source = subprocess.run(["git", "-C", str(MIRROR), "show", f"{api.TAGS[version]}:{SOURCE_FILES[store][version]}"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    table = api.store_api(store, version)
    assert table.file == SOURCE_FILES[store][version]
    for method, line in table.methods.items():
        assert re.match(rf"\s+pub fn {method}\b", source[line - 1]), f"{table.cite(method)}: {source[line - 1]!r}"
    defined = builders(source, store)
    assert len(defined) >= 12 and defined <= set(table.methods), \
        f"{store} {version.value} defines builders the table lacks: {defined - set(table.methods)}"


def builders(source: list[str], store: str) -> set[str]:
    """Every ``pub fn`` of ``impl <store> {`` blocks taking ``self`` and returning ``Self`` (signatures span lines)."""
    found, inside = set(), False
    for i, line in enumerate(source):
        if line.startswith("impl "):
            inside = line.startswith(f"impl {store} {{")
        head = re.match(r"    pub fn (\w+)", line)
        if inside and head:
            signature = " ".join(source[i:i + 12])
            signature = signature[:signature.index("{")] if "{" in signature else signature
            if re.search(r"\((?:mut )?self\b", signature) and "-> Self" in signature:
                found.add(head.group(1))
    return found


# --- every printed chain against the lists ------------------------------------------------------------------

def chains(text: str) -> list[tuple[str, list[str]]]:
    """Each ``let mut store = X::from_file(..)`` block: the store type and its lines (calls start a line)."""
    found: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        head = re.match(r"let mut store = (\w+)::from_file\(", line)
        if head:
            found.append((head.group(1), []))
        elif found and line.startswith("    ."):
            found[-1][1].append(line.strip())
    return found


def check_chain(text: str, version: BurnVersion) -> None:
    blocks = chains(text)
    assert blocks, text
    for store, calls in blocks:
        methods = [re.match(r"\.(\w+)\(", call).group(1) for call in calls]
        assert set(methods) <= METHODS[(store, version)], (store, version.value, methods)
        assert methods.count("with_from_adapter") <= 1  # a second one would replace the first
        for call in calls:
            if call.startswith(".with_from_adapter("):
                words = set(re.findall(r"(?:\.|::|^|\()(\w+)(?=[(.)]|$)", call[len(".with_from_adapter("):]))
                assert words - {"DType", "F16", "F32", "BF16"} <= ADAPTER_NAMES[version], (version.value, call)
            if "PathFilter::" in call:
                assert set(re.findall(r"PathFilter::(\w+)\(\)\.(\w+)", call)[0]) <= PATH_FILTER
    code = "\n".join(line for line in text.splitlines() if not line.startswith("//"))
    if "DType::" in code:
        assert "use burn::tensor::DType;" in text


def sample_recipes() -> list[Recipe]:
    found = []
    for path in [*(ROOT / "tests").rglob("*.json"), *(ROOT / "resources").rglob("*.json")]:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and doc.get("version") == 1 and "sources" in doc:
            found.append(Recipe.load(path))
    assert found
    return found


def matrix() -> list[Recipe]:
    adapters = [(), ("pytorch-to-burn",), ("burn-to-pytorch",), ("contiguous-indices",), ("skip-enum-variants",),
                ("pytorch-to-burn", "contiguous-indices", "skip-enum-variants", "fuse-weight-norm")]
    casts = [(), (CastRule("F16"),), (CastRule("BF16"),), (CastRule("F32", ("Linear", "BatchNorm", "ConvTranspose")),),
             (CastRule("BF16", ("Linear",)),)]
    filters = [Filter(), Filter(include=(r"^enc",), full_paths=("head.weight",)), Filter(exclude=("bias$",))]
    sources = [("m.pt",), ("m.safetensors",), ("m.bpk",), ("m.pt", "m.bpk", "m.safetensors")]
    return [Recipe(sources=tuple(SourceSpec(p, "state_dict" if p.endswith(".pt") else None) for p in paths),
                   adapters=a, casts=c, filter=f, remaps=(RemapRule(r"^enc\.(\d+)", "encoder.$1"),), allow_partial=True)
            for a, c, f, paths in itertools.product(adapters, casts, filters, sources)]


@pytest.mark.parametrize("version", list(BurnVersion), ids=lambda v: v.value)
def test_every_printed_chain_calls_only_what_its_store_has(version):
    for recipe in [*sample_recipes(), *matrix()]:
        recipe = recipe.with_changes(burn_version=version)
        check_chain(as_rust(recipe), version)


def test_the_checker_catches_a_method_the_store_lacks():
    with pytest.raises(AssertionError):
        check_chain('let mut store = BurnpackStore::from_file(r"m.bpk")\n    .map_indices_contiguous(true);', V22)
    with pytest.raises(AssertionError):
        check_chain('let mut store = BurnpackStore::from_file(r"m.bpk")\n    .with_from_adapter(PyTorchToBurnAdapter);', V20)
    with pytest.raises(AssertionError):
        check_chain('let mut store = SafetensorsStore::from_file(r"m.safetensors")\n'
                    '    .with_from_adapter(FloatCastAdapter::to(DType::F16));', V21)


# --- what each version prints -------------------------------------------------------------------------------

def test_a_cast_is_chained_after_the_layout_adapter_in_one_with_from_adapter():
    recipe = Recipe(sources=(SourceSpec("m.safetensors"),), adapters=("pytorch-to-burn",), casts=(CastRule("F16"),))
    text = as_rust(recipe)  # the newest release by default
    assert ".with_from_adapter(PyTorchToBurnAdapter.chain(FloatCastAdapter::to(DType::F16)));" in text
    assert "use burn_store::{FloatCastAdapter, ModuleAdapter, ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};" in text
    older = as_rust(recipe.with_changes(burn_version=V21))
    assert ".with_from_adapter(PyTorchToBurnAdapter.chain(HalfPrecisionAdapter::new()));" in older
    assert "// differs: cast every float tensor to F16: HalfPrecisionAdapter casts only F32 tensors to F16" in older
    oldest = as_rust(recipe.with_changes(burn_version=V20))
    assert ".with_from_adapter(PyTorchToBurnAdapter);" in oldest
    assert "// left to do: cast every float tensor to F16 (Burn 0.20: no cast adapter" in oldest


def test_a_cast_by_module_keeps_exactly_those_modules_of_half_precision():
    recipe = Recipe(sources=(SourceSpec("m.safetensors"),), casts=(CastRule("F16", ("Linear", "BatchNorm")),))
    call = next(c for _, calls in chains(as_rust(recipe)) for c in calls if c.startswith(".with_from_adapter"))
    kept = set(api.HALF_PRECISION_DEFAULT) - set(re.findall(r'without_module\("(\w+)"\)', call))
    assert kept | set(re.findall(r'\.with_module\("(\w+)"\)', call)) == {"Linear", "BatchNorm"}


def test_pytorch_store_takes_no_adapter_so_a_cast_is_left_to_do():
    recipe = Recipe(sources=(SourceSpec("m.pt"),), adapters=("pytorch-to-burn",), casts=(CastRule("BF16"),))
    text = as_rust(recipe)
    assert "with_from_adapter" not in text.replace("no with_from_adapter", "")
    assert "// left to do: FloatCastAdapter::to(DType::BF16) (PytorchStore takes no adapter: its PyTorchToBurnAdapter is fixed" in text


def test_burnpack_filters_with_exclusions_go_through_a_path_filter():
    recipe = Recipe(sources=(SourceSpec("m.bpk"),), filter=Filter(include=("^enc",), exclude=("bias$",)))
    text = as_rust(recipe)
    assert ('.with_filter(PathFilter::new().with_predicate(|path, _| (regex::Regex::new(r"^enc").unwrap().is_match(path)) '
            '&& !(regex::Regex::new(r"bias$").unwrap().is_match(path))))') in text
    assert "PathFilter" in text.splitlines()[1] and "with_predicate(|" not in text.replace("with_predicate(|path", "")


# --- steps BurnpackStore cannot take, spelled out -------------------------------------------------------------

def burnpack(tmp_path: Path, names: list[str]) -> Path:
    source = tmp_path / "m.safetensors"
    save_file({n: np.full((2,), i, np.float32) for i, n in enumerate(names)}, str(source))
    out = tmp_path / "m.bpk"
    with open_store(source) as store:
        plan([store]).export(out)
    return out


def replay(text: str, names: list[str]) -> list[str]:
    """Run the chain's remap patterns over ``names`` as KeyRemapper does: each pattern on the previous result."""
    pairs = re.findall(r'\.with_remap_pattern\(r(#*)"(.*?)"\1, r(#*)"(.*?)"\3\)', text)
    rules = compile_rules([RemapRule(p, r) for _, p, _, r in pairs])
    return [remap_name(n, rules) for n in names]


def test_renumbering_on_a_burnpack_source_is_spelled_out_as_that_files_renames(tmp_path):
    names = ["blocks.1.fc.4.weight", "blocks.1.fc.2.weight", "blocks.3.fc.2.weight", "blocks.+7.norm.weight",
             "blocks.².weight", "blocks.1.fc.٣.weight", "head.weight"]
    path = burnpack(tmp_path, names)
    recipe = Recipe(sources=(SourceSpec(str(path)),), adapters=("contiguous-indices",),
                    remaps=(RemapRule("^blocks", "layers"),))
    with open_store(path) as store:
        planned = plan([store], recipe)
        text = as_rust(recipe, [store], planned)
    check_chain(text, recipe.burn_version)
    assert "map_indices_contiguous" not in text and "// contiguous indices, which BurnpackStore cannot do" in text
    by_source = {t.source_name: t.name for t in planned.tensors}
    assert replay(text, names) == [by_source[n] for n in names]
    assert by_source["blocks.+7.norm.weight"] == "layers.2.norm.weight"  # +7 is an index, the third of 1, 3, 7
    assert by_source["blocks.².weight"] == "layers.².weight" and by_source["blocks.1.fc.٣.weight"] == "layers.0.fc.٣.weight"


def test_the_recipe_command_opens_the_sources_to_spell_renames_out(tmp_path):
    path = burnpack(tmp_path, ["fc.2.weight", "fc.5.weight"])
    text = rust(Recipe(sources=(SourceSpec(str(path)),), adapters=("contiguous-indices",)))
    assert replay(text, ["fc.2.weight", "fc.5.weight"]) == ["fc.0.weight", "fc.1.weight"]
    missing = rust(Recipe(sources=(SourceSpec(str(tmp_path / "gone.bpk")),), adapters=("contiguous-indices",)))
    assert "// left to do: renumber indices contiguously (BurnpackStore cannot in Burn 0.22" in missing


def test_enum_variants_named_by_module_are_spelled_out_for_a_burnpack_source(tmp_path):
    names = ["feature.BaseConv.weight", "feature.BaseConv.bias", "head.weight"]
    path = burnpack(tmp_path, names)
    recipe = Recipe(sources=(SourceSpec(str(path)),), module_overrides={"feature.BaseConv": "EnumVariant"})
    with open_store(path) as store:
        planned = plan([store], recipe)
        text = as_rust(recipe, [store], planned)
    check_chain(text, recipe.burn_version)
    assert replay(text, names) == ["feature.weight", "feature.bias", "head.weight"]


@pytest.mark.parametrize("name", ["a.b", "x$y", "p(q)[r]{s}^t|u*v+w?", "h#k&m-n~o", "back\\slash", "ünï.cödé"])
def test_rust_escape_matches_the_name_literally(name):
    assert re.fullmatch(rust_escape(name), name)
    assert rust_escape("a.b") == r"a\.b" and rust_escape("-#&~") == r"\-\#\&\~"


def test_casts_no_adapter_can_do_say_why():
    def text(cast, version=V22):
        return as_rust(Recipe(sources=(SourceSpec("m.safetensors"),), casts=(cast,), burn_version=version))

    assert "// left to do: cast Unknown tensors to F16 (Burn 0.22: no module type for these kinds" in text(CastRule("F16", ("Unknown",)))
    assert "with_from_adapter" not in text(CastRule("BF16", ("Linear",))).split("\nlet mut store")[1]
    assert "FloatCastAdapter casts every module, HalfPrecisionAdapter only between F32 and F16" in text(CastRule("BF16", ("Linear",)))
    assert "Burn 0.21: HalfPrecisionAdapter only casts between F32 and F16" in text(CastRule("BF16"), V21)
    assert "Unknown modules have no Burn module type and are not cast" in text(CastRule("F16", ("Linear", "Unknown")))
