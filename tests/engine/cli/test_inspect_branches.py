"""``inspect`` and ``convert`` on training checkpoints say what the file holds besides the model weights, and
the ``--top-level-key`` that reads the weights alone; files written by real torch. Without it a user would convert
an optimizer's state along with the weights without knowing.

Promises -> tests:
- ``inspect`` prints one line per branch and names the key -> ``test_inspect_lists_the_branches_and_names_the_key``
- ``--json`` carries the same -> ``test_inspect_json_lists_the_branches_and_the_weights_key``
- one branch, a plain state_dict or a key given: nothing new -> ``test_nothing_new_...``
- ``convert`` without a key still converts everything and says in one line what it included beside the
  weights -> ``test_convert_without_a_key_says_what_it_included_beside_the_weights``
- what a filter dropped is not said to be included; a key given, nothing is said -> ``test_convert_says_...``
- a key from the file reaches the terminal escaped and quoted for a shell -> ``test_a_hostile_key_...``
"""

from __future__ import annotations

import json

import torch

from engine import open_store
from engine.cli import main
from tests.helpers.samples import SAMPLES
from tests.helpers.pytorch_training_checkpoints import lightning_checkpoint, plain_training_checkpoint, trained

BRANCH_LINES = ["the tensors sit under 3 top-level keys:",
                "  state_dict        model weights                                 9 tensors  368 B",
                "  optimizer_states  optimizer state (step, exp_avg, exp_avg_sq)  18 tensors  616 B",
                "  callbacks         EMA of the model weights                      9 tensors  368 B",
                "use --top-level-key state_dict for the model weights alone"]
INCLUDED = ("included beside the model weights: optimizer_states (18 tensors, 616 B), callbacks (9 tensors, 368 B) "
            "— --top-level-key state_dict converts the weights alone")


def test_inspect_lists_the_branches_and_names_the_key(tmp_path, capsys):
    lightning_checkpoint(tmp_path / "run.ckpt")
    assert main(["inspect", str(tmp_path / "run.ckpt")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-8:] == ["36 tensors · 302 parameters + 34 buffer values · 1.32 KiB", "  byteorder = little", "  version = 3",
                          *BRANCH_LINES]


def test_inspect_json_lists_the_branches_and_the_weights_key(tmp_path, capsys):
    plain_training_checkpoint(tmp_path / "run.pt")
    assert main(["inspect", str(tmp_path / "run.pt"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["branches"] == [
        {"key": "model", "kind": "model weights", "tensors": 9, "bytes": 368},
        {"key": "optimizer", "kind": "optimizer state", "tensors": 6, "bytes": 296, "holds": ["momentum_buffer"]},
        {"key": "ema", "kind": "EMA of the model weights", "tensors": 9, "bytes": 368}]
    assert document["weights_key"] == "model"


def test_nothing_new_for_one_branch_a_plain_state_dict_or_a_key_given(tmp_path, capsys):
    lightning_checkpoint(tmp_path / "run.ckpt")
    torch.save({"state_dict": trained().model, "epoch": 3}, tmp_path / "one.ckpt")
    for args in (["inspect", str(tmp_path / "run.ckpt"), "--top-level-key", "state_dict"],
                 ["inspect", str(tmp_path / "one.ckpt")], ["inspect", str(SAMPLES / "sample_cnn.pt")]):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "top-level" not in out and out.splitlines()[-1] == "  version = 3"
        assert main([*args, "--json"]) == 0
        assert not {"branches", "weights_key"} & set(json.loads(capsys.readouterr().out))


def test_convert_without_a_key_says_what_it_included_beside_the_weights(tmp_path, capsys):
    lightning_checkpoint(tmp_path / "run.ckpt")
    for flags in ([], ["--allow-partial"]):  # the plain copy and the recipe's path
        out = tmp_path / f"out{len(flags)}.bpk"
        assert main(["convert", str(tmp_path / "run.ckpt"), str(out), "-q", *flags]) == 0
        assert capsys.readouterr().err.splitlines() == [f"wrote {out}", INCLUDED]
        with open_store(out) as written, open_store(tmp_path / "run.ckpt") as source:
            assert written.names == source.names  # burn-store's semantics: the whole file, as before


def test_convert_says_only_what_it_wrote_and_nothing_once_a_key_is_given(tmp_path, capsys):
    run = lightning_checkpoint(tmp_path / "run.ckpt")
    out = tmp_path / "out.safetensors"
    assert main(["convert", str(tmp_path / "run.ckpt"), str(out), "-q", "--exclude", "^callbacks\\."]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"wrote {out}", "included beside the model weights: optimizer_states (18 tensors, 616 B) — --top-level-key "
                        "state_dict converts the weights alone"]
    assert main(["convert", str(tmp_path / "run.ckpt"), str(out), "-q", "--overwrite", "--top-level-key",
                 "state_dict"]) == 0
    assert capsys.readouterr().err.splitlines() == [f"wrote {out}"]
    with open_store(out) as written:
        assert written.names == list(run.model)


def test_several_sources_each_say_their_own(tmp_path, capsys):
    lightning_checkpoint(tmp_path / "run.ckpt")
    plain_training_checkpoint(tmp_path / "other.pt")
    out = tmp_path / "out.bpk"
    assert main(["convert", str(tmp_path / "run.ckpt"), str(tmp_path / "other.pt"), str(out), "-q"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"wrote {out}", f"run.ckpt: {INCLUDED}",
        "other.pt: included beside the model weights: optimizer (6 tensors, 296 B), ema (9 tensors, 368 B) — "
        "--top-level-key model converts the weights alone"]


def test_a_hostile_key_reaches_the_terminal_escaped_and_quoted_for_a_shell(tmp_path, capsys):
    run = trained()
    key = "my weights\x1b[2J$(rm)"
    torch.save({key: run.model, "optimizer": run.optimizer}, tmp_path / "c.pt")
    assert main(["inspect", str(tmp_path / "c.pt")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert out.splitlines()[-1] == "use --top-level-key 'my weights\\033[2J$(rm)' for the model weights alone"
    assert main(["convert", str(tmp_path / "c.pt"), str(tmp_path / "o.bpk"), "-q"]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == (
        "included beside the model weights: optimizer (18 tensors, 616 B) — --top-level-key "
        "'my weights\\033[2J$(rm)' converts the weights alone")
