"""Burn's ``nn`` modules as data: what each one saves, read from Burn's source at each release.

For every module type a model's struct may hold (``Linear<B>``, ``Conv2d<B>``, ... and, from Burn 0.22,
the same types without the backend parameter), the table gives its config type (what ``*Config::new``
takes, in order, and the defaults a shape depends on) and the parameters it saves, named as Burn's
``#[derive(Module)]`` names them: the struct's field names, an ``Option`` parameter only when present,
a nested module's parameters under its field name, a ``Vec``'s under ``.0``, ``.1``, ...
Modules without parameters (dropout, activations but PRelu, pools) add nothing. Each entry cites the
struct in ``tracel-ai/burn`` (``crates/burn-nn/src/...`` at v0.20.0, v0.21.0 and v0.22.0-pre.2, for Burn
0.20, 0.21 and 0.22; the lines are v0.21.0's unless said); ``tests/engine/rust_template`` re-reads the
mirror, when present, and checks these names against the structs at each tag.

Config semantics are Burn's ``#[derive(Config)]`` (burn-derive ``config/analyzer_struct.rs:190-252`` at
v0.21.0): ``new`` takes the fields without a default, in their order; an ``Option`` field starts as
``None``; ``with_<field>`` sets one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from ...burn_versions import BurnVersion
from .shapes import UNKNOWN, div
from .values import Config, Value, item

V0_20, V0_21, V0_22 = BurnVersion.V0_20, BurnVersion.V0_21, BurnVersion.V0_22
EVERY = frozenset(BurnVersion)
FROM_0_21 = frozenset({V0_21, V0_22})


@dataclass(frozen=True)
class Param:
    """One saved tensor: its field name, its dimensions (numbers or unknown) and whether it is there."""

    name: str
    dims: tuple[Value, ...]
    present: Value = True  # True, False, or UNKNOWN (a bias a run-time flag turns on or off)


@dataclass(frozen=True)
class Child:
    """A nested nn module under field ``name``, built from ``config``; ``count`` makes it a ``Vec`` of them."""

    name: str
    module: str
    config: Config
    count: Value | None = None


Part = Param | Child


class Fields:
    """A config's fields as its ``init`` reads them: what the code set, else the default, else unknown
    (every field unknown when the code that builds the module is not in the source: ``config`` None)."""

    def __init__(self, config: Config | None, defaults: Mapping[str, Value]):
        self.config, self.defaults = config, defaults

    def __getitem__(self, name: str) -> Value:
        if self.config is None:
            return UNKNOWN
        if name in self.config.fields:
            return self.config.fields[name]
        return self.defaults.get(name, UNKNOWN)


@dataclass(frozen=True)
class NnModule:
    """A Burn nn module type: its config and the parts it saves (a function of that config's fields)."""

    name: str
    config: str
    required: tuple[str, ...]
    parts: Callable[[Fields], list[Part]]
    where: str
    kind: str | None = None  # Store Studio's module kind (engine.surgery.modules.KINDS), where it has one
    defaults: Mapping[str, Value] = field(default_factory=dict)
    versions: frozenset[BurnVersion] = EVERY

    def saved(self, config: Config | None) -> list[Part]:
        """What it saves when built from ``config`` (None: built by code the source does not show)."""
        return self.parts(Fields(config, self.defaults))


def _linear(c: Fields) -> list[Part]:
    return [Param("weight", (c["d_input"], c["d_output"])), Param("bias", (c["d_output"],), c["bias"])]


def _conv(transposed: bool, rank: int, groups: str = "groups") -> Callable[[Fields], list[Part]]:
    """ConvNd: ``[out, in / groups, k...]``; ConvTransposeNd: ``[in, out / groups, k...]`` (conv2d.rs:75-80,
    conv_transpose2d.rs:100-105); Conv1d names its channels apart (conv1d.rs:103-107)."""
    def parts(c: Fields) -> list[Part]:
        if rank == 1 and not transposed:
            c_in, c_out, kernel = c["channels_in"], c["channels_out"], (c["kernel_size"],)
        else:
            c_in, c_out = item(c["channels"], 0), item(c["channels"], 1)
            kernel = (c["kernel_size"],) if rank == 1 else tuple(item(c["kernel_size"], i) for i in range(rank))
        first, second = (c_in, c_out) if transposed else (c_out, c_in)
        return [Param("weight", (first, div(second, c[groups]), *kernel)), Param("bias", (c_out,), c["bias"])]
    return parts


def _norm(size: str, affine: str | None = None, beta: str | None = None,
          running: bool = False) -> Callable[[Fields], list[Part]]:
    def parts(c: Fields) -> list[Part]:
        present = c[affine] if affine else True
        found = [Param("gamma", (c[size],), present),
                 Param("beta", (c[size],), c[beta] if beta else present)]
        if running:
            found += [Param("running_mean", (c[size],)), Param("running_var", (c[size],))]
        return found
    return parts


def _linear_config(d_input: Value, d_output: Value, bias: Value = True) -> Config:
    return Config("LinearConfig", {"d_input": d_input, "d_output": d_output, "bias": bias})


def _mha(c: Fields) -> list[Part]:
    """query, key, value, output: Linear(d_model, d_model) (mha.rs:116-136); 0.22 adds a bias flag each
    (mha.rs:132-149 at v0.22.0-pre.2), true by default, which no earlier release can turn off."""
    return [Child(name, "Linear", _linear_config(c["d_model"], c["d_model"], c[f"{name}_bias"]))
            for name in ("query", "key", "value", "output")]


def _gates(*names: str) -> Callable[[Fields], list[Part]]:
    """Each gate a GateController of ``d_input -> d_hidden`` (lstm.rs:124-151, gru.rs:101-134, basic.rs:94-110)."""
    def parts(c: Fields) -> list[Part]:
        gate = Config("GateControllerConfig", {"d_input": c["d_input"], "d_output": c["d_hidden"], "bias": c["bias"]})
        return [Child(name, "GateController", gate) for name in names]
    return parts


def _gate_controller(c: Fields) -> list[Part]:
    """input_transform ``d_input -> d_output``, hidden_transform ``d_output -> d_output`` (gate_controller.rs:25-50)."""
    return [Child("input_transform", "Linear", _linear_config(c["d_input"], c["d_output"], c["bias"])),
            Child("hidden_transform", "Linear", _linear_config(c["d_output"], c["d_output"], c["bias"]))]


def _both_ways(module: str, config: str) -> Callable[[Fields], list[Part]]:
    """forward and reverse, each the one-way module with the same sizes (lstm.rs:370-387, gru.rs:353-368)."""
    def parts(c: Fields) -> list[Part]:
        one = Config(config, {"d_input": c["d_input"], "d_hidden": c["d_hidden"], "bias": c["bias"]})
        return [Child("forward", module, one), Child("reverse", module, one)]
    return parts


def _pwff(c: Fields) -> list[Part]:
    """linear_inner ``d_model -> d_ff``, linear_outer ``d_ff -> d_model`` (pwff.rs:84-95)."""
    return [Child("linear_inner", "Linear", _linear_config(c["d_model"], c["d_ff"])),
            Child("linear_outer", "Linear", _linear_config(c["d_ff"], c["d_model"]))]


def _transformer(layer: str) -> Callable[[Fields], list[Part]]:
    """``layers``: a Vec of ``n_layers`` layers, each made from the whole config (encoder.rs:141-157)."""
    def parts(c: Fields) -> list[Part]:
        return [Child("layers", layer, Config(layer + "Config", dict(_sizes(c))), count=c["n_layers"])]
    return parts


def _sizes(c: Fields) -> dict[str, Value]:
    return {"d_model": c["d_model"], "d_ff": c["d_ff"], "n_heads": c["n_heads"]}


def _attention(c: Fields) -> Config:
    return Config("MultiHeadAttentionConfig", {"d_model": c["d_model"], "n_heads": c["n_heads"]})


def _layer_norm(c: Fields) -> Config:
    return Config("LayerNormConfig", {"d_model": c["d_model"]})


def _feed_forward(c: Fields) -> Config:
    return Config("PositionWiseFeedForwardConfig", {"d_model": c["d_model"], "d_ff": c["d_ff"]})


def _encoder_layer(c: Fields) -> list[Part]:
    """mha, pwff, norm_1, norm_2 (encoder.rs:229-256)."""
    return [Child("mha", "MultiHeadAttention", _attention(c)), Child("pwff", "PositionWiseFeedForward", _feed_forward(c)),
            Child("norm_1", "LayerNorm", _layer_norm(c)), Child("norm_2", "LayerNorm", _layer_norm(c))]


def _decoder_layer(c: Fields) -> list[Part]:
    """cross_attn, self_attn, pwff, norm_1..3 (decoder.rs:250-290)."""
    return [Child("cross_attn", "MultiHeadAttention", _attention(c)),
            Child("self_attn", "MultiHeadAttention", _attention(c)),
            Child("pwff", "PositionWiseFeedForward", _feed_forward(c)),
            *(Child(f"norm_{i}", "LayerNorm", _layer_norm(c)) for i in (1, 2, 3))]


_BIAS = {"bias": True}
_CONV = {"bias": True, "groups": 1}
_MHA_BIAS = {"query_bias": True, "key_bias": True, "value_bias": True, "output_bias": True}

MODULES: dict[str, NnModule] = {m.name: m for m in (
    NnModule("Linear", "LinearConfig", ("d_input", "d_output"), _linear, "modules/linear.rs:47-54", "Linear", _BIAS),
    NnModule("Conv1d", "Conv1dConfig", ("channels_in", "channels_out", "kernel_size"), _conv(False, 1),
             "modules/conv/conv1d.rs:51-66", "Conv1d", _CONV),
    NnModule("Conv2d", "Conv2dConfig", ("channels", "kernel_size"), _conv(False, 2), "modules/conv/conv2d.rs:53-68",
             "Conv2d", _CONV),
    NnModule("Conv3d", "Conv3dConfig", ("channels", "kernel_size"), _conv(False, 3), "modules/conv/conv3d.rs:50-65",
             "Conv3d", _CONV),
    *(NnModule(f"ConvTranspose{n}d", f"ConvTranspose{n}dConfig", ("channels", "kernel_size"), _conv(True, n),
               f"modules/conv/conv_transpose{n}d.rs:54-73", "ConvTranspose", _CONV) for n in (1, 2, 3)),
    NnModule("DeformConv2d", "DeformConv2dConfig", ("channels", "kernel_size"), _conv(False, 2, "weight_groups"),
             "modules/conv/deform_conv2d.rs:57-74", None, {"bias": True, "weight_groups": 1}),
    NnModule("Embedding", "EmbeddingConfig", ("n_embedding", "d_model"),
             lambda c: [Param("weight", (c["n_embedding"], c["d_model"]))], "modules/embedding.rs:31-35", "Embedding"),
    NnModule("BatchNorm", "BatchNormConfig", ("num_features",), _norm("num_features", running=True),
             "modules/norm/batch.rs:44-57", "BatchNorm"),
    NnModule("LayerNorm", "LayerNormConfig", ("d_model",), _norm("d_model", beta="bias"), "modules/norm/layer.rs:40-47",
             "LayerNorm", _BIAS),
    NnModule("GroupNorm", "GroupNormConfig", ("num_groups", "num_channels"), _norm("num_channels", affine="affine"),
             "modules/norm/group.rs:41-54", "GroupNorm", {"affine": True}),
    NnModule("InstanceNorm", "InstanceNormConfig", ("num_channels",), _norm("num_channels", affine="affine"),
             "modules/norm/instance.rs:30-41", None, {"affine": True}),
    NnModule("RmsNorm", "RmsNormConfig", ("d_model",), lambda c: [Param("gamma", (c["d_model"],))],
             "modules/norm/rms.rs:55-60", "RmsNorm"),
    NnModule("PRelu", "PReluConfig", (), lambda c: [Param("alpha", (c["num_parameters"],))], "activation/prelu.rs:11-18",
             "PRelu", {"num_parameters": 1}),
    NnModule("SwiGlu", "SwiGluConfig", ("d_input", "d_output"),
             lambda c: [Child(n, "Linear", _linear_config(c["d_input"], c["d_output"], c["bias"]))
                        for n in ("linear_inner", "linear_outer")], "activation/swiglu.rs:38-45", None, {"bias": False}),
    NnModule("MultiHeadAttention", "MultiHeadAttentionConfig", ("d_model", "n_heads"), _mha,
             "modules/attention/mha.rs:57-80", None, _MHA_BIAS),
    NnModule("GateController", "GateControllerConfig", ("d_input", "d_output", "bias"), _gate_controller,
             "modules/rnn/gate_controller.rs:16-21"),
    NnModule("Lstm", "LstmConfig", ("d_input", "d_hidden", "bias"),
             _gates("input_gate", "forget_gate", "output_gate", "cell_gate"), "modules/rnn/lstm.rs:74-101 "
             "(rnn/lstm/lstm_module.rs:61-88 at v0.22.0-pre.2)"),
    NnModule("BiLstm", "BiLstmConfig", ("d_input", "d_hidden", "bias"), _both_ways("Lstm", "LstmConfig"),
             "modules/rnn/lstm.rs:331-341 (rnn/lstm/bilstm_module.rs:51-61 at v0.22.0-pre.2)"),
    NnModule("Gru", "GruConfig", ("d_input", "d_hidden", "bias"), _gates("update_gate", "reset_gate", "new_gate"),
             "modules/rnn/gru.rs:60-77"),
    NnModule("BiGru", "BiGruConfig", ("d_input", "d_hidden", "bias"), _both_ways("Gru", "GruConfig"),
             "modules/rnn/gru.rs:314-324", versions=FROM_0_21),
    NnModule("Rnn", "RnnConfig", ("d_input", "d_hidden", "bias"), _gates("gate"), "modules/rnn/basic.rs:57-71",
             versions=FROM_0_21),
    NnModule("BiRnn", "BiRnnConfig", ("d_input", "d_hidden", "bias"), _both_ways("Rnn", "RnnConfig"),
             "modules/rnn/basic.rs:254-264", versions=FROM_0_21),
    NnModule("PositionWiseFeedForward", "PositionWiseFeedForwardConfig", ("d_model", "d_ff"), _pwff,
             "modules/transformer/pwff.rs:52-62"),
    NnModule("TransformerEncoder", "TransformerEncoderConfig", ("d_model", "d_ff", "n_heads", "n_layers"),
             _transformer("TransformerEncoderLayer"), "modules/transformer/encoder.rs:63-87"),
    NnModule("TransformerEncoderLayer", "TransformerEncoderLayerConfig", (), _encoder_layer,
             "modules/transformer/encoder.rs:211-225"),
    NnModule("TransformerDecoder", "TransformerDecoderConfig", ("d_model", "d_ff", "n_heads", "n_layers"),
             _transformer("TransformerDecoderLayer"), "modules/transformer/decoder.rs:65-89"),
    NnModule("TransformerDecoderLayer", "TransformerDecoderLayerConfig", (), _decoder_layer,
             "modules/transformer/decoder.rs:182-199"),
)}

BY_CONFIG: dict[str, NnModule] = {m.config: m for m in MODULES.values()}

# Derived modules without parameters (their fields are numbers, flags, raw tensors that are not saved, or
# #[module(skip)]): a struct may hold them and they add nothing. From each release's burn-nn.
PARAMETER_FREE: dict[str, frozenset[BurnVersion]] = {
    **dict.fromkeys(("Dropout", "Relu", "Gelu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "HardSwish", "Softplus",
                     "GLU", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "MaxPool1d",
                     "MaxPool2d", "Interpolate1d", "Interpolate2d", "Unfold4d", "PositionalEncoding",
                     "RotaryEncoding", "GaussianNoise"), EVERY),
    **dict.fromkeys(("Selu", "Softsign", "Elu", "Celu", "ThresholdedRelu", "HardShrink", "SoftShrink", "Shrink",
                     "LocalResponseNorm"), FROM_0_21),
    **dict.fromkeys(("Identity", "Hardtanh", "RRelu", "Threshold", "CosineSimilarity", "PairwiseDistance",
                     "PixelShuffle", "PixelUnshuffle", "AdaptiveAvgPool3d", "Fold4d"), frozenset({V0_22})),
}


@dataclass(frozen=True)
class NnEnum:
    """A Burn enum module (``Activation``, ``Normalization``): each variant's module type, and its config enum."""

    name: str
    config: str
    variants: Mapping[str, str]
    where: str


def _activation(version: BurnVersion) -> NnEnum:
    """activation_wrapper.rs:101-131 at v0.20.0, :175-231 at v0.21.0, :180-240 at v0.22.0-pre.2."""
    names = ["Gelu", "PRelu", "Relu", "LeakyRelu", "SwiGlu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Softplus"]
    if version is not V0_20:
        names += ["Selu", "Softsign", "Elu", "Celu", "ThresholdedRelu", "HardShrink", "SoftShrink", "Shrink"]
    if version is V0_22:
        names.append("Identity")
    return NnEnum("Activation", "ActivationConfig", {n: n for n in names}, "activation/activation_wrapper.rs")


def _normalization(version: BurnVersion) -> NnEnum:
    """normalization_wrapper.rs:135-150 (:141-159 at v0.22.0-pre.2, which adds Identity)."""
    variants = {"Batch": "BatchNorm", "Group": "GroupNorm", "Instance": "InstanceNorm", "Layer": "LayerNorm",
                "Rms": "RmsNorm", **({"Identity": "Identity"} if version is V0_22 else {})}
    return NnEnum("Normalization", "NormalizationConfig", variants, "modules/norm/normalization_wrapper.rs")


def module(name: str, version: BurnVersion) -> NnModule | None:
    """The nn module type ``name`` at ``version`` (None if that release has none)."""
    found = MODULES.get(name)
    return found if found is not None and version in found.versions else None


def config(name: str, version: BurnVersion) -> NnModule | None:
    """The nn module a config type ``name`` builds at ``version``."""
    found = BY_CONFIG.get(name)
    return found if found is not None and version in found.versions else None


def parameter_free(name: str, version: BurnVersion) -> bool:
    return version in PARAMETER_FREE.get(name, frozenset())


def enum(name: str, version: BurnVersion) -> NnEnum | None:
    """The nn enum module ``name`` (by its own or its config's name) at ``version``."""
    for found in (_activation(version), _normalization(version)):
        if name in (found.name, found.config):
            return found
    return None

