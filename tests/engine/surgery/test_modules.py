"""Module-type inference: the guesses PyTorch-to-Burn conversion depends on, with their reasons."""

from pathlib import Path

import pytest
import torch
from torch import nn

from engine import ArrayStore, RecipeError
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


# --- evidence first, guesses marked (issue 11) ------------------------------------------------------

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
