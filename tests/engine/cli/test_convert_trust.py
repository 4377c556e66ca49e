"""``convert`` gives burn-store's result or says loudly why not: validation, guesses, order, no silent no-ops.

Every model is a real torch module saved by torch; every output is read back with the official
safetensors library (or our Burnpack reader) and compared byte for byte with arrays computed by
hand from the torch tensors.
"""

from __future__ import annotations

import json
import shlex

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.numpy import load_file, save_file
from torch import nn

from engine import ArrayStore, export, open_store
from engine.cli import main
from engine.surgery import Recipe
from tests.helpers.engine_cli_run import run


class Net(nn.Module):
    """The shapes the issue names: a Sequential with ReLUs, a UNet time_embed, GPT-NeoX's head, BERT's LayerNorm."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
        self.time_embed = nn.Sequential(nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 8))
        self.tokens = nn.Embedding(10, 4)
        self.embed_out = nn.Linear(4, 10, bias=False)
        self.embeddings = nn.Module()
        self.embeddings.LayerNorm = nn.LayerNorm(4)
        self.act = nn.PReLU(4)


@pytest.fixture
def net(tmp_path):
    """The saved checkpoint and its tensors as numpy arrays (each random, so a swap or transpose shows)."""
    torch.manual_seed(11)
    model = Net()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p))
    path = tmp_path / "net.pt"
    torch.save(model.state_dict(), path)
    return path, {k: v.numpy().copy() for k, v in model.state_dict().items()}


def convert(*args: str) -> int:
    return main(["convert", *map(str, args)])


def test_contiguous_indices_count_every_source_name_before_the_filter(net, tmp_path):
    path, w = net
    assert convert(path, tmp_path / "o.safetensors", "--include", r"^fc\.", "--exclude", r"^fc\.0\.",
                   "--contiguous-indices", "--adapter", "pytorch-to-burn") == 0
    out = load_file(tmp_path / "o.safetensors")
    assert sorted(out) == ["fc.1.bias", "fc.1.weight", "fc.2.bias", "fc.2.weight"]
    np.testing.assert_array_equal(out["fc.1.weight"], w["fc.2.weight"].T)  # fc.1 <- fc.2, not fc.0 <- fc.2
    np.testing.assert_array_equal(out["fc.2.weight"], w["fc.4.weight"].T)
    np.testing.assert_array_equal(out["fc.2.bias"], w["fc.4.bias"])


def test_filters_match_the_names_after_remaps_and_adapters(net, tmp_path):
    path, w = net
    assert convert(path, tmp_path / "o.safetensors", "--adapter", "pytorch-to-burn", "--remap", r"^act\.", "prelu.",
                   "--module", "act=PRelu", "--include", r"\.gamma$", "--include", r"^prelu\.alpha$") == 0
    out = load_file(tmp_path / "o.safetensors")
    assert sorted(out) == ["embeddings.LayerNorm.gamma", "prelu.alpha"]
    np.testing.assert_array_equal(out["prelu.alpha"], w["act.weight"])
    np.testing.assert_array_equal(out["embeddings.LayerNorm.gamma"], w["embeddings.LayerNorm.weight"])


def test_a_square_weight_with_a_bias_is_a_linear_whatever_its_name(net, tmp_path, capsys):
    path, w = net
    assert convert(path, tmp_path / "o.safetensors", "--include", "^time_embed", "--adapter", "pytorch-to-burn") == 0
    out = load_file(tmp_path / "o.safetensors")
    for i in ("0", "2"):
        np.testing.assert_array_equal(out[f"time_embed.{i}.weight"], w[f"time_embed.{i}.weight"].T)
        np.testing.assert_array_equal(out[f"time_embed.{i}.bias"], w[f"time_embed.{i}.bias"])
    assert "guessed" not in capsys.readouterr().err  # evidence, not a guess


def test_tensors_resting_on_a_name_are_reported_after_the_summary(net, tmp_path, capsys):
    path, w = net
    assert convert(path, tmp_path / "o.safetensors", "--adapter", "pytorch-to-burn") == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("wrote ")
    guessed = {line.split(":")[0].removeprefix("guessed "): line for line in err[1:]}
    assert set(guessed) == {"tokens.weight", "embed_out.weight", "act.alpha"}
    assert "Linear: transposed" in guessed["tokens.weight"] and "--module tokens=Embedding" in guessed["tokens.weight"]
    assert "Embedding: not transposed" in guessed["embed_out.weight"]
    assert "--module embed_out=Linear" in guessed["embed_out.weight"]
    assert "PRelu: renamed weight -> alpha" in guessed["act.alpha"] and "--module act=PRelu" in guessed["act.alpha"]
    out = load_file(tmp_path / "o.safetensors")  # the guesses as written: what the lines say happened
    np.testing.assert_array_equal(out["tokens.weight"], w["tokens.weight"].T)
    np.testing.assert_array_equal(out["embed_out.weight"], w["embed_out.weight"])


def test_module_flags_settle_the_guesses_and_change_the_bytes(net, tmp_path, capsys):
    path, w = net
    assert convert(path, tmp_path / "o.safetensors", "--adapter", "pytorch-to-burn", "--module", "tokens=Embedding",
                   "--module", "embed_out=Linear", "--module", "act=prelu", "--strict") == 0
    assert "guessed" not in capsys.readouterr().err
    out = load_file(tmp_path / "o.safetensors")
    np.testing.assert_array_equal(out["tokens.weight"], w["tokens.weight"])
    np.testing.assert_array_equal(out["embed_out.weight"], w["embed_out.weight"].T)
    np.testing.assert_array_equal(out["act.alpha"], w["act.weight"])
    assert "act.weight" not in out


@pytest.mark.child
def test_strict_refuses_while_a_guess_is_unsettled(net, tmp_path):
    path, _ = net
    result = run("convert", str(path), str(tmp_path / "o.safetensors"), "--adapter", "pytorch-to-burn",
                 "--module", "tokens=Embedding", "--strict")
    assert result.returncode == 3 and not (tmp_path / "o.safetensors").exists()
    assert "guessed embed_out.weight" in result.stderr and "guessed tokens.weight" not in result.stderr
    assert "--strict: 2 tensors rest on a guess" in result.stderr


@pytest.mark.child
def test_an_unknown_module_type_is_a_usage_error(net, tmp_path):
    path, _ = net
    result = run("convert", str(path), str(tmp_path / "o.safetensors"), "--module", "tokens=Embeding")
    assert result.returncode == 2 and "'Embeding'" in result.stderr and not (tmp_path / "o.safetensors").exists()
    assert run("convert", str(path), str(tmp_path / "o.safetensors"), "--module", "tokens").returncode == 2
    assert run("convert", str(path), str(tmp_path / "o.safetensors"), "--module", "=Linear").returncode == 2


def test_a_lone_1d_weight_is_not_assumed_an_rms_norm(tmp_path, capsys):
    torch.manual_seed(3)
    model = nn.Module()
    model.scale = nn.PReLU(3)  # a name that says nothing: kept as it is, and said so
    with torch.no_grad():
        model.scale.weight.copy_(torch.randn(3))
    torch.save(model.state_dict(), tmp_path / "p.pt")
    assert convert(tmp_path / "p.pt", tmp_path / "o.safetensors", "--adapter", "pytorch-to-burn") == 0
    assert "guessed scale.weight: Unknown: left as it is" in capsys.readouterr().err
    assert convert(tmp_path / "p.pt", tmp_path / "s.safetensors", "--adapter", "pytorch-to-burn",
                   "--module", "scale=PRelu") == 0
    np.testing.assert_array_equal(load_file(tmp_path / "s.safetensors")["scale.alpha"], model.scale.weight.detach().numpy())


def test_skip_enum_variants_keeps_real_camel_case_names_unless_told(net, tmp_path, capsys):
    path, w = net
    args = [path, tmp_path / "o.safetensors", "--include", "^embeddings", "--adapter", "pytorch-to-burn",
            "--skip-enum-variants"]
    assert convert(*args) == 0
    assert sorted(load_file(tmp_path / "o.safetensors")) == ["embeddings.LayerNorm.beta", "embeddings.LayerNorm.gamma"]
    assert "--module embeddings.LayerNorm=EnumVariant to drop it" in capsys.readouterr().err
    assert convert(*args, "--module", "embeddings.LayerNorm=EnumVariant", "--overwrite") == 0
    out = load_file(tmp_path / "o.safetensors")
    assert sorted(out) == ["embeddings.beta", "embeddings.gamma"]
    np.testing.assert_array_equal(out["embeddings.gamma"], w["embeddings.LayerNorm.weight"])


def test_a_template_without_the_segment_says_it_is_an_enum_variant(net, tmp_path, capsys):
    path, w = net
    template = tmp_path / "t.safetensors"
    save_file({"embeddings.gamma": np.zeros(4, np.float32), "embeddings.beta": np.zeros(4, np.float32)}, str(template))
    assert convert(path, tmp_path / "o.safetensors", "--include", "^embeddings", "--adapter", "pytorch-to-burn",
                   "--skip-enum-variants", "--template", template) == 0
    assert "guessed" not in capsys.readouterr().err
    np.testing.assert_array_equal(load_file(tmp_path / "o.safetensors")["embeddings.beta"], w["embeddings.LayerNorm.bias"])


# --- validation ---------------------------------------------------------------------------------

@pytest.fixture
def template(tmp_path):
    """A Burn model's file for fc (after renumbering) whose fc.1.weight has another shape."""
    path = tmp_path / "template.bpk"
    export(ArrayStore({"fc.0.weight": np.zeros((4, 3), np.float32), "fc.0.bias": np.zeros(3, np.float32),
                       "fc.1.weight": np.zeros((3, 5), np.float32), "fc.1.bias": np.zeros(3, np.float32),
                       "fc.2.weight": np.zeros((3, 2), np.float32), "fc.2.bias": np.zeros(2, np.float32)}).entries, path)
    return path


@pytest.mark.child
def test_a_shape_mismatch_against_the_template_is_exit_3_and_writes_nothing(net, template, tmp_path):
    path, _ = net
    args = ["convert", str(path), str(tmp_path / "o.bpk"), "--include", "^fc", "--adapter", "pytorch-to-burn",
            "--contiguous-indices", "--template", str(template)]
    for extra in ([], ["--allow-partial"]):  # --allow-partial forgives missing tensors only
        result = run(*args, *extra)
        assert result.returncode == 3 and not (tmp_path / "o.bpk").exists()
        assert "shape mismatch fc.1.weight: source [3, 3], template [3, 5]" in result.stdout
        assert "1 tensor has another shape than the template's" in result.stderr


@pytest.mark.child
def test_no_validate_writes_anyway_and_says_so(net, template, tmp_path):
    path, w = net
    result = run("convert", str(path), str(tmp_path / "o.bpk"), "--include", "^fc", "--adapter", "pytorch-to-burn",
                 "--contiguous-indices", "--template", str(template), "--no-validate")
    assert result.returncode == 0 and "--no-validate: writing 1 tensor whose shape differs" in result.stderr
    with open_store(tmp_path / "o.bpk") as out:
        np.testing.assert_array_equal(out.read("fc.1.weight"), w["fc.2.weight"].T)


# --- no silent no-ops -----------------------------------------------------------------------------

@pytest.mark.child
def test_filters_leaving_nothing_are_exit_1_naming_the_filter(net, tmp_path):
    path, _ = net
    result = run("convert", str(path), str(tmp_path / "o.safetensors"), "--include", "^nothing")
    assert result.returncode == 1 and not (tmp_path / "o.safetensors").exists()
    assert "include '^nothing'" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.child
def test_top_level_key_on_a_file_that_is_not_pytorch_is_exit_1(tmp_path):
    save_file({"w": np.ones(2, np.float32)}, str(tmp_path / "a.safetensors"))
    result = run("convert", str(tmp_path / "a.safetensors"), str(tmp_path / "o.bpk"), "--top-level-key", "state_dict")
    assert result.returncode == 1 and "--top-level-key 'state_dict'" in result.stderr
    assert not (tmp_path / "o.bpk").exists()


@pytest.mark.child
def test_top_level_key_that_the_checkpoint_lacks_is_exit_1(net, tmp_path):
    path, _ = net
    torch.save({"state_dict": torch.load(path)}, tmp_path / "ckpt.pt")
    result = run("convert", str(tmp_path / "ckpt.pt"), str(tmp_path / "o.bpk"), "--top-level-key", "model")
    assert result.returncode == 1 and "no top-level key 'model'" in result.stderr and not (tmp_path / "o.bpk").exists()


@pytest.mark.child
def test_cast_given_twice_is_a_usage_error(net, tmp_path):
    path, _ = net
    result = run("convert", str(path), str(tmp_path / "o.bpk"), "--cast", "f16", "--cast", "bf16")
    assert result.returncode == 2 and "--cast given 2 times" in result.stderr and not (tmp_path / "o.bpk").exists()


# --- metadata -----------------------------------------------------------------------------------

def test_metadata_travels_across_formats_and_can_be_cleared_or_replaced(tmp_path):
    source = tmp_path / "a.bpk"
    export(ArrayStore({"w": np.arange(3, dtype=np.float32)}).entries, source, metadata={"license": "mit", "epoch": "3"})
    assert convert(source, tmp_path / "b.safetensors", "--metadata", "epoch=4") == 0
    with safe_open(str(tmp_path / "b.safetensors"), "np") as f:
        meta = f.metadata()
        np.testing.assert_array_equal(f.get_tensor("w"), np.arange(3, dtype=np.float32))
    assert meta["license"] == "mit" and meta["epoch"] == "4" and meta.get("format") != "burnpack"
    assert convert(source, tmp_path / "c.safetensors", "--clear-metadata") == 0
    with safe_open(str(tmp_path / "c.safetensors"), "np") as f:
        assert "license" not in f.metadata() and "epoch" not in f.metadata()


# --- recipes that travel ------------------------------------------------------------------------

def test_a_saved_recipe_replays_from_another_folder(net, tmp_path, monkeypatch):
    path, w = net
    template = tmp_path / "t.safetensors"
    save_file({"tokens.weight": np.zeros((10, 4), np.float32)}, str(template))
    assert convert(path, tmp_path / "a.safetensors", "--include", "^tokens", "--adapter", "pytorch-to-burn",
                   "--module", "tokens=Embedding", "--template", template, "--save-recipe", tmp_path / "r.json") == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["sources"] == [{"path": "net.pt"}] and doc["template"] == "t.safetensors"  # relative to the recipe
    assert doc["module_overrides"] == {"tokens": "Embedding"}
    moved = tmp_path / "moved"
    moved.mkdir()
    for name in ("net.pt", "t.safetensors", "r.json"):
        (tmp_path / name).rename(moved / name)
    monkeypatch.chdir(tmp_path)
    assert convert("--recipe", moved / "r.json", "b.safetensors") == 0
    np.testing.assert_array_equal(load_file(tmp_path / "b.safetensors")["tokens.weight"], w["tokens.weight"])
    assert Recipe.load(moved / "r.json").template == str(moved / "t.safetensors")


def test_recipe_as_cli_prints_module_flags_and_replays(net, tmp_path, capsys, monkeypatch):
    path, w = net
    monkeypatch.chdir(tmp_path)
    Recipe.from_json({"version": 1, "sources": ["net.pt"], "adapters": ["pytorch-to-burn"],
                      "module_overrides": {"tokens": "Embedding"}, "filter": {"include": ["^tokens"]}}).save("r.json")
    assert main(["recipe", "r.json", "--as", "cli", "--output", "o.safetensors"]) == 0
    line = capsys.readouterr().out.strip()
    assert line == "store-studio convert net.pt o.safetensors --include '^tokens' --adapter pytorch-to-burn " \
                   "--module tokens=Embedding"
    assert main(shlex.split(line)[1:]) == 0
    np.testing.assert_array_equal(load_file(tmp_path / "o.safetensors")["tokens.weight"], w["tokens.weight"])


def test_a_module_called_an_enum_variant_loses_its_segment_even_without_the_flag(net, tmp_path, capsys):
    path, w = net
    assert convert(path, tmp_path / "o.safetensors", "--include", "^embeddings", "--module",
                   "embeddings.LayerNorm=EnumVariant") == 0
    out = load_file(tmp_path / "o.safetensors")
    assert sorted(out) == ["embeddings.bias", "embeddings.weight"]
    np.testing.assert_array_equal(out["embeddings.weight"], w["embeddings.LayerNorm.weight"])
