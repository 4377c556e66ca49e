"""The command line as a first-time user meets it: totals that tell parameters from buffers, a diff that shows
what differs, guesses told once per kind, help with examples, a progress line that fits, every failure on
stderr, and a cut file that says "truncated" with the bytes it needs and has."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from engine import ArrayStore, export
from engine.cli import COMMANDS, main, parser
from engine.cli.progress import ProgressLine

SAMPLES = Path(__file__).resolve().parents[3] / "resources" / "samples"


def batchnorm_checkpoint(path: Path) -> Path:
    """A real torch checkpoint with a BatchNorm: 4 + 4 weights, 4 + 4 + 1 buffer values."""
    torch.save(torch.nn.BatchNorm1d(4).state_dict(), path)
    return path


def test_inspect_counts_buffer_values_apart_from_parameters(tmp_path, capsys):
    path = batchnorm_checkpoint(tmp_path / "bn.pt")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "5 tensors · 8 parameters + 9 buffer values · " in out
    header = next(line for line in out.splitlines() if line.startswith("name"))
    assert header.split()[:5] == ["name", "dtype", "shape", "values", "size"]
    assert main(["inspect", str(path), "--json"]) == 0
    document = __import__("json").loads(capsys.readouterr().out)
    assert document["totals"] == {"tensors": 5, "parameters": 8, "buffer_values": 9, "bytes": 4 * 16 + 8}
    buffers = {t["name"] for t in document["tensors"] if t.get("buffer")}
    assert buffers == {"running_mean", "running_var", "num_batches_tracked"}
    assert all(t["values"] == (1 if t["name"] == "num_batches_tracked" else 4) for t in document["tensors"])


def test_config_of_a_plain_state_dict_prints_an_empty_document_and_says_why_on_stderr(tmp_path, capsys):
    path = batchnorm_checkpoint(tmp_path / "bn.pt")
    assert main(["config", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "{}\n"  # still the document a script parses
    assert captured.err == ("store-studio config: bn.pt holds no values besides its tensors and 2 metadata keys "
                            "(pytorch); `store-studio inspect` lists both\n")


def test_config_with_values_says_nothing_more(tmp_path, capsys):
    path = tmp_path / "ckpt.pt"
    torch.save({"epoch": 3, "state_dict": {"w": torch.ones(2)}}, path)
    assert main(["config", str(path)]) == 0
    captured = capsys.readouterr()
    assert '"epoch": 3' in captured.out and captured.err == ""


def two_files(tmp_path: Path) -> tuple[Path, Path]:
    a = {"same.0": np.ones(3, np.float32), "same.1": np.zeros(2, np.float32), "changed": np.ones(2, np.float32)}
    b = {**a, "changed": np.full(2, 2.0, np.float32), "extra": np.ones(1, np.float32)}
    export(ArrayStore(a).entries, tmp_path / "a.safetensors")
    export(ArrayStore(b).entries, tmp_path / "b.safetensors")
    return tmp_path / "a.safetensors", tmp_path / "b.safetensors"


def test_diff_lists_only_what_differs_then_counts_everything(tmp_path, capsys):
    a, b = two_files(tmp_path)
    assert main(["diff", str(a), str(b), "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines[:-1]] == [["different", "changed"], ["only_in_b", "extra"]]
    assert lines[-1] == "2 identical, 1 different, 1 only in b"


def test_diff_all_lists_the_identical_pairs_too(tmp_path, capsys):
    a, b = two_files(tmp_path)
    assert main(["diff", str(a), str(b), "-q", "--all"]) == 0
    statuses = [line.split()[:2] for line in capsys.readouterr().out.splitlines()[:-1]]
    assert ["identical", "same.0"] in statuses and ["identical", "same.1"] in statuses and len(statuses) == 4


def stacked_lstm(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    model = torch.nn.LSTM(8, 16, num_layers=3)
    path = tmp_path / "lstm.pt"
    torch.save({f"lstm.{k}": v for k, v in model.state_dict().items()}, path)
    return path


def test_guesses_alike_are_one_line_with_their_count_and_v_lists_each(tmp_path, capsys):
    path = stacked_lstm(tmp_path)
    assert main(["convert", str(path), str(tmp_path / "out.bpk"), "--adapter", "pytorch-to-burn", "-q"]) == 0
    err = capsys.readouterr().err.splitlines()
    guessed = [line for line in err if line.startswith("guessed")]
    assert len(guessed) == 1
    assert guessed[0].startswith("guessed 48 tensors of 3 modules (lstm.0, lstm.1, ...): placed by convention: "
                                 "Burn has no module for a stack of LSTM layers; e.g. lstm.0.")
    assert guessed[0].endswith("(-v lists each)")
    assert main(["convert", str(path), str(tmp_path / "out2.bpk"), "--adapter", "pytorch-to-burn", "-q", "-v"]) == 0
    each = [line for line in capsys.readouterr().err.splitlines() if line.startswith("guessed")]
    assert len(each) == 48 and len(set(each)) == 48


def test_every_command_help_has_examples_and_named_arguments(capsys):
    for command in COMMANDS:
        with pytest.raises(SystemExit):
            parser().parse_args([command, "--help"])
        text = capsys.readouterr().out
        examples = text.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert 1 <= len(examples) <= 2 and all(e.startswith(f"  store-studio {command} ") for e in examples), command
    with pytest.raises(SystemExit):
        parser().parse_args(["convert", "--help"])
    convert = capsys.readouterr().out
    assert convert.startswith("usage: store-studio convert [options] IN [IN ...] OUT\n")
    with pytest.raises(SystemExit):
        parser().parse_args(["diff", "--help"])
    diff = capsys.readouterr().out
    assert "  A                   a model file" in diff and "  B                   the model file to compare" in diff
    with pytest.raises(SystemExit):
        parser().parse_args(["migrate", "--help"])
    migrate = " ".join(capsys.readouterr().out.split())
    assert "(default: 0.22)" in migrate and "recipe" not in migrate


@pytest.mark.parametrize("width", [120, 80, 60, 50, 40, 30, 20, 8])
def test_a_progress_line_fits_the_width_and_never_cuts_a_figure(width):
    line = ProgressLine("writing a-checkpoint-with-a-rather-long-name.bpk", stream=None, active=False)  # type: ignore[arg-type]
    text = line.text(512 << 20, 2 << 30, 10.0, width)
    assert len(text) <= width
    if text == "25%":  # narrower than any figure: the share done alone
        return
    figures = ["512 MiB of 2 GiB (25%)", "51.2 MiB/s", "30 s left"]
    shown = [f for f in figures if f in text]
    assert shown == figures[:len(shown)] or shown == [figures[0], figures[2]]
    leftover = text
    for figure in shown:
        leftover = leftover.replace(figure, "")
    assert not re.search(r"\d", leftover.replace(".bpk", "")), text  # no digit outside a whole figure


def test_a_migrate_failure_reaches_stderr(tmp_path, capsys):
    (tmp_path / "ckpt").mkdir()
    good = tmp_path / "ckpt" / "model.mpk"
    good.write_bytes(b"\x82\xa8metadata\x80\xa4item\xc4")  # sniffs as a Burn record; its last value is cut
    assert main(["migrate", str(tmp_path / "ckpt"), "-q"]) == 1
    captured = capsys.readouterr()
    assert "failed    model.mpk: " in captured.out
    assert captured.err.startswith("store-studio migrate: ") and "model.mpk" in captured.err


def legacy_checkpoint(path: Path) -> Path:
    torch.save({"w": torch.arange(4096, dtype=torch.float32)}, path, _use_new_zipfile_serialization=False)
    return path


def test_a_truncated_legacy_checkpoint_says_truncated_with_the_bytes_it_needs_and_has(tmp_path, capsys):
    whole = legacy_checkpoint(tmp_path / "whole.pt").read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(whole[:len(whole) - 100])
    assert main(["inspect", str(cut)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("store-studio: cut.pt: file is truncated: it has ")
    assert f"it has {len(whole) - 100} bytes" in err and f"needs {len(whole)}" in err and "storage 9" not in err


def test_a_cut_zip_checkpoint_says_truncated_with_the_bytes_it_has(tmp_path, capsys):
    path = tmp_path / "z.pt"
    torch.save({"w": torch.arange(4096, dtype=torch.float32)}, path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    assert main(["inspect", str(path)]) == 1
    assert capsys.readouterr().err == (f"store-studio: z.pt: file is truncated: it has {len(data) // 2} bytes and "
                                       "lacks the directory that ends every complete zip archive\n")
