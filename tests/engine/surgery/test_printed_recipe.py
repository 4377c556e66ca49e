"""``recipe --as rust|cli`` (and Surgery › Copy as Rust / as Command Line): the printed recipe, word for word
(the rest of ``--as cli``: engine/surgery/test_recipe_document.py).

The chain is pasted into a Burn programmer's loader, so its text is the promise: every test compares the
whole printed text. Promises (README "### Surgery", "The Rust chain" and "Fused modules") -> tests:
- the chain starts with the `use burn_store::{..}` line it needs, then one store per source, loaded in order
  -> ``test_a_recipe_without_sources_prints_a_pytorch_store_for_model_pt``, ``test_each_source_gets_its_own_chain``
- `PytorchStore` renumbers by default, so the chain says `map_indices_contiguous(false)` where the recipe does not
  renumber; it always skips enum variants; its `PyTorchToBurnAdapter` is fixed (a `// differs:` line when the recipe
  has none) -> ``test_the_chain_for_each_store_is_printed_exactly`` (pytorch cases)
- replacements are printed braced (`${1}_x`) so the chain renames as the CLI does; quotes in a path get a raw
  string with enough `#`s -> ``test_the_chain_for_each_store_is_printed_exactly`` (filters, quoted path, a path
  holding a quote and a hash); burn-store ORs filter rules, so exclusions make one predicate holding the whole filter
  (a `PathFilter` on a `BurnpackStore`) -> the same (burnpack, two of each filter rule)
- `BurnpackStore` has no renumbering and no enum-variant skipping: with the files at hand they are that file's
  own renames, one exact `with_remap_pattern` each, after the recipe's remaps, ordered so replaying them gives
  the plan's names; without the files a `// left to do:` comment says what remains ->
  ``test_renumbering_is_printed_as_renames_in_the_order_that_replays_them``,
  ``test_enum_variants_the_template_skips_are_printed_as_renames_shortest_first``,
  ``test_each_source_gets_its_own_chain``, ``test_the_chain_for_each_store_is_printed_exactly`` (burnpack cases)
- adapters go into one `with_from_adapter`, a cast chained after the layout adapter; Burn 0.21's
  `HalfPrecisionAdapter` with `with_module`/`without_module` for the recipe's module types and a `// differs:`
  line; a BF16 cast before 0.22 and any cast in 0.20 are `// left to do:` (the casts after it still chained);
  a store taking no adapter leaves the whole chain to do ->
  ``test_the_chain_for_each_store_is_printed_exactly`` (cast and adapter cases)
- predicates, per-source filters, weight-norm fusion and module types stay `// Store Studio only:` comments ->
  ``test_the_chain_for_each_store_is_printed_exactly`` (notes cases)
- a split (or fuse) of fused modules is a `// left to do:` line naming the fused tensors ->
  ``test_a_fuse_back_to_pytorch_is_left_to_do_naming_the_fused_tensors``,
  ``test_three_fused_tensors_are_all_named_with_no_more_after_them`` (the split: engine/surgery/test_fused_modules.py)
- the `convert` line names every include and points at `--recipe FILE` after the flags when no flag can say a step
  -> ``test_the_command_line_keeps_every_include_and_the_whole_line_before_the_note``
- `recipe` opens the sources only when a step needs their names ->
  ``test_the_recipe_command_opens_no_source_when_no_step_needs_its_names``
"""

from __future__ import annotations

import re
import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from engine import ArrayStore, export, open_store
from engine.burn_versions import BurnVersion
from engine.cli.recipe import rust
from engine.surgery import Recipe, RemapRule, plan
from engine.surgery.filters import Filter, Predicate
from engine.surgery.printers import as_cli, as_rust
from engine.surgery.recipe import CastRule, SourceSpec
from engine.surgery.remap import compile_rules, remap_name
from tests.helpers.surgery_fused_targets import burn_named, torch_state

V20, V21, V22 = BurnVersion.V0_20, BurnVersion.V0_21, BurnVersion.V0_22
HEAD22 = "// burn-store 0.22.0-pre.2 (Burn 0.22)\n"
LOAD = "let result = model.load_from(&mut store)?;"
PYTORCH_DIFFERS = ("// differs: PytorchStore always applies PyTorchToBurnAdapter (transposes Linear weights, renames "
                   "norms); this recipe does not\n")
HALF_DEFAULT_BUT = ('.without_module("Embedding").without_module("Conv1d").without_module("Conv2d")'
                    '.without_module("Conv3d")')
HALF_REST = ('.without_module("DeformConv2d").without_module("LayerNorm").without_module("GroupNorm")'
             '.without_module("InstanceNorm").without_module("RmsNorm").without_module("PRelu")')
LEFT_RENUMBER = ("// left to do: renumber indices contiguously (BurnpackStore cannot in Burn 0.22; print this chain "
                 "with the sources at hand to get the renames spelled out)\n")
LEFT_VARIANTS = ("// left to do: drop enum-variant segments (BurnpackStore cannot skip enum variants; print this chain "
                 "with the sources at hand to get the renames spelled out)\n")
CANNOT_FUSE = ("burn-store cannot split fused gates or q/k/v, nor fuse them back (tracel-ai/burn#1632); convert with "
               "Store Studio first and load its output")

CASES = {
    "pytorch, nothing asked": (
        Recipe(),
        HEAD22 + "use burn_store::{ModuleSnapshot, PytorchStore};\n" + PYTORCH_DIFFERS
        + 'let mut store = PytorchStore::from_file(r"model.pt")\n    .map_indices_contiguous(false);\n' + LOAD),
    "pytorch, key, filters and a braced replacement": (
        Recipe(sources=(SourceSpec("m.pt", "state_dict"),),
               filter=Filter(include=("^enc", "dec"), full_paths=("head.weight",)),
               remaps=(RemapRule(r"^enc\.(\d+)", "encoder.$1_x"),)),
        HEAD22 + "use burn_store::{ModuleSnapshot, PytorchStore};\n" + PYTORCH_DIFFERS
        + 'let mut store = PytorchStore::from_file(r"m.pt")\n    .with_top_level_key(r"state_dict")\n'
          '    .with_regex(r"^enc")\n    .with_regex(r"dec")\n    .with_full_path(r"head.weight")\n'
          '    .with_key_remapping(r"^enc\\.(\\d+)", r"encoder.${1}_x")\n    .map_indices_contiguous(false);\n' + LOAD),
    "pytorch, its defaults asked": (
        Recipe(sources=(SourceSpec("m.pt"),), adapters=("pytorch-to-burn", "contiguous-indices", "skip-enum-variants")),
        HEAD22 + "use burn_store::{ModuleSnapshot, PytorchStore};\n"
        + 'let mut store = PytorchStore::from_file(r"m.pt");\n' + LOAD),
    "pytorch, a cast it cannot take": (
        Recipe(sources=(SourceSpec("m.pt"),), casts=(CastRule("F16"),)),
        HEAD22 + "use burn_store::{ModuleSnapshot, PytorchStore};\n" + PYTORCH_DIFFERS
        + "// left to do: FloatCastAdapter::to(DType::F16) (PytorchStore takes no adapter: its PyTorchToBurnAdapter is "
          "fixed; convert with Store Studio first, or load through a SafetensorsStore)\n"
          'let mut store = PytorchStore::from_file(r"m.pt")\n    .map_indices_contiguous(false);\n' + LOAD),
    "safetensors renumbers and skips variants itself": (
        Recipe(sources=(SourceSpec("m.safetensors"),), adapters=("contiguous-indices", "skip-enum-variants")),
        HEAD22 + "use burn_store::{ModuleSnapshot, SafetensorsStore};\n"
        + 'let mut store = SafetensorsStore::from_file(r"m.safetensors")\n    .map_indices_contiguous(true)\n'
          '    .skip_enum_variants(true);\n' + LOAD),
    "burnpack without its files": (
        Recipe(sources=(SourceSpec("a.bpk"),), adapters=("contiguous-indices", "skip-enum-variants")),
        HEAD22 + "use burn_store::{BurnpackStore, ModuleSnapshot};\n" + LEFT_RENUMBER + LEFT_VARIANTS
        + 'let mut store = BurnpackStore::from_file(r"a.bpk");\n' + LOAD),
    "burnpack module types": (
        Recipe(sources=(SourceSpec("a.bpk"),), module_overrides={"x.Y": "EnumVariant", "act": "PRelu"}),
        HEAD22 + "use burn_store::{BurnpackStore, ModuleSnapshot};\n" + LEFT_VARIANTS
        + 'let mut store = BurnpackStore::from_file(r"a.bpk");\n' + LOAD + "\n"
          "// Store Studio only: module 'x.Y' treated as EnumVariant\n"
          "// Store Studio only: module 'act' treated as PRelu\n"
          "// Store Studio only: a PRelu's weight renamed alpha (burn-store's adapter keeps weight)"),
    "0.21 half precision by module, to F32": (
        Recipe(sources=(SourceSpec("a.safetensors"),), casts=(CastRule("F32", ("Linear", "ConvTranspose", "BatchNorm")),),
               burn_version=V21),
        "// burn-store 0.21.0 (Burn 0.21)\nuse burn_store::{HalfPrecisionAdapter, ModuleSnapshot, SafetensorsStore};\n"
        "// differs: cast Linear, ConvTranspose, BatchNorm tensors to F32: HalfPrecisionAdapter casts only F16 tensors "
        "to F32 and turns F32 tensors into F16 (it infers the direction)\n"
        'let mut store = SafetensorsStore::from_file(r"a.safetensors")\n'
        "    .with_from_adapter(HalfPrecisionAdapter::new()" + HALF_DEFAULT_BUT + HALF_REST
        + '.with_module("BatchNorm"));\n' + LOAD),
    "0.22 half precision by module, a kind Burn has no type for": (
        Recipe(sources=(SourceSpec("a.safetensors"),), casts=(CastRule("F16", ("Linear", "EnumVariant")),)),
        HEAD22 + "use burn_store::{HalfPrecisionAdapter, ModuleSnapshot, SafetensorsStore};\n"
        "// differs: cast Linear, EnumVariant tensors to F16: HalfPrecisionAdapter casts only F32 tensors to F16 and "
        "turns F16 tensors into F32 (it infers the direction); EnumVariant modules have no Burn module type and are "
        "not cast\n"
        'let mut store = SafetensorsStore::from_file(r"a.safetensors")\n'
        "    .with_from_adapter(HalfPrecisionAdapter::new()" + HALF_DEFAULT_BUT
        + '.without_module("ConvTranspose1d").without_module("ConvTranspose2d").without_module("ConvTranspose3d")'
        + HALF_REST + ");\n" + LOAD),
    "0.22 two unmapped kinds": (
        Recipe(sources=(SourceSpec("a.safetensors"),), casts=(CastRule("F16", ("Linear", "EnumVariant", "Unknown")),)),
        HEAD22 + "use burn_store::{HalfPrecisionAdapter, ModuleSnapshot, SafetensorsStore};\n"
        "// differs: cast Linear, EnumVariant, Unknown tensors to F16: HalfPrecisionAdapter casts only F32 tensors to "
        "F16 and turns F16 tensors into F32 (it infers the direction); EnumVariant, Unknown modules have no Burn "
        "module type and are not cast\n"
        'let mut store = SafetensorsStore::from_file(r"a.safetensors")\n'
        "    .with_from_adapter(HalfPrecisionAdapter::new()" + HALF_DEFAULT_BUT
        + '.without_module("ConvTranspose1d").without_module("ConvTranspose2d").without_module("ConvTranspose3d")'
        + HALF_REST + ");\n" + LOAD),
    "0.22 a plain cast": (
        Recipe(sources=(SourceSpec("a.safetensors"),), casts=(CastRule("BF16"),)),
        HEAD22 + "use burn_store::{FloatCastAdapter, ModuleSnapshot, SafetensorsStore};\nuse burn::tensor::DType;\n"
        'let mut store = SafetensorsStore::from_file(r"a.safetensors")\n'
        "    .with_from_adapter(FloatCastAdapter::to(DType::BF16));\n" + LOAD),
    "0.21 a chained cast, and one it cannot do": (
        Recipe(sources=(SourceSpec("a.bpk"),), adapters=("burn-to-pytorch",), casts=(CastRule("F16"), CastRule("BF16")),
               burn_version=V21),
        "// burn-store 0.21.0 (Burn 0.21)\n"
        "use burn_store::{BurnToPyTorchAdapter, BurnpackStore, HalfPrecisionAdapter, ModuleAdapter, ModuleSnapshot};\n"
        "// differs: cast every float tensor to F16: HalfPrecisionAdapter casts only F32 tensors to F16 and turns F16 "
        "tensors into F32 (it infers the direction), only in Linear, Embedding, Conv*, DeformConv2d, LayerNorm, "
        "GroupNorm, InstanceNorm, RmsNorm and PRelu\n"
        "// left to do: cast every float tensor to BF16 (Burn 0.21: HalfPrecisionAdapter only casts between F32 "
        "and F16; cast after loading, or convert with Store Studio first)\n"
        'let mut store = BurnpackStore::from_file(r"a.bpk")\n'
        "    .with_from_adapter(BurnToPyTorchAdapter.chain(HalfPrecisionAdapter::new()));\n" + LOAD),
    "0.21 a cast to F32 of every float tensor": (
        Recipe(sources=(SourceSpec("a.safetensors"),), casts=(CastRule("F32"),), burn_version=V21),
        "// burn-store 0.21.0 (Burn 0.21)\nuse burn_store::{HalfPrecisionAdapter, ModuleSnapshot, SafetensorsStore};\n"
        "// differs: cast every float tensor to F32: HalfPrecisionAdapter casts only F16 tensors to F32 and turns F32 "
        "tensors into F16 (it infers the direction), only in Linear, Embedding, Conv*, DeformConv2d, LayerNorm, "
        "GroupNorm, InstanceNorm, RmsNorm and PRelu\n"
        'let mut store = SafetensorsStore::from_file(r"a.safetensors")\n'
        "    .with_from_adapter(HalfPrecisionAdapter::new());\n" + LOAD),
    "0.22 a cast by module to BF16": (
        Recipe(sources=(SourceSpec("a.safetensors"),), casts=(CastRule("BF16", ("Linear",)),)),
        HEAD22 + "use burn_store::{ModuleSnapshot, SafetensorsStore};\n"
        "// left to do: cast Linear tensors to BF16 (Burn 0.22: FloatCastAdapter casts every module, "
        "HalfPrecisionAdapter only between F32 and F16; cast after loading, or convert with Store Studio first)\n"
        'let mut store = SafetensorsStore::from_file(r"a.safetensors");\n' + LOAD),
    "0.20 no adapter on a burnpack": (
        Recipe(sources=(SourceSpec("a.bpk"),), adapters=("burn-to-pytorch",), casts=(CastRule("F16"),), burn_version=V20),
        "// burn-store 0.20.0 (Burn 0.20)\nuse burn_store::{BurnpackStore, ModuleSnapshot};\n"
        "// left to do: cast every float tensor to F16 (Burn 0.20: no cast adapter; cast after loading, or convert "
        "with Store Studio first)\n"
        "// left to do: BurnToPyTorchAdapter (BurnpackStore takes no adapter: it has no with_from_adapter in Burn 0.20; "
        "convert with Store Studio first, or load through a SafetensorsStore)\n"
        'let mut store = BurnpackStore::from_file(r"a.bpk");\n' + LOAD),
    "notes and a quoted path": (
        Recipe(sources=(SourceSpec('we"ird.safetensors', filter=Filter(include=("^enc",))),),
               filter=Filter(exclude=("bias$",), where=(Predicate("ndim", "==", 2),)), adapters=("fuse-weight-norm",)),
        HEAD22 + "use burn_store::{ModuleSnapshot, SafetensorsStore};\n"
        'let mut store = SafetensorsStore::from_file(r#"we"ird.safetensors"#)\n'
        '    .with_predicate(|path, _| (true) && !(regex::Regex::new(r"bias$").unwrap().is_match(path)));\n' + LOAD + "\n"
        "// Store Studio only: keep where ndim == 2\n"
        '// Store Studio only: we"ird.safetensors contributes only its own names matching {"include": ["^enc"]}\n'
        "// Store Studio only: weight_g/weight_v fused into weight (Burn has no weight norm)"),
    "a path holding a quote and a hash": (
        Recipe(sources=(SourceSpec('we"#ird.safetensors'),)),
        HEAD22 + "use burn_store::{ModuleSnapshot, SafetensorsStore};\n"
        'let mut store = SafetensorsStore::from_file(r##"we"#ird.safetensors"##);\n' + LOAD),
    "burnpack, two of each filter rule": (
        Recipe(sources=(SourceSpec("m.bpk"),),
               filter=Filter(include=("^enc", "^dec"), full_paths=("head.w",), exclude=("bias$", "norm"))),
        HEAD22 + "use burn_store::{BurnpackStore, ModuleSnapshot, PathFilter};\n"
        'let mut store = BurnpackStore::from_file(r"m.bpk")\n'
        '    .with_filter(PathFilter::new().with_predicate(|path, _| (regex::Regex::new(r"^enc").unwrap().is_match(path)'
        ' || regex::Regex::new(r"^dec").unwrap().is_match(path) || path == r"head.w")'
        ' && !(regex::Regex::new(r"bias$").unwrap().is_match(path) || regex::Regex::new(r"norm").unwrap().is_match(path))));\n'
        + LOAD),
    "0.22 a cast it cannot do, then one it can": (
        Recipe(sources=(SourceSpec("a.safetensors"),), casts=(CastRule("BF16", ("Linear",)), CastRule("F16"))),
        HEAD22 + "use burn_store::{FloatCastAdapter, ModuleSnapshot, SafetensorsStore};\nuse burn::tensor::DType;\n"
        "// left to do: cast Linear tensors to BF16 (Burn 0.22: FloatCastAdapter casts every module, "
        "HalfPrecisionAdapter only between F32 and F16; cast after loading, or convert with Store Studio first)\n"
        'let mut store = SafetensorsStore::from_file(r"a.safetensors")\n'
        "    .with_from_adapter(FloatCastAdapter::to(DType::F16));\n" + LOAD),
    "pytorch, a layout adapter and a cast it cannot take": (
        Recipe(sources=(SourceSpec("m.pt"),), adapters=("burn-to-pytorch",), casts=(CastRule("F16"),)),
        HEAD22 + "use burn_store::{ModuleSnapshot, PytorchStore};\n" + PYTORCH_DIFFERS
        + "// left to do: BurnToPyTorchAdapter then FloatCastAdapter::to(DType::F16) (PytorchStore takes no adapter: "
        "its PyTorchToBurnAdapter is fixed; convert with Store Studio first, or load through a SafetensorsStore)\n"
        'let mut store = PytorchStore::from_file(r"m.pt")\n    .map_indices_contiguous(false);\n' + LOAD),
    "0.20 one adapter, nothing to chain": (
        Recipe(sources=(SourceSpec("a.safetensors"),), adapters=("burn-to-pytorch",), burn_version=V20),
        "// burn-store 0.20.0 (Burn 0.20)\nuse burn_store::{BurnToPyTorchAdapter, ModuleSnapshot, SafetensorsStore};\n"
        'let mut store = SafetensorsStore::from_file(r"a.safetensors")\n'
        "    .with_from_adapter(BurnToPyTorchAdapter);\n" + LOAD),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_chain_for_each_store_is_printed_exactly(case):
    recipe, expected = CASES[case]
    assert as_rust(recipe) == expected


def test_a_recipe_without_sources_prints_a_pytorch_store_for_model_pt():
    assert 'PytorchStore::from_file(r"model.pt")' in as_rust(Recipe())


def _burnpack(name: str, names: list[str]) -> str:
    """A real Burnpack file holding ``names`` (in the working folder: the chain prints the path as given)."""
    export(ArrayStore({n: np.full((2,), i, np.float32) for i, n in enumerate(names)}).entries, name)
    return name


def replay(text: str, names: list[str]) -> list[str]:
    """The chain's remap patterns run over ``names`` as burn-store's KeyRemapper does, each on the previous result."""
    pairs = re.findall(r'\.with_remap_pattern\(r(#*)"(.*?)"\1, r(#*)"(.*?)"\3\)', text)
    rules = compile_rules([RemapRule(p, r) for _, p, _, r in pairs])
    return [remap_name(n, rules) for n in names]


def test_renumbering_is_printed_as_renames_in_the_order_that_replays_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = ["fc.2.weight", "fc.10.weight", "fc.11.weight", "blocks.3.fc.1.bias", "blocks.5.fc.1.bias", "q.2.r.8.w",
             "q.10.w", "head.weight"]
    recipe = Recipe(sources=(SourceSpec(_burnpack("m.bpk", names)),), adapters=("contiguous-indices",))
    with open_store("m.bpk") as store:
        planned = plan([store], recipe)
        text = as_rust(recipe, [store], planned)
    assert text == (
        HEAD22 + "use burn_store::{BurnpackStore, ModuleSnapshot};\n"
        "// contiguous indices, which BurnpackStore cannot do, as this file's 7 renames\n"
        'let mut store = BurnpackStore::from_file(r"m.bpk")\n'
        '    .with_remap_pattern(r"^fc\\.2\\.weight$", r"fc.0.weight")\n'  # the fewest index steps first
        '    .with_remap_pattern(r"^blocks\\.3\\.fc\\.1\\.bias$", r"blocks.0.fc.0.bias")\n'
        '    .with_remap_pattern(r"^blocks\\.5\\.fc\\.1\\.bias$", r"blocks.1.fc.0.bias")\n'
        '    .with_remap_pattern(r"^fc\\.10\\.weight$", r"fc.1.weight")\n'
        '    .with_remap_pattern(r"^q\\.10\\.w$", r"q.1.w")\n'  # a tie (10 steps each): by the file's name
        '    .with_remap_pattern(r"^q\\.2\\.r\\.8\\.w$", r"q.0.r.0.w")\n'
        '    .with_remap_pattern(r"^fc\\.11\\.weight$", r"fc.2.weight");\n' + LOAD)
    by_source = {t.source_name: t.name for t in planned.tensors}
    assert replay(text, names) == [by_source[n] for n in names]  # fc.11 -> fc.2 after fc.2 -> fc.0, never before


def test_enum_variants_the_template_skips_are_printed_as_renames_shortest_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = ["m.Alpha.w", "m.Beta.v", "zed.Conv.weight", "a.b.c.Var.w", "x.One.Two.w", "head.weight"]
    _burnpack("v.bpk", names)
    _burnpack("t.bpk", ["m.w", "m.v", "zed.weight", "a.b.c.w", "x.w", "out.weight"])
    recipe = Recipe(sources=(SourceSpec("v.bpk"),), adapters=("skip-enum-variants",),
                    remaps=(RemapRule(r"^head\.", "out."),), template="t.bpk")
    with open_store("v.bpk") as store, open_store("t.bpk") as template:
        planned = plan([store], recipe, template=template)
        text = as_rust(recipe, [store], planned)
    assert text == (
        HEAD22 + "use burn_store::{BurnpackStore, ModuleSnapshot};\n"
        "// enum variants skipped, which BurnpackStore cannot do, as this file's 5 renames\n"
        'let mut store = BurnpackStore::from_file(r"v.bpk")\n'
        '    .with_remap_pattern(r"^head\\.", r"out.")\n'  # the recipe's own remap, once, first
        '    .with_remap_pattern(r"^m\\.Alpha\\.w$", r"m.w")\n'
        '    .with_remap_pattern(r"^m\\.Beta\\.v$", r"m.v")\n'
        '    .with_remap_pattern(r"^zed\\.Conv\\.weight$", r"zed.weight")\n'
        '    .with_remap_pattern(r"^x\\.One\\.Two\\.w$", r"x.w")\n'
        '    .with_remap_pattern(r"^a\\.b\\.c\\.Var\\.w$", r"a.b.c.w");\n' + LOAD)
    assert replay(text, names) == ["m.w", "m.v", "zed.weight", "a.b.c.w", "x.w", "out.weight"]


def test_each_source_gets_its_own_chain(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _burnpack("a.bpk", ["x.Var.w", "fc.3.w"])
    _burnpack("b.bpk", ["y.Var.w", "fc.5.w"])
    recipe = Recipe(sources=(SourceSpec("a.bpk"), SourceSpec("b.bpk")), adapters=("contiguous-indices",),
                    module_overrides={"x.Var": "EnumVariant", "y.Var": "EnumVariant"})
    with open_store("a.bpk") as a, open_store("b.bpk") as b:
        text = as_rust(recipe, [a, b], plan([a, b], recipe))
    assert text == (
        HEAD22 + "use burn_store::{BurnpackStore, ModuleSnapshot};\n"
        "// contiguous indices, which BurnpackStore cannot do, as this file's 1 rename\n"
        "// enum variants skipped, which BurnpackStore cannot do, as this file's 1 rename\n"
        'let mut store = BurnpackStore::from_file(r"a.bpk")\n'
        '    .with_remap_pattern(r"^fc\\.3\\.w$", r"fc.0.w")\n'
        '    .with_remap_pattern(r"^x\\.Var\\.w$", r"x.w");\n' + LOAD + "\n\n"
        "// contiguous indices, which BurnpackStore cannot do, as this file's 1 rename\n"
        "// enum variants skipped, which BurnpackStore cannot do, as this file's 1 rename\n"
        'let mut store = BurnpackStore::from_file(r"b.bpk")\n'
        '    .with_remap_pattern(r"^fc\\.5\\.w$", r"fc.0.w")\n'
        '    .with_remap_pattern(r"^y\\.Var\\.w$", r"y.w");\n' + LOAD + "\n"
        "// Store Studio only: module 'x.Var' treated as EnumVariant\n"
        "// Store Studio only: module 'y.Var' treated as EnumVariant")


def test_a_source_without_its_opened_store_gets_the_comments(tmp_path, monkeypatch):
    """The window passes the stores it has open; a source beyond them is printed as without its file."""
    monkeypatch.chdir(tmp_path)
    _burnpack("a.bpk", ["fc.3.w"])
    recipe = Recipe(sources=(SourceSpec("a.bpk"), SourceSpec("b.bpk")), adapters=("contiguous-indices",))
    with open_store("a.bpk") as a:
        text = as_rust(recipe, [a])
    assert text == (
        HEAD22 + "use burn_store::{BurnpackStore, ModuleSnapshot};\n"
        "// contiguous indices, which BurnpackStore cannot do, as this file's 1 rename\n"
        'let mut store = BurnpackStore::from_file(r"a.bpk")\n'
        '    .with_remap_pattern(r"^fc\\.3\\.w$", r"fc.0.w");\n' + LOAD + "\n\n" + LEFT_RENUMBER
        + 'let mut store = BurnpackStore::from_file(r"b.bpk");\n' + LOAD)


def test_a_dollar_in_a_name_is_doubled_in_its_replacement(tmp_path, monkeypatch):
    """Rust's regex reads ``$`` in a replacement as a group reference: a literal one is ``$$``."""
    monkeypatch.chdir(tmp_path)
    recipe = Recipe(sources=(SourceSpec(_burnpack("d.bpk", ["w$.3.x"])),), adapters=("contiguous-indices",))
    with open_store("d.bpk") as store:
        text = as_rust(recipe, [store], plan([store], recipe))
    assert '    .with_remap_pattern(r"^w\\$\\.3\\.x$", r"w$$.0.x");\n' in text


def test_a_fuse_back_to_pytorch_is_left_to_do_naming_the_fused_tensors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    export(ArrayStore(burn_named(torch_state())).entries, "burn.bpk")
    recipe = Recipe(sources=(SourceSpec("burn.bpk"),), adapters=("burn-to-pytorch",))
    with open_store("burn.bpk") as store:
        text = as_rust(recipe, [store], plan([store], recipe))
    assert text == (
        HEAD22 + "use burn_store::{BurnToPyTorchAdapter, BurnpackStore, ModuleSnapshot};\n"
        "// left to do: fuse LSTM gates (lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0 and 1 more): "
        + CANNOT_FUSE + "\n"
        "// left to do: fuse GRU gates (gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0 and 1 more): "
        + CANNOT_FUSE + "\n"
        "// left to do: fuse attention q/k/v (attn.in_proj_weight, attn.in_proj_bias): " + CANNOT_FUSE + "\n"
        'let mut store = BurnpackStore::from_file(r"burn.bpk")\n    .with_from_adapter(BurnToPyTorchAdapter);\n' + LOAD)


def test_three_fused_tensors_are_all_named_with_no_more_after_them(tmp_path, monkeypatch):
    """Two attentions, one without biases: three fused q/k/v tensors in a file saved by the safetensors library."""
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    layers = torch.nn.ModuleDict({"a": torch.nn.MultiheadAttention(4, 2), "b": torch.nn.MultiheadAttention(4, 2, bias=False)})
    save_file({k: v.detach().contiguous() for k, v in layers.state_dict().items()}, "attn.safetensors")
    recipe = Recipe(sources=(SourceSpec("attn.safetensors"),), adapters=("pytorch-to-burn",))
    with open_store("attn.safetensors") as store:
        text = as_rust(recipe, [store], plan([store], recipe))
    assert text == (
        HEAD22 + "use burn_store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};\n"
        "// left to do: split attention q/k/v (a.in_proj_bias, a.in_proj_weight, b.in_proj_weight): " + CANNOT_FUSE + "\n"
        'let mut store = SafetensorsStore::from_file(r"attn.safetensors")\n    .with_from_adapter(PyTorchToBurnAdapter);\n'
        + LOAD)


def test_the_fuse_is_left_to_do_in_the_chain_of_the_source_holding_the_gates(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _burnpack("a.bpk", ["extra.w"])
    export(ArrayStore(burn_named(torch_state())).entries, "burn.bpk")
    recipe = Recipe(sources=(SourceSpec("a.bpk"), SourceSpec("burn.bpk")), adapters=("burn-to-pytorch",))
    with open_store("a.bpk") as a, open_store("burn.bpk") as b:
        first, second = as_rust(recipe, [a, b], plan([a, b], recipe)).split("\n\n")
    assert "left to do" not in first
    assert [line.partition(" (")[0] for line in second.splitlines() if line.startswith("//")] == [
        "// left to do: fuse LSTM gates", "// left to do: fuse GRU gates", "// left to do: fuse attention q/k/v"]


@pytest.mark.parametrize("recipe", [
    Recipe(sources=(SourceSpec("gone.bpk"),)),
    Recipe(sources=(SourceSpec("gone.bpk"),), adapters=("pytorch-to-burn",), module_overrides={"fc": "Linear"}),
    Recipe(sources=(SourceSpec("gone.pt"),), adapters=("contiguous-indices", "skip-enum-variants")),
])
def test_the_recipe_command_opens_no_source_when_no_step_needs_its_names(tmp_path, monkeypatch, capsys, recipe):
    monkeypatch.chdir(tmp_path)  # the sources do not exist: opening one would print a note
    assert rust(recipe) == as_rust(recipe)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("recipe", [
    Recipe(sources=(SourceSpec("gone.bpk"),), adapters=("skip-enum-variants",)),
    Recipe(sources=(SourceSpec("gone.pt"), SourceSpec("gone.bpk")), module_overrides={"x.Var": "EnumVariant"}),
])
def test_the_recipe_command_opens_the_sources_when_a_burnpack_step_needs_their_names(tmp_path, monkeypatch, capsys,
                                                                                      recipe):
    monkeypatch.chdir(tmp_path)
    assert rust(recipe) == as_rust(recipe)  # the files are gone: comments instead of renames, and a note says why
    assert capsys.readouterr().err.startswith("note: ")


def test_the_command_line_keeps_every_include_and_the_whole_line_before_the_note():
    recipe = Recipe(sources=(SourceSpec("a.pt"),), filter=Filter(include=("^enc", "dec"), full_paths=("h.w",),
                                                                 where=(Predicate("ndim", "==", 2),)))
    assert as_cli(recipe) == ("store-studio convert a.pt OUT --include '^enc' --include dec --include '^h\\.w$'"
                              "  # predicates, casts by module, per-source filters, rotary rows or adapters on a later source need --recipe FILE")
