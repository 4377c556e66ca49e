"""What a model's Rust source says it saves: Vec counts, Options, enums, params, consts, configs and Burn's nn
modules, read without compiling or running anything (engine/formats/rust_model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import BurnVersion, FormatError
from engine.formats.rust_model import RUNTIME_DIM as R

from tests.helpers.engine_rust_sources import optional, read, shapes


def test_vec_counts_come_from_the_constructor_else_the_vec_is_open(tmp_path: Path):
    template = read(tmp_path, """
        const LAYERS: usize = 3;
        #[derive(Module, Debug)]
        pub struct Net<B: Backend> {
            mapped: Vec<Linear<B>>,
            repeated: Vec<Linear<B>>,
            listed: Vec<Linear<B>>,
            pushed: Vec<Linear<B>>,
            open: Vec<Linear<B>>,
        }
        impl<B: Backend> Net<B> {
            pub fn new(n: usize, device: &B::Device) -> Self {
                let mut pushed = Vec::new();
                for i in 0..2 {
                    pushed.push(LinearConfig::new(4, i + 1).with_bias(false).init(device));
                }
                Self {
                    mapped: (0..LAYERS).map(|i| LinearConfig::new(2 * (i + 1), 2).with_bias(false).init(device)).collect(),
                    repeated: vec![LinearConfig::new(5, 6).with_bias(false).init(device); 2],
                    listed: vec![LinearConfig::new(1, 2).with_bias(false).init(device)],
                    pushed,
                    open: (0..n).map(|_| LinearConfig::new(7, 8).with_bias(false).init(device)).collect::<Vec<_>>(),
                }
            }
        }
    """)
    assert shapes(template) == {"mapped.0.weight": (2, 2), "mapped.1.weight": (4, 2), "mapped.2.weight": (6, 2),
                                "repeated.0.weight": (5, 6), "repeated.1.weight": (5, 6), "listed.0.weight": (1, 2),
                                "pushed.0.weight": (4, 1), "pushed.1.weight": (4, 2), "open.*.weight": (7, 8)}
    assert [e.name for e in template.entries if e.name.startswith("open")] == []  # no element named before a source


def test_a_loop_of_run_time_length_makes_its_vec_open(tmp_path: Path):
    template = read(tmp_path, """
        #[derive(Module)] struct Net<B: Backend> { blocks: Vec<Linear<B>> }
        impl<B: Backend> Net<B> {
            fn new(config: &NetConfig, device: &B::Device) -> Self {
                let mut blocks = Vec::with_capacity(config.n);
                for _ in 0..config.n { blocks.push(LinearConfig::new(3, 3).init(device)); }
                Self { blocks }
            }
        }
    """)
    assert shapes(template) == {"blocks.*.weight": (3, 3), "blocks.*.bias": (3,)}


def test_options_are_there_absent_or_set_at_run_time(tmp_path: Path):
    template = read(tmp_path, """
        #[derive(Module)]
        struct Net<B: Backend> { head: Option<Linear<B>>, gone: Option<Linear<B>>, maybe: Option<Linear<B>>,
                                 flagged: Linear<B>, unbuilt: Option<Linear<B>> }
        impl<B: Backend> Net<B> {
            fn new(flag: bool, device: &B::Device) -> Self {
                let maybe = if flag { Some(LinearConfig::new(2, 2).init(device)) } else { None };
                Self { head: Some(LinearConfig::new(4, 1).init(device)), gone: None, maybe,
                       flagged: LinearConfig::new(1, 1).with_bias(flag).init(device), unbuilt: load(device) }
            }
        }
    """)
    assert shapes(template) == {"head.weight": (4, 1), "head.bias": (1,), "maybe.weight": (2, 2), "maybe.bias": (2,),
                                "flagged.weight": (1, 1), "flagged.bias": (1,), "unbuilt.weight": (R, R),
                                "unbuilt.bias": (R,)}
    assert optional(template) == {"maybe.weight", "maybe.bias", "flagged.bias", "unbuilt.weight", "unbuilt.bias"}


def test_an_enum_adds_its_variant_and_the_constructor_picks_it(tmp_path: Path):
    template = read(tmp_path, """
        #[derive(Module)] enum Mixer<B: Backend> { Dense(Linear<B>), Conv(Conv1d<B>), Nothing }
        #[derive(Module)] struct Net<B: Backend> { mixer: Mixer<B>, either: Mixer<B> }
        impl<B: Backend> Net<B> {
            fn new(dense: bool, device: &B::Device) -> Self {
                let either = if dense { Mixer::Dense(LinearConfig::new(3, 3).init(device)) }
                             else { Mixer::Conv(Conv1dConfig::new(3, 3, 1).init(device)) };
                Self { mixer: Mixer::Dense(LinearConfig::new(8, 4).init(device)), either }
            }
        }
    """)
    assert shapes(template) == {"mixer.Dense.weight": (8, 4), "mixer.Dense.bias": (4,),
                                "either.Dense.weight": (3, 3), "either.Dense.bias": (3,),
                                "either.Conv.weight": (3, 3, 1), "either.Conv.bias": (3,)}
    assert optional(template) == {n for n in shapes(template) if n.startswith("either.")}


def test_params_saved_raw_tensors_and_skipped_fields_not(tmp_path: Path):
    template = read(tmp_path, """
        #[derive(Module)]
        struct Net<B: Backend> {
            scale: Param<Tensor<B, 2>>,
            steps: Param<Tensor<B, 1, Int>>,
            mean: RunningState<Tensor<B, 1>>,
            cache: Tensor<B, 3>,
            #[module(skip)]
            probe: Linear<B>,
            marker: PhantomData<B>,
            size: usize,
            pair: (Linear<B>, Embedding<B>),
            fixed: [Linear<B>; 2],
        }
        impl<B: Backend> Net<B> {
            fn new(device: &B::Device) -> Self {
                Self { scale: Param::from_tensor(Tensor::zeros([3, 4], device)),
                       steps: Param::from_tensor(Tensor::zeros([1], device)),
                       mean: RunningState::new(Tensor::ones([5], device)),
                       cache: Tensor::zeros([1, 2, 3], device), probe: LinearConfig::new(9, 9).init(device),
                       marker: PhantomData, size: 3,
                       pair: (LinearConfig::new(2, 3).init(device), EmbeddingConfig::new(10, 4).init(device)),
                       fixed: [LinearConfig::new(1, 2).init(device), LinearConfig::new(2, 3).init(device)] }
            }
        }
    """)
    assert shapes(template) == {"scale": (3, 4), "steps": (1,), "mean": (5,), "pair.0.weight": (2, 3),
                                "pair.0.bias": (3,), "pair.1.weight": (10, 4), "fixed.0.weight": (1, 2),
                                "fixed.0.bias": (2,), "fixed.1.weight": (2, 3), "fixed.1.bias": (3,)}
    assert template.entry("steps").dtype.name == "I64" and template.entry("scale").dtype.name == "F32"


def test_consts_arithmetic_casts_closures_and_user_configs_with_defaults(tmp_path: Path):
    template = read(tmp_path, """
        const BASE: usize = 16;
        #[derive(Config, Debug)]
        pub struct BlockConfig {
            channels: [usize; 2],
            #[config(default = "[3, 3]")]
            kernel: [usize; 2],
            #[config(default = 2)]
            groups: usize,
            hidden: Option<usize>,
        }
        #[derive(Module)] struct Block<B: Backend> { conv: Conv2d<B>, proj: Option<Linear<B>> }
        impl BlockConfig {
            fn init<B: Backend>(&self, device: &B::Device) -> Block<B> {
                let proj = self.hidden.map(|h| LinearConfig::new(self.channels[1], h).init(device));
                Block { conv: Conv2dConfig::new(self.channels, self.kernel).with_groups(self.groups).init(device), proj }
            }
        }
        #[derive(Module)] struct Net<B: Backend> { a: Block<B>, b: Block<B>, head: Linear<B> }
        impl<B: Backend> Net<B> {
            const OUT: usize = BASE * 4 - 1;
            fn new(device: &B::Device) -> Self {
                let linear = |d_in: usize| LinearConfig::new(d_in, Self::OUT).init(device);
                Self {
                    a: BlockConfig::new([BASE, BASE * 2]).init(device),
                    b: BlockConfig::new([4, 8]).with_kernel([5, 1]).with_groups(1).with_hidden(Some(7)).init(device),
                    head: linear((BASE as f64 * 2.5) as usize),
                }
            }
        }
    """)
    assert shapes(template) == {"a.conv.weight": (32, 8, 3, 3), "a.conv.bias": (32,),
                                "b.conv.weight": (8, 4, 5, 1), "b.conv.bias": (8,), "b.proj.weight": (8, 7),
                                "b.proj.bias": (7,), "head.weight": (40, 63), "head.bias": (63,)}
    assert optional(template) == set()  # a's hidden is None: no proj; b's is Some(7)


def test_burn_0_22_modules_have_no_backend_parameter(tmp_path: Path):
    template = read(tmp_path, """
        #[derive(Module, Debug)]
        pub struct Net { fc: Linear, w: Param<Tensor<2>>, ids: Param<Tensor<1, Int>> }
        impl Net {
            pub fn new(device: &Device) -> Self {
                Self { fc: LinearConfig::new(2, 3).init(device), w: Param::from_tensor(Tensor::zeros([4, 5], device)),
                       ids: Param::from_tensor(Tensor::zeros([6], device)) }
            }
        }
    """, BurnVersion.V0_22)
    assert shapes(template) == {"fc.weight": (2, 3), "fc.bias": (3,), "w": (4, 5), "ids": (6,)}
    assert template.model.rust_type == "Net" and template.entry("ids").dtype.name == "I64"


NN_MODULES = """
    #[derive(Module)]
    struct Net<B: Backend> {
        lstm: Lstm<B>, bi: BiLstm<B>, gru: Gru<B>, mha: MultiHeadAttention<B>, encoder: TransformerEncoder<B>,
        decoder: TransformerDecoder<B>, gn: GroupNorm<B>, inorm: InstanceNorm<B>, ln: LayerNorm<B>, rms: RmsNorm<B>,
        up: ConvTranspose2d<B>, c1: Conv1d<B>, c3: Conv3d<B>, deform: DeformConv2d<B>, prelu: PRelu<B>,
        act: Activation<B>, norm: Normalization<B>, glu: SwiGlu<B>, pool: MaxPool2d, drop: Dropout,
    }
    impl<B: Backend> Net<B> {
        fn new(device: &B::Device) -> Self {
            Self {
                lstm: LstmConfig::new(3, 5, true).init(device),
                bi: BiLstmConfig::new(2, 4, false).init(device),
                gru: GruConfig::new(3, 5, false).init(device),
                mha: MultiHeadAttentionConfig::new(8, 2).init(device),
                encoder: TransformerEncoderConfig::new(8, 16, 2, 2).init(device),
                decoder: TransformerDecoderConfig::new(8, 16, 2, 1).init(device),
                gn: GroupNormConfig::new(2, 6).with_affine(false).init(device),
                inorm: InstanceNormConfig::new(6).init(device),
                ln: LayerNormConfig::new(6).with_bias(false).init(device),
                rms: RmsNormConfig::new(6).init(device),
                up: ConvTranspose2dConfig::new([4, 6], [2, 2]).with_groups(2).init(device),
                c1: Conv1dConfig::new(2, 4, 3).with_bias(false).init(device),
                c3: Conv3dConfig::new([1, 2], [1, 2, 3]).init(device),
                deform: DeformConv2dConfig::new([4, 2], [3, 3]).with_weight_groups(2).init(device),
                prelu: PReluConfig::new().init(device),
                act: ActivationConfig::PRelu(PReluConfig::new().with_num_parameters(3)).init(device),
                norm: NormalizationConfig::Batch(BatchNormConfig::new(5)).init(device),
                glu: SwiGluConfig::new(4, 2).init(device),
                pool: MaxPool2dConfig::new([2, 2]).init(),
                drop: DropoutConfig::new(0.1).init(),
            }
        }
    }
"""


def test_burns_nn_modules_save_what_their_structs_name(tmp_path: Path):
    saved = shapes(read(tmp_path, NN_MODULES))
    gates = {f"lstm.{g}.{t}.{leaf}": s for g in ("input_gate", "forget_gate", "output_gate", "cell_gate")
             for t, d_in in (("input_transform", 3), ("hidden_transform", 5))
             for leaf, s in (("weight", (d_in, 5)), ("bias", (5,)))}
    assert {n: s for n, s in saved.items() if n.startswith("lstm.")} == gates
    assert {n for n in saved if n.startswith("bi.")} == {f"bi.{d}.{g}.{t}.weight" for d in ("forward", "reverse")
                                                       for g in ("input_gate", "forget_gate", "output_gate", "cell_gate")
                                                       for t in ("input_transform", "hidden_transform")}
    assert {n for n in saved if n.startswith("gru.")} == {f"gru.{g}.{t}.weight" for g in ("update_gate", "reset_gate",
                                                         "new_gate") for t in ("input_transform", "hidden_transform")}
    assert {n: s for n, s in saved.items() if n.startswith("mha.")} == {
        f"mha.{p}.{leaf}": s for p in ("query", "key", "value", "output") for leaf, s in (("weight", (8, 8)), ("bias", (8,)))}
    layer = {n[len("encoder.layers.1."):]: s for n, s in saved.items() if n.startswith("encoder.layers.1.")}
    assert layer == {**{f"mha.{p}.{leaf}": s for p in ("query", "key", "value", "output")
                        for leaf, s in (("weight", (8, 8)), ("bias", (8,)))},
                     "pwff.linear_inner.weight": (8, 16), "pwff.linear_inner.bias": (16,),
                     "pwff.linear_outer.weight": (16, 8), "pwff.linear_outer.bias": (8,),
                     **{f"norm_{i}.{p}": (8,) for i in (1, 2) for p in ("gamma", "beta")}}
    assert not any(n.startswith("encoder.layers.2.") for n in saved)
    assert {n.split(".")[3] for n in saved if n.startswith("decoder.layers.0.")} >= {"cross_attn", "self_attn", "pwff"}
    assert {n: s for n, s in saved.items() if n.split(".")[0] in ("gn", "inorm", "ln", "rms", "up", "c1", "c3",
                                                                  "deform", "prelu", "act", "norm", "glu")} == {
        "inorm.gamma": (6,), "inorm.beta": (6,), "ln.gamma": (6,), "rms.gamma": (6,),
        "up.weight": (4, 3, 2, 2), "up.bias": (6,), "c1.weight": (4, 2, 3), "c3.weight": (2, 1, 1, 2, 3),
        "c3.bias": (2,), "deform.weight": (2, 2, 3, 3), "deform.bias": (2,), "prelu.alpha": (1,),
        "act.PRelu.alpha": (3,), **{f"norm.Batch.{p}": (5,) for p in ("gamma", "beta", "running_mean", "running_var")},
        "glu.linear_inner.weight": (4, 2), "glu.linear_outer.weight": (4, 2)}


def test_a_module_burn_added_later_is_refused_at_an_earlier_version(tmp_path: Path):
    source = """
        #[derive(Module)] struct Net<B: Backend> { gru: BiGru<B> }
    """
    assert "gru.forward.update_gate.input_transform.weight" in shapes(read(tmp_path, source, BurnVersion.V0_21))
    with pytest.raises(FormatError, match=r"^model\.rs: line 2: field gru of Net \(gru\) has type BiGru<B>, which the "
                                          r"source declares nowhere and Burn 0\.20's nn does not have"):
        read(tmp_path, source, BurnVersion.V0_20)


def test_a_crate_folder_is_read_whole_and_its_build_output_skipped(tmp_path: Path):
    src = tmp_path / "src"
    (src / "blocks").mkdir(parents=True)
    (src / "model.rs").write_text("mod blocks;\n#[derive(Module)] pub struct Net<B: Backend> { block: Block<B> }\n"
                                  "impl<B: Backend> Net<B> { fn new(d: &B::Device) -> Self { Self { block: "
                                  "Block::new(d) } } }\n")
    (src / "blocks" / "mod.rs").write_text("#[derive(Module)] pub struct Block<B: Backend> { fc: Linear<B> }\n"
                                           "impl<B: Backend> Block<B> { pub fn new(d: &B::Device) -> Self { "
                                           "Self { fc: LinearConfig::new(2, 5).init(d) } } }\n")
    (tmp_path / "target").mkdir()
    (src / "target").mkdir()
    (src / "target" / "junk.rs").write_text("#[derive(Module)] struct Junk<B: Backend> { x: Linear<B> }")
    from engine.formats.rust_model import open_rust_template
    with open_rust_template(src) as template:
        assert shapes(template) == {"block.fc.weight": (2, 5), "block.fc.bias": (5,)}
        assert template.model.root.name == "Net" and template.files == [src]


def test_a_struct_in_a_test_module_is_no_top_level_model(tmp_path: Path):
    template = read(tmp_path, """
        #[derive(Module)] struct Net<B: Backend> { fc: Linear<B> }
        #[cfg(test)]
        mod tests {
            #[derive(Module)] struct Fixture<B: Backend> { other: Linear<B> }
        }
    """)
    assert template.model.root.name == "Net"


def test_the_reader_computes_what_rust_would_and_leaves_the_rest_unknown(tmp_path: Path):
    # each element of `dims` is a Linear whose d_input is one computed number: its weight's first dimension
    template = read(tmp_path, """
        const HEX: usize = 0x10;
        const BIN: usize = 0b101;
        const SHIFT: usize = 1 << 3;
        const NEG: i64 = -(-3);
        fn double(x: usize) -> usize { x * 2 }
        fn pick(flag: bool) -> usize { if flag { return 7; } 9 }
        #[derive(Config)] struct WideConfig { base: usize }
        impl WideConfig {
            fn doubled(mut self) -> Self { self.base *= 2; self }
        }
        #[derive(Module)] struct Net<B: Backend> { dims: Vec<Linear<B>> }
        impl<B: Backend> Net<B> {
            fn new(cfg: &Cfg, device: &B::Device) -> Self {
                let l = |d: usize| LinearConfig::new(d, 1).with_bias(false).init(device);
                let mut n = 1;
                n += 2;
                n *= 4;
                let (x, y) = (3, 4);
                let dims = [2usize, 3, 4];
                let m = match x { 3 => 5, _ => 5 };
                let z = if x > 2 && y < 10 || false { 11 } else { 0 };
                let picked: Vec<usize> = (0..3).enumerate().map(|(i, v)| i + v).collect();
                let mut grown = vec![1, 2];
                grown.extend(vec![3]);
                let open = vec![5usize; cfg.n];
                let either = match cfg.kind { 1 => 4, _ => 8 };
                let mut counted = 0;
                while counted < cfg.n { counted += 1; }
                let maybe = if let Some(k) = cfg.k { k } else { 2 };
                Self { dims: vec![
                    l(HEX), l(BIN), l(SHIFT), l(NEG as usize), l(n), l(dims.iter().product::<usize>()),
                    l(dims.iter().sum()), l(m), l(z), l((2.5f64 * 4.0) as usize), l(2usize.pow(5)),
                    l(7usize.max(3).min(6)), l(10usize.div_ceil(4)), l(dims[2] + dims.len()), l(Some(13).unwrap()),
                    l(picked[2]), l(grown.len()), l(double(3)), l(pick(true)), l(pick(false)),
                    l(WideConfig::new(4).doubled().base), l(usize::MAX / usize::MAX), l(open[0]),
                    l(8 / 0), l(usize::MAX + 1), l(cfg.n * 2), l(either), l(counted), l(maybe),
                ] }
            }
        }
    """)
    first = [template.entry(f"dims.{i}.weight").shape[0] for i in range(29)]
    assert first == [16, 5, 8, 3, 12, 24, 9, 5, 11, 10, 32, 6, 3, 7, 13, 4, 3, 6, 7, 9, 8, 1, 5,
                     R, R, R, R, R, R]  # a panic, an overflow, a config field, and what depends on them
