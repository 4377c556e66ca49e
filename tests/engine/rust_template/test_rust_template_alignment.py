"""A template read from Rust source is taken wherever a ``.bpk`` template is, so a user with only the model's
Rust code can still fit a checkpoint to it: the alignment
(run-time shapes and optional tensors counted apart from mismatches and missing ones), the plan's module kinds,
``diff --suggest``, ``convert --template``, ``recipe --as rust`` (which names the struct) and Bin records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from engine import ArrayStore, BurnVersion, FormatError, export, open_store
from engine.cli import main
from engine.formats.rust_model import RUNTIME_DIM as R
from engine.formats.rust_model import open_rust_template
from engine.surgery import Recipe, SourceSpec, align, plan
from engine.surgery.printers import as_rust
from tests.helpers.formats_burn_record_writers import Param, Settings, Some, id_text, write_record

from tests.helpers.engine_rust_sources import BURN_MODELS, BURN_PT, read

GUIDE = BURN_MODELS / "guide-v0.21.0" / "model.rs"


def guide_like(in_channels: int = 1, hidden: int = 512) -> ArrayStore:
    """What the guide's model holds once loaded, in Burn's layout, with the first conv's input channels chosen."""
    return ArrayStore({"conv1.weight": np.zeros((8, in_channels, 3, 3), np.float32), "conv1.bias": np.zeros(8, np.float32),
                       "conv2.weight": np.zeros((16, 8, 3, 3), np.float32), "conv2.bias": np.zeros(16, np.float32),
                       "linear1.weight": np.zeros((1024, hidden), np.float32),
                       "linear1.bias": np.zeros(hidden, np.float32), "linear2.weight": np.zeros((hidden, 10), np.float32),
                       "linear2.bias": np.zeros(10, np.float32)})


def test_a_shape_set_at_run_time_loads_and_is_counted_apart_from_mismatches():
    with open_rust_template(GUIDE, BurnVersion.V0_21) as template:
        report = align(guide_like(in_channels=3), template)
    assert report.applied == ["conv1.bias", "conv2.weight", "conv2.bias", "linear1.weight", "linear1.bias",
                              "linear2.weight", "linear2.bias"]
    assert report.runtime_shapes == ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"]
    assert [(m.name, m.source_shape, m.template_shape) for m in report.shape_mismatches] == [
        ("conv1.weight", (8, 3, 3, 3), (8, 1, 3, 3))]  # a known dimension still decides
    assert report.lines() == [
        "applied 7, missing 0, unused 0, shape mismatches 1, dtype differences 0, shapes set at run time 4",
        "  shape mismatch conv1.weight: source [8, 3, 3, 3], template [8, 1, 3, 3]",
        *(f"  shape set at run time {n}" for n in ("linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"))]
    assert report.to_json()["runtime_shapes"] == report.runtime_shapes and not report.ok


def test_a_known_dimension_against_a_transposed_weight_reads_matches_if_transposed():
    with open_rust_template(GUIDE, BurnVersion.V0_21) as template:
        source = ArrayStore({"linear1.weight": np.zeros((512, 1024), np.float32)})
        (mismatch,) = align(source, template).shape_mismatches
    assert mismatch.template_shape == (1024, R) and mismatch.matches_if_transposed
    assert align(source, template).lines()[1] == \
        "  shape mismatch linear1.weight: source [512, 1024], template [1024, ?] (matches if transposed)"


def test_an_optional_tensor_the_source_lacks_is_not_missing(tmp_path: Path):
    template = read(tmp_path, """
        #[derive(Module)] struct Net<B: Backend> { fc: Linear<B>, head: Option<Linear<B>> }
        impl<B: Backend> Net<B> {
            fn new(head: bool, d: &B::Device) -> Self {
                Self { fc: LinearConfig::new(2, 3).with_bias(head).init(d),
                       head: if head { Some(LinearConfig::new(3, 1).init(d)) } else { None } }
            }
        }
    """)
    report = align(ArrayStore({"fc.weight": np.zeros((2, 3), np.float32)}), template)
    assert report.applied == ["fc.weight"] and report.missing == [] and report.ok
    assert report.runtime_absent == ["fc.bias", "head.weight", "head.bias"]
    assert report.lines()[0] == ("applied 1, missing 0, unused 0, shape mismatches 0, dtype differences 0, "
                                 "present at run time or not 3")


OPEN_VEC = """
    #[derive(Module)] struct Block<B: Backend> { fc: Linear<B>, norm: LayerNorm<B> }
    #[derive(Module)] struct Net<B: Backend> { blocks: Vec<Block<B>> }
    impl<B: Backend> Net<B> {
        fn new(n: usize, d: &B::Device) -> Self {
            Self { blocks: (0..n).map(|_| Block { fc: LinearConfig::new(4, 4).init(d),
                                                   norm: LayerNormConfig::new(4).init(d) }).collect() }
        }
    }
"""


def block_tensors(*indices: int, without: str = "") -> dict[str, np.ndarray]:
    arrays = {}
    for i in indices:
        for leaf, shape in (("fc.weight", (4, 4)), ("fc.bias", (4,)), ("norm.gamma", (4,)), ("norm.beta", (4,))):
            if f"blocks.{i}.{leaf}" != without:
                arrays[f"blocks.{i}.{leaf}"] = np.zeros(shape, np.float32)
    return arrays


def test_a_vec_of_run_time_length_takes_as_many_elements_as_the_source_fills(tmp_path: Path):
    template = read(tmp_path, OPEN_VEC)
    assert template.entries == [] and "blocks.7.norm.beta" in template and "blocks.x.norm.beta" not in template
    assert template.entry("blocks.7.fc.weight").shape == (4, 4)
    report = align(ArrayStore(block_tensors(0, 1, 2, without="blocks.1.fc.bias")), template)
    assert len(report.applied) == 11 and report.missing == ["blocks.1.fc.bias"] and report.unused == []
    report = align(ArrayStore({"model.blocks.0.fc.weight": np.zeros((4, 4), np.float32)}), template)
    assert report.missing == ["blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.0.norm.gamma", "blocks.0.norm.beta"]
    assert report.suggestions["blocks.0.fc.weight"] == ["model.blocks.0.fc.weight"]  # at least the first is wanted


def test_the_sources_declared_module_kinds_settle_what_the_names_leave_open(tmp_path: Path):
    template = read(tmp_path, """
        #[derive(Module)] struct Net<B: Backend> { tok: Embedding<B>, proj: Linear<B> }
        impl NetConfig {
            fn init<B: Backend>(&self, d: &B::Device) -> Net<B> {
                Net { tok: EmbeddingConfig::new(self.vocab, self.dim).init(d),
                      proj: LinearConfig::new(self.dim, self.out).with_bias(false).init(d) }
            }
        }
    """)
    source = ArrayStore({"tok.weight": np.zeros((10, 4), np.float32), "proj.weight": np.zeros((6, 4), np.float32)})
    recipe = Recipe(adapters=("pytorch-to-burn",))
    alone = plan([source], recipe)
    assert alone.guesses  # the names alone leave each 2-D weight's kind a guess
    settled = plan([source], recipe, template=template)
    assert settled.guesses == [] and settled.modules["tok"].kind == "Embedding"
    assert {t.name: tuple(t.shape) for t in settled.tensors} == {"tok.weight": (10, 4), "proj.weight": (4, 6)}
    assert align(settled, template).ok


def convert(*args: object) -> int:
    return main(["convert", *map(str, args)])


def test_diff_suggests_the_adapter_and_its_recipe_converts_burns_checkpoint(tmp_path: Path, capsys):
    source, template = BURN_PT / "complex_nested" / "complex_nested.pt", \
        f"{BURN_MODELS / 'complex_nested-v0.21.0' / 'mod.rs'}::Net"
    saved = tmp_path / "r.recipe.json"
    assert main(["diff", str(source), template, "--suggest", "--save-recipe", str(saved)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "applied 12, missing 6, unused 9, shape mismatches 2, dtype differences 0"
    assert any(line.startswith("suggest:") and "pytorch-to-burn" in line for line in out)
    assert json.loads(saved.read_text())["template"].endswith("mod.rs::Net")
    assert convert(tmp_path / "net.bpk", "--recipe", saved) == 0
    assert capsys.readouterr().out.splitlines()[0] == \
        "applied 20, missing 0, unused 3, shape mismatches 0, dtype differences 0"


def test_diff_against_rust_source_prints_the_alignment_and_its_json(tmp_path: Path, capsys):
    source = tmp_path / "guide.safetensors"
    export(guide_like().entries, source, "safetensors")
    assert main(["diff", str(source), str(GUIDE), "--exit-code"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == \
        "applied 8, missing 0, unused 0, shape mismatches 0, dtype differences 0, shapes set at run time 4"
    assert main(["diff", str(source), str(GUIDE), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["runtime_shapes"] == ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"]
    assert document["missing"] == [] and len(document["applied"]) == 8
    other = tmp_path / "short.safetensors"
    export(ArrayStore({"conv1.bias": np.zeros(8, np.float32)}).entries, other, "safetensors")
    assert main(["diff", str(other), str(GUIDE), "--exit-code"]) == 1  # tensors missing: not the same model


@pytest.mark.parametrize("model, version, line", [
    (GUIDE, "0.21", "// model: Model<B>, the struct Model at model.rs:11 (the template), as your code builds it"),
    (BURN_MODELS / "guide-v0.22.0-pre.2" / "model.rs", "0.22",
     "// model: Model, the struct Model at model.rs:11 (the template), as your code builds it"),
])
def test_the_rust_chain_names_the_struct_it_loads_into(model, version, line, tmp_path: Path, capsys):
    recipe = Recipe(sources=(SourceSpec(str(tmp_path / "guide.pt")),), template=str(model),
                    adapters=("pytorch-to-burn",)).with_changes(burn_version=BurnVersion(version))
    with open_rust_template(model, BurnVersion(version)) as template:
        chain = as_rust(recipe, template=template).splitlines()
    assert line in chain and chain.index(line) < chain.index(next(c for c in chain if c.startswith("let mut store")))
    assert chain[-1] == "let result = model.load_from(&mut store)?;"
    saved = recipe.save(tmp_path / "r.recipe.json")
    assert main(["recipe", str(saved), "--as", "rust"]) == 0
    assert line in capsys.readouterr().out.splitlines()
    assert not any(c.startswith("// model:") for c in as_rust(recipe).splitlines())  # no Rust template, no struct


def test_a_rust_template_names_a_bin_records_parameters_in_burns_order(tmp_path: Path):
    template = read(tmp_path, """
        #[derive(Module)] struct Net<B: Backend> { fc: Linear<B> }
        impl NetConfig { fn init<B: Backend>(&self, d: &B::Device) -> Net<B> {
            Net { fc: LinearConfig::new(self.d_in, 3).init(d) } } }
    """)
    weight, bias = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3, np.float32)
    record = write_record(tmp_path, "net", {"fc": {"weight": Param(id_text(1), weight), "bias": Some(Param(id_text(2), bias))}},
                          Settings(recorder="Bin"))
    with open_store(record, template=template.path) as store:
        assert store.names == ["fc.weight", "fc.bias"]
        np.testing.assert_array_equal(store.read("fc.weight"), weight)
        assert store.metadata["burn.names"] == "from the template model.rs"


def test_a_torch_model_with_a_data_parallel_prefix_loads_after_the_suggested_remap(tmp_path: Path, capsys):
    torch.manual_seed(0)
    net = nn.DataParallel(nn.Sequential())
    net.module.add_module("fc", nn.Linear(2, 3))
    source = tmp_path / "dp.pt"
    torch.save(net.state_dict(), source)  # module.fc.weight, module.fc.bias: as DataParallel saves them
    template = read(tmp_path, """
        #[derive(Module)] struct Net<B: Backend> { fc: Linear<B> }
        impl NetConfig { fn init<B: Backend>(&self, d: &B::Device) -> Net<B> {
            Net { fc: LinearConfig::new(self.d_in, self.d_out).init(d) } } }
    """)
    saved = tmp_path / "r.recipe.json"
    assert main(["diff", str(source), str(template.path), "--suggest", "--save-recipe", str(saved)]) == 0
    suggestions = [line for line in capsys.readouterr().out.splitlines() if line.startswith("suggest:")]
    assert any("module." in line for line in suggestions)
    assert convert(tmp_path / "out.bpk", "--recipe", saved, "--adapter", "pytorch-to-burn") == 0
    with open_store(tmp_path / "out.bpk") as written:
        np.testing.assert_array_equal(written.read("fc.weight"), net.module.fc.weight.detach().numpy().T)


def test_a_source_filling_more_vec_elements_than_a_model_may_save_is_refused(tmp_path: Path):
    template = read(tmp_path, OPEN_VEC)
    many = {f"blocks.{i}.fc.weight": np.zeros(1, np.float32) for i in range(25_001)}  # 4 tensors each: 100,004
    with pytest.raises(FormatError, match=r"^model\.rs: would want more than 100,000 tensors under blocks\.\* \(one "
                                          r"for each of 25,001 indices the source fills\)$"):
        align(ArrayStore(many), template)
    assert len(align(ArrayStore(dict(list(many.items())[:100])), template).missing) == 300
