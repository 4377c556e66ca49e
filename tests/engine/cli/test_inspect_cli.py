"""``inspect`` word for word, in-process, on files written by torch and safetensors: a row per tensor, totals,
metadata and values, ``--json`` the same as data, ``--top-level-key`` one branch, the Burn releases that load a
Burnpack (and why not the others), a file's caveat. Without it a user would misread what a file holds.

Promises (README "Command line") -> tests:
- ``inspect`` prints a row per tensor, totals, metadata and values; ``--json`` the same as data;
  ``--top-level-key`` one branch -> ``test_inspect_prints_rows_totals_and_metadata``, ``test_inspect_json_holds_the_values``
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file

from engine.cli import main


def test_inspect_prints_rows_totals_and_metadata(checkpoint, capsys):
    assert main(["inspect", checkpoint]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ck.pt · PyTorch zip",
        "name     dtype  shape   values  size",
        "model.w  F32    [2, 3]       6  24 B",
        "model.b  F16    [3]          3   6 B",
        "2 tensors · 9 parameters · 30 B",
        "  byteorder = little",
        "  version = 3",
    ]
    assert main(["inspect", checkpoint, "--top-level-key", "model"]) == 0
    assert capsys.readouterr().out.splitlines()[1:4] == ["name  dtype  shape   values  size",
                                                         "w     F32    [2, 3]       6  24 B",
                                                         "b     F16    [3]          3   6 B"]


def test_inspect_json_holds_the_values(checkpoint, capsys):
    assert main(["inspect", checkpoint, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == {
        "file": checkpoint, "format": "pytorch", "version": "zip",
        "metadata": {"byteorder": "little", "version": "3"},
        "tensors": [{"name": "model.w", "dtype": "F32", "shape": [2, 3], "values": 6, "bytes": 24},
                    {"name": "model.b", "dtype": "F16", "shape": [3], "values": 3, "bytes": 6}],
        "totals": {"tensors": 2, "parameters": 9, "buffer_values": 0, "bytes": 30},
        "values": {"epoch": 3, "lr": 0.5, "cfg": {"a.b": 1, "a": {"b": 2, "c": [10, 20, {"d": "deep"}]},
                                                  "list": [5, 6]}},
    }


def test_inspect_of_a_burnpack_says_which_burn_releases_load_it(capsys):
    from tests.helpers.samples import SAMPLES
    assert main(["inspect", str(SAMPLES / "sample_cnn.bpk")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["sample_cnn.bpk · Burnpack v1", "loads in: Burn 0.20, 0.21, 0.22",
                       "name                dtype  shape            values     size"]
    assert out[-6:] == ["fc2.bias            F32    [10]                 10     40 B",
                        "16 tensors · 108,714 parameters + 96 buffer values · 425 KiB",
                        "  format = burnpack", "  model = SampleCnn", "  producer = store-studio", "  version = 0.1.0"]
    assert main(["inspect", str(SAMPLES / "sample_cnn.bpk"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["burn"] == {"loads_in": ["0.20", "0.21", "0.22"], "cannot": {}}
    assert "burn" not in json.loads((main(["inspect", str(SAMPLES / "sample_cnn.safetensors"), "--json"]),
                                     capsys.readouterr().out)[1])


def test_inspect_says_a_files_caveat_and_its_param_ids(tmp_path, capsys):
    """A Bin record's names are positional: the note says so beside the format, in the table and the JSON; each
    parameter's id is listed."""
    from tests.helpers.formats_burn_record_writers import IDS, Settings, model_item, write_record
    item, _ = model_item()
    record = write_record(tmp_path, "deploy", item, Settings(recorder="Bin"))
    note = ("Tensor names are positional (param.0, param.1, ...): Bin records have no field names. Convert with "
            "--template (a file of the same model) to name them.")
    assert main(["inspect", str(record)]) == 0
    assert capsys.readouterr().out.splitlines()[:3] == ["deploy.bin · Burn record Bin · Burn 0.21.0", f"note: {note}",
                                                        "name      dtype  shape      values  size"]
    assert main(["inspect", str(record), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["note"] == note
    assert document["tensors"][0] == {"name": "param.0", "dtype": "F32", "shape": [5, 3], "values": 15,
                                      "bytes": 60, "param_id": IDS[0]}
    assert main(["inspect", checkpoint_path(tmp_path), "--json"]) == 0
    assert "note" not in json.loads(capsys.readouterr().out)


def checkpoint_path(tmp_path: Path) -> str:
    torch.save({"w": torch.ones(2)}, tmp_path / "plain.pt")
    return str(tmp_path / "plain.pt")


def test_inspect_right_aligns_counts_and_sizes_under_their_headers(tmp_path, capsys):
    """A billion-element tensor (a sparse file: inspect reads only the header) is wider than "values"."""
    import struct
    count = 1_000_000_000
    header = json.dumps({"big": {"dtype": "I8", "shape": [count], "data_offsets": [0, count]},
                         "w": {"dtype": "F32", "shape": [2], "data_offsets": [count, count + 8]}}).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "big.safetensors"
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + count + 8)
    assert main(["inspect", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "big.safetensors · SafeTensors",
        "name  dtype  shape                values     size",
        "big   I8     [1000000000]  1,000,000,000  954 MiB",
        "w     F32    [2]                       2      8 B",
        "2 tensors · 2 parameters + 1,000,000,000 buffer values · 954 MiB",
    ]


def test_inspect_says_which_burn_releases_cannot_load_a_burnpack_and_why(tmp_path, capsys):
    save_file({"m": np.array([True, False])}, str(tmp_path / "bool.safetensors"))
    out = tmp_path / "b20.bpk"
    assert main(["convert", str(tmp_path / "bool.safetensors"), str(out), "--burn-version", "0.20", "-q"]) == 0
    capsys.readouterr()
    assert main(["inspect", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[:4] == [
        "b20.bpk · Burnpack v1", "loads in: Burn 0.20",
        '  not Burn 0.21: the bare "Bool" spelling is Burn 0.20\'s; 0.21 reads bools with their storage (#4649)',
        '  not Burn 0.22: the bare "Bool" spelling is Burn 0.20\'s; 0.22 reads bools with their storage (#4649)']


def test_inspect_json_is_indented_by_two(checkpoint, capsys):
    assert main(["inspect", checkpoint, "--json"]) == 0
    assert capsys.readouterr().out.startswith('{\n  "file": ')
