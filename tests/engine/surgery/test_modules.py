"""Module-type inference: the guesses PyTorch-to-Burn conversion depends on, with their reasons.

Words of a module kind:
- a lone 1-D weight is a guess whose reason says the evidence and what the name says, with the kinds it could be
  (README "Module types": "a lone 1-D weight (RmsNorm's gamma or PReLU's alpha? act says PReLU ...)") ->
  test_a_lone_1d_weight_named_act_is_a_guessed_prelu_saying_why_and_what_else_it_could_be
- an unknown module type names the path, the type and every known one (README: "an unknown type is exit 2") ->
  test_an_unknown_module_type_names_every_known_one

Each rule of the module-kind guess alone, through ``plan`` with the pytorch-to-burn adapter (the dry-run
document's kind and reason, and the names the adapter gives the module's tensors; README "Module types, evidence
first") -> test_each_piece_of_evidence_alone_decides_the_kind:
- running stats make a BatchNorm, either one alone, and the adapter renames its weight to gamma
- Burn's ``alpha`` says PReLU, but only for a module without a ``weight``: a 2-D weight and a bias make a Linear
- Burn's ``beta`` beside a 1-D weight makes a LayerNorm; a ``gamma`` alone is the norm Burn names so
- a bias is evidence for a norm only when it matches the 1-D weight's shape
- a 2-D weight without bias named like an embedding is a guessed Embedding, saying why
- a 3- to 5-D weight is a convolution, transposed when its name says so; no other number of dimensions makes a layer

Module kinds a template proves (stages.TemplateIndex.kinds; README "Model surgery": a template settles what a
name alone only guesses) -> tests:
- a template norm (``gamma``) is a norm, BatchNorm where it keeps running stats; a PReLU (``alpha``) is a PRelu; a
  2-D weight the template wants as it is is no Linear; a decision the template agrees with is settled, one it
  cannot judge is kept -> test_the_template_proves_or_settles_each_kind
- the user's kind stands: a template cannot re-prove it -> test_a_kind_the_user_set_stands_under_alpha
- only a module's weight is judged: another 2-D tensor the template wants transposed proves nothing ->
  test_only_the_weight_is_judged_not_another_tensor_of_the_module
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from engine import ArrayStore, RecipeError
from engine.surgery import Recipe
from engine.surgery import plan
from engine.surgery.modules import KINDS, ModuleGuess, infer_modules, logical_leaf, parse_kind

FIXTURES = Path(__file__).parents[2] / "fixtures" / "burn-pytorch-tests"


class T:
    """A minimal entry: infer_modules needs only a name and a shape."""

    def __init__(self, name, *shape):
        self.name, self.shape = name, shape


def kinds(*entries, **kw):
    return {path: g.kind for path, g in infer_modules(entries, **kw).items()}


def fixture_store(relative):
    state = torch.load(FIXTURES / relative, weights_only=True)
    return ArrayStore({k: v.numpy() for k, v in state.items() if isinstance(v, torch.Tensor)})


def test_running_stats_make_a_batch_norm():
    store = fixture_store("batch_norm/batch_norm2d.pt")
    guess = infer_modules(store.entries)["norm1"]
    assert guess == ModuleGuess("norm1", "BatchNorm", "has running_mean/running_var")


def test_2d_weight_is_linear_with_or_without_bias():
    assert kinds(T("fc1.weight", 3, 2), T("fc1.bias", 3), T("fc2.weight", 4, 3)) == {"fc1": "Linear", "fc2": "Linear"}


@pytest.mark.parametrize("name", ["embed", "emb", "wte", "wpe", "tok_embeddings", "embedding", "word_embeddings",
                                  "pos_emb", "embed_tokens"])
def test_2d_weight_named_like_an_embedding_is_an_embedding(name):
    assert kinds(T(f"model.{name}.weight", 10, 3)) == {f"model.{name}": "Embedding"}


def test_embedding_fixture_is_an_embedding():
    assert kinds(*fixture_store("embedding/embedding.pt").entries) == {"embed": "Embedding"}


def test_embedding_name_of_a_parent_does_not_make_a_projection_an_embedding():
    assert kinds(T("embed.proj.weight", 8, 4)) == {"embed.proj": "Linear"}


def test_sequential_index_takes_the_parent_name():
    assert kinds(T("embed.0.weight", 10, 3)) == {"embed.0": "Embedding"}


@pytest.mark.parametrize("ndim,kind", [(3, "Conv1d"), (4, "Conv2d"), (5, "Conv3d")])
def test_weight_rank_gives_the_conv_dimension(ndim, kind):
    assert kinds(T("conv.weight", *([2] * ndim)), T("conv.bias", 2)) == {"conv": kind}


@pytest.mark.parametrize("name", ["deconv1", "conv_transpose", "convtranspose2", "up", "up_conv", "upsample.0"])
def test_transposed_conv_is_recognised_by_name(name):
    assert kinds(T(f"{name}.weight", 2, 2, 3, 3)) == {name: "ConvTranspose"}


def test_update_is_not_an_upsampling_conv():
    assert kinds(T("update.weight", 2, 2, 3, 3)) == {"update": "Conv2d"}


def test_1d_weight_and_bias_without_running_stats_is_a_layer_norm():
    assert kinds(*fixture_store("layer_norm/layer_norm.pt").entries) == {"norm1": "LayerNorm"}


@pytest.mark.parametrize("name,kind", [("group_norm", "GroupNorm"), ("gn1", "GroupNorm"), ("rms_norm", "RmsNorm"),
                                       ("ln_f", "LayerNorm"), ("bn", "BatchNorm")])
def test_norm_name_decides_the_norm_kind(name, kind):
    assert kinds(T(f"{name}.weight", 6), T(f"{name}.bias", 6)) == {name: kind}


def test_1d_weight_alone_is_an_rms_norm():
    guess = infer_modules([T("layers.0.attention_norm.weight", 64)])["layers.0.attention_norm"]
    assert guess.kind == "RmsNorm" and "without bias" in guess.reason


def test_burn_names_gamma_and_beta_are_norms():
    assert kinds(T("n.gamma", 4), T("n.beta", 4), T("r.gamma", 4)) == {"n": "LayerNorm", "r": "RmsNorm"}


def test_weight_norm_parametrizations_fold_onto_the_owning_module():
    assert logical_leaf("fc.parametrizations.weight.original1") == ("fc", "weight_v")
    # only the dot before "parametrizations" goes: a module's own name keeps every letter
    assert logical_leaf("convX.parametrizations.weight.original0") == ("convX", "weight_g")
    found = kinds(T("fc.parametrizations.weight.original0", 4, 1), T("fc.parametrizations.weight.original1", 4, 3),
                  T("fc.bias", 4), T("c.weight_g", 4, 1, 1), T("c.weight_v", 4, 2, 3))
    assert found == {"fc": "Linear", "c": "Conv1d"}


def test_tensors_without_weight_are_unknown():
    assert infer_modules([T("buffer", 3)])[""] == ModuleGuess("", "Unknown", "no weight tensor")


def test_overrides_win_and_are_marked():
    guesses = infer_modules([T("conv1.weight", 2, 2, 2, 2), T("conv2.weight", 2, 2, 2, 2)],
                            overrides={"conv1": "ConvTranspose", "absent": "Linear"})
    assert guesses["conv1"] == ModuleGuess("conv1", "ConvTranspose", "set by user", True)
    assert guesses["conv2"].kind == "Conv2d" and not guesses["conv2"].overridden
    assert "absent" not in guesses


def test_unknown_override_kind_names_the_path():
    with pytest.raises(RecipeError, match="'conv1'.*'Conv4d'"):
        infer_modules([T("conv1.weight", 2, 2)], overrides={"conv1": "Conv4d"})


def test_a_real_torch_model_is_guessed_right():
    model = nn.ModuleDict({"embed": nn.Embedding(10, 4), "fc": nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4)),
                           "conv": nn.Conv2d(1, 2, 3), "bn": nn.BatchNorm2d(2), "ln": nn.LayerNorm(4),
                           "gn": nn.GroupNorm(2, 4)})
    entries = [T(k, *v.shape) for k, v in model.state_dict().items()]
    assert kinds(*entries) == {"embed": "Embedding", "fc.0": "Linear", "fc.2": "Linear", "conv": "Conv2d",
                               "bn": "BatchNorm", "ln": "LayerNorm", "gn": "GroupNorm"}
    assert set(kinds(*entries).values()) <= set(KINDS)


# --- evidence first, guesses marked ------------------------------------------------------------

def test_a_bias_beside_a_2d_weight_makes_a_linear_whatever_the_name():
    guesses = infer_modules([T("time_embed.0.weight", 8, 8), T("time_embed.0.bias", 8),
                             T("embed_proj.weight", 6, 4), T("embed_proj.bias", 6)])
    assert {p: (g.kind, g.guessed) for p, g in guesses.items()} == {"time_embed.0": ("Linear", False),
                                                                   "embed_proj": ("Linear", False)}


@pytest.mark.parametrize("path,kind", [("tokens", "Linear"), ("embed_out", "Embedding")])
def test_a_2d_weight_without_bias_is_a_guess_either_way(path, kind):
    guess = infer_modules([T(f"{path}.weight", 10, 4)])[path]
    assert (guess.kind, guess.guessed) == (kind, True)
    assert set(guess.alternatives) == {"Linear", "Embedding"} and guess.alternatives[0] == kind


def test_a_lone_1d_weight_is_a_guess_between_rms_norm_and_prelu():
    guesses = infer_modules([T("act.weight", 4), T("scale.weight", 4), T("final_norm.weight", 4)])
    assert {p: (g.kind, g.guessed) for p, g in guesses.items()} == {
        "act": ("PRelu", True), "scale": ("Unknown", True), "final_norm": ("RmsNorm", True)}
    assert set(guesses["scale"].alternatives) == {"RmsNorm", "PRelu", "Unknown"}


def test_burn_alpha_is_a_prelu_and_1d_weight_with_bias_is_a_norm_not_a_guess():
    guesses = infer_modules([T("act.alpha", 4), T("ln.weight", 4), T("ln.bias", 4)])
    assert (guesses["act"].kind, guesses["act"].guessed) == ("PRelu", False)
    assert (guesses["ln"].kind, guesses["ln"].guessed) == ("LayerNorm", False)


@pytest.mark.parametrize("typed,kind", [("prelu", "PRelu"), ("PReLU", "PRelu"), ("embedding", "Embedding"),
                                        ("enumvariant", "EnumVariant"), ("RmsNorm", "RmsNorm")])
def test_module_types_are_read_in_any_case(typed, kind):
    assert parse_kind(typed, "x") == kind


def test_an_unknown_module_type_names_the_path():
    with pytest.raises(RecipeError, match="'tokens'.*'Embeding'"):
        parse_kind("Embeding", "tokens")


def test_a_lone_1d_weight_named_act_is_a_guessed_prelu_saying_why_and_what_else_it_could_be():
    guess = infer_modules(ArrayStore({"block.act.weight": np.ones(4, np.float32)}).entries)["block.act"]
    assert (guess.path, guess.kind, guess.reason, guess.guessed, guess.alternatives) == (
        "block.act", "PRelu", "1-D weight without bias or running stats, and the name 'act' says PReLU", True,
        ("PRelu", "RmsNorm", "Unknown"))
    plain = infer_modules(ArrayStore({"scale.weight": np.ones(4, np.float32)}).entries)["scale"]
    assert plain.reason == "1-D weight without bias or running stats, and the name 'scale' says nothing: kept as it is"


def test_an_unknown_module_type_names_every_known_one():
    with pytest.raises(RecipeError) as refused:
        Recipe(module_overrides={"enc.fc": "Dense"})
    assert str(refused.value) == (f"module type override for 'enc.fc': unknown kind 'Dense' (one of {', '.join(KINDS)})")
    assert ", ".join(KINDS).startswith("Linear, Conv1d, Conv2d, Conv3d, ConvTranspose, Embedding, BatchNorm")


@pytest.mark.parametrize("label, kind, says, alternatives", [
    ("final_norm", "RmsNorm", "norm", ("RmsNorm", "PRelu", "Unknown")),
    ("ln_f", "LayerNorm", "LayerNorm", ("LayerNorm", "RmsNorm", "PRelu", "Unknown")),
    ("bn1", "BatchNorm", "BatchNorm", ("BatchNorm", "RmsNorm", "PRelu", "Unknown")),
    ("gn", "GroupNorm", "GroupNorm", ("GroupNorm", "RmsNorm", "PRelu", "Unknown")),
    ("scale", "Unknown", "nothing: kept as it is", ("RmsNorm", "PRelu", "Unknown"))])
def test_a_lone_1d_weight_takes_the_kind_its_name_says_as_a_guess(label, kind, says, alternatives):
    guess = infer_modules(ArrayStore({f"{label}.weight": np.ones(4, np.float32)}).entries)[label]
    assert (guess.kind, guess.reason, guess.guessed, guess.alternatives) == (
        kind, f"1-D weight without bias or running stats, and the name {label!r} says {says}", True, alternatives)


BURN = Recipe(adapters=("pytorch-to-burn",))


def _plan(shapes: dict[str, tuple[int, ...]]):
    return plan([ArrayStore({name: np.ones(shape, np.float32) for name, shape in shapes.items()})], BURN)


@pytest.mark.parametrize("shapes, module, kind, reason, guessed, names", [
    pytest.param({"stats.weight": (4,), "stats.running_mean": (4,)}, "stats", "BatchNorm",
                 "has running_mean/running_var", False, ["stats.gamma", "stats.running_mean"], id="running_mean only"),
    pytest.param({"stats.weight": (4,), "stats.running_var": (4,)}, "stats", "BatchNorm",
                 "has running_mean/running_var", False, ["stats.gamma", "stats.running_var"], id="running_var only"),
    pytest.param({"act.alpha": (1,)}, "act", "PRelu", "Burn names a PReLU's weight alpha", False, ["act.alpha"],
                 id="alpha alone"),
    pytest.param({"p.alpha": (1,), "p.weight": (3, 4), "p.bias": (3,)}, "p", "Linear",
                 "2-D weight and a bias of 3 (an Embedding has no bias)", False, ["p.alpha", "p.weight", "p.bias"],
                 id="alpha beside a Linear's weight and bias"),
    pytest.param({"scale.weight": (4,), "scale.beta": (4,)}, "scale", "LayerNorm",
                 "1-D weight with a bias and no running stats", False, ["scale.gamma", "scale.beta"],
                 id="beta beside a 1-D weight"),
    pytest.param({"scale.gamma": (4,)}, "scale", "RmsNorm", "Burn names gamma/beta without bias or running stats",
                 False, ["scale.gamma"], id="gamma alone"),
    pytest.param({"scale.weight": (4,), "scale.bias": (5,)}, "scale", "Unknown",
                 "1-D weight without bias or running stats, and the name 'scale' says nothing: kept as it is", True,
                 ["scale.weight", "scale.bias"], id="a 1-D weight beside a bias of another size"),
    pytest.param({"embed.weight": (10, 4)}, "embed", "Embedding",
                 "2-D weight without bias, and the name 'embed' says embedding", True, ["embed.weight"], id="embed"),
    pytest.param({"conv.weight": (4, 4, 3, 3)}, "conv", "Conv2d", "4-D weight", False, ["conv.weight"],
                 id="a 4-D weight"),
    pytest.param({"deconv.weight": (4, 4, 3, 3)}, "deconv", "ConvTranspose",
                 "4-D weight, and the name 'deconv' says transposed", False, ["deconv.weight"],
                 id="a 4-D weight named deconv"),
    pytest.param({"w.weight": (1, 1, 1, 1, 1, 2)}, "w", "Unknown", "6-D weight fits no known layer", False,
                 ["w.weight"], id="a 6-D weight"),
    pytest.param({"w.weight": ()}, "w", "Unknown", "0-D weight fits no known layer", False, ["w.weight"],
                 id="a 0-D weight"),
])
def test_each_piece_of_evidence_alone_decides_the_kind(shapes, module, kind, reason, guessed, names):
    result = _plan(shapes)
    assert result.to_json()["modules"] == {module: {"kind": kind, "reason": reason, "overridden": False,
                                                    "guessed": guessed}}
    assert result.names == names


GAMMA, ALPHA, AS_IT_IS = "the template has gamma here", "the template has alpha here", \
    "the template wants this 2-D weight as it is"


CASES = {
    "a guessed 1-D weight under gamma is a LayerNorm": (
        {"scale.weight": (4,)}, {"scale.gamma": (4,)}, ("LayerNorm", GAMMA, False), ["scale.gamma"]),
    "with running stats, a BatchNorm": (
        {"scale.weight": (4,)}, {"scale.gamma": (4,), "scale.running_mean": (4,)}, ("BatchNorm", GAMMA, False),
        ["scale.gamma"]),
    "a guessed RmsNorm under gamma keeps its kind": (
        {"norm.weight": (4,)}, {"norm.gamma": (4,)}, ("RmsNorm", GAMMA, False), ["norm.gamma"]),
    "a LayerNorm proven by its bias is left as it was": (
        {"norm.weight": (4,), "norm.bias": (4,)}, {"norm.gamma": (4,), "norm.beta": (4,)},
        ("LayerNorm", "1-D weight with a bias and no running stats", False), ["norm.gamma", "norm.beta"]),
    "a guessed 1-D weight under alpha is a PRelu": (
        {"scale.weight": (4,)}, {"scale.alpha": (4,)}, ("PRelu", ALPHA, False), ["scale.alpha"]),
    "a LayerNorm proven by its bias, under alpha, is a PRelu": (
        {"norm.weight": (4,), "norm.bias": (4,)}, {"norm.alpha": (4,), "norm.beta": (4,)}, ("PRelu", ALPHA, False),
        ["norm.alpha", "norm.bias"]),
    "a guessed PRelu under alpha is settled": (
        {"act.weight": (1,)}, {"act.alpha": (1,)}, ("PRelu", ALPHA, False), ["act.alpha"]),
    "a Linear proven by its bias, wanted as it is, is Unknown": (
        {"fc.weight": (3, 2), "fc.bias": (3,)}, {"fc.weight": (3, 2), "fc.bias": (3,)}, ("Unknown", AS_IT_IS, False),
        ["fc.weight", "fc.bias"]),
    "a guessed Embedding wanted as it is is settled": (
        {"embed.weight": (3, 2)}, {"embed.weight": (3, 2)}, ("Embedding", AS_IT_IS, False), ["embed.weight"]),
    "a Linear proven by its bias, wanted transposed, is left as it was": (
        {"fc.weight": (3, 2), "fc.bias": (3,)}, {"fc.weight": (2, 3), "fc.bias": (3,)},
        ("Linear", "2-D weight and a bias of 3 (an Embedding has no bias)", False), ["fc.weight", "fc.bias"]),
    "a guessed Embedding wanted transposed is a Linear": (
        {"embed.weight": (3, 2)}, {"embed.weight": (2, 3)},
        ("Linear", "the template wants this weight transposed", False), ["embed.weight"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_template_proves_or_settles_each_kind(case: str) -> None:
    source, template, (kind, reason, guessed), names = CASES[case]
    arrays = {name: np.arange(np.prod(shape), dtype=np.float32).reshape(shape) for name, shape in source.items()}
    result = plan([ArrayStore(arrays)], Recipe(adapters=("pytorch-to-burn",)),
                  template=ArrayStore({name: np.zeros(shape, np.float32) for name, shape in template.items()}))
    ((path, module),) = result.modules.items()
    assert module.path == path and (module.kind, module.reason, module.guessed) == (kind, reason, guessed)
    assert result.names == names and result.guesses == []
    assert [t.shape for t in result.tensors] == [template.get(n, source.get(n)) for n in names]


def test_a_kind_the_user_set_stands_under_alpha() -> None:
    result = plan([ArrayStore({"act.weight": np.ones(4, np.float32)})],
                  Recipe(adapters=("pytorch-to-burn",), module_overrides={"act": "PRelu"}),
                  template=ArrayStore({"act.alpha": np.zeros(4, np.float32)}))
    module = result.modules["act"]
    assert (module.kind, module.reason, module.overridden, module.guessed) == ("PRelu", "set by user", True, False)
    assert result.names == ["act.alpha"]


def test_only_the_weight_is_judged_not_another_tensor_of_the_module() -> None:
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    result = plan([ArrayStore({"x.weight": np.ones(4, np.float32), "x.table": table})],
                  Recipe(adapters=("pytorch-to-burn",)),
                  template=ArrayStore({"x.weight": np.zeros(4, np.float32), "x.table": np.zeros((2, 3), np.float32)}))
    module = result.modules["x"]
    assert (module.kind, module.guessed) == ("Unknown", True)
    assert [(g.name, g.decision) for g in result.guesses] == [("x.weight", "Unknown: left as it is")]
    assert [t.shape for t in result.tensors] == [(4,), (3, 2)]
