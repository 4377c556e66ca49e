"""What the command line prints reads right: singulars, aligned dry-run columns, rules as they were typed."""

from __future__ import annotations

import re

import numpy as np

from engine import ArrayStore, export, humanize
from engine.cli import main
from tests.helpers.samples import SAMPLES


def test_one_tensor_is_counted_in_the_singular(tmp_path, capsys):
    export(ArrayStore({"w": np.ones(1, np.float32)}).entries, tmp_path / "one.bpk")
    assert main(["inspect", str(tmp_path / "one.bpk")]) == 0
    assert "1 tensor · 1 parameter · " in capsys.readouterr().out
    assert main(["convert", str(tmp_path / "one.bpk"), str(tmp_path / "o.bpk"), "--dry-run", "--include", "w"]) == 0
    out = capsys.readouterr().out
    assert "rule include 'w': 1 tensor\n" in out and "1 tensor out, 0 dropped, 0 conflicts" in out


def test_dry_run_columns_are_aligned(capsys):
    assert main(["convert", str(SAMPLES / "sample_cnn.pt"), "o.bpk", "--dry-run", "--adapter", "pytorch-to-burn"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if " from " in line and not line.startswith(" ")]
    assert len(rows) == 18
    for column in (r" [FI]\d+ ", r" \[[\d\]]", r" \[[A-Z]", " from "):
        starts = {re.search(column, row).start() for row in rows}
        assert len(starts) == 1, (column, rows)


def test_remap_rules_print_as_typed_without_doubled_backslashes(capsys):
    assert main(["convert", str(SAMPLES / "sample_cnn.pt"), "o.bpk", "--dry-run",
                 "--remap", r"^fc(\d)\.", "dense$1.", "--exclude", r"\.bias$"]) == 0
    out = capsys.readouterr().out
    assert "rule remap '^fc(\\d)\\.' -> 'dense$1.': 4 tensors\n" in out
    assert "rule exclude '\\.bias$': 6 tensors" in out
    assert "\\\\" not in out


def test_humanize_plural_and_quoted():
    assert [humanize.plural(n, "tensor") for n in (0, 1, 2, 1000)] == ["0 tensors", "1 tensor", "2 tensors",
                                                                      "1,000 tensors"]
    assert humanize.plural(1, "match", "matches") == "1 match" and humanize.plural(3, "match", "matches") == "3 matches"
    assert humanize.quoted(r"^fc\.") == "'^fc\\.'"
