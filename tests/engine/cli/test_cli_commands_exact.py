"""``diff``, ``inspect``, ``config`` and ``migrate`` word for word, on files written by torch and safetensors
(issue 25: what each flag does, exit codes and messages, in-process so that a mutation run maps them).

Promises (README "Command line") -> tests:
- ``diff`` lists each tensor's status, the sizes of a mismatch and the statistics of a difference, then a summary;
  ``--no-values`` skips the statistics; ``--rtol``/``--atol`` decide allclose; ``--exit-code`` exits 1 when anything
  differs -> ``test_diff_lists_each_status_and_its_details``, ``test_diff_tolerances_and_exit_code``
- ``inspect`` prints a row per tensor, totals, metadata and values; ``--json`` the same as data;
  ``--top-level-key`` one branch -> ``test_inspect_prints_rows_totals_and_metadata``, ``test_inspect_json_holds_the_values``
- ``config --key`` picks an exact key (dots included) first, then a dotted path through dicts and lists
  -> ``test_config_key_takes_exact_keys_first_then_a_path``
- ``migrate`` refuses what is no folder -> ``test_migrate_refuses_a_file_as_its_folder``
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

from engine.cli import main


@pytest.fixture
def pair(tmp_path: Path) -> tuple[str, str]:
    save_file({"same": np.ones(2, np.float32), "vals": np.array([1, 2, 3], np.float32),
               "shape": np.ones((2, 2), np.float32), "dt": np.ones(2, np.float32), "onlya": np.ones(1, np.float32)},
              str(tmp_path / "a.safetensors"))
    save_file({"same": np.ones(2, np.float32), "vals": np.array([1, 2, 3.5], np.float32),
               "shape": np.ones(4, np.float32), "dt": np.ones(2, np.float64), "onlyb": np.ones(1, np.float32)},
              str(tmp_path / "b.safetensors"))
    return str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors")


SUMMARY = "1 identical, 1 different, 1 only in a, 1 only in b, 1 shape mismatch, 1 dtype mismatch"


def test_diff_lists_each_status_and_its_details(pair, capsys):
    a, b = pair
    assert main(["diff", a, b, "-q", "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "dtype_mismatch dt  F32 [2] vs F64 [2]  max |a-b| 0, mean 0, allclose yes",
        "only_in_a      onlya",
        "identical      same",
        "shape_mismatch shape  F32 [2, 2] vs F32 [4]",
        "different      vals  max |a-b| 0.5, mean 0.166667, allclose no",
        "only_in_b      onlyb",
        SUMMARY,
    ]
    assert main(["diff", a, b, "--no-values", "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "dtype_mismatch dt  F32 [2] vs F64 [2]", "only_in_a      onlya", "identical      same",
        "shape_mismatch shape  F32 [2, 2] vs F32 [4]", "different      vals", "only_in_b      onlyb", SUMMARY]


def test_diff_tolerances_and_exit_code(pair, capsys):
    a, b = pair
    assert main(["diff", a, b, "--rtol", "0.2", "--exit-code"]) == 1  # 0.5 <= 0.2 * 3.5
    assert "different      vals  max |a-b| 0.5, mean 0.166667, allclose yes" in capsys.readouterr().out
    assert main(["diff", a, b, "--atol", "0.5", "--rtol", "0"]) == 0
    assert "allclose yes" in capsys.readouterr().out.splitlines()[3]  # the identical pair is not listed
    assert main(["diff", a, b, "--atol", "0.4", "--rtol", "0"]) == 0
    assert "allclose no" in capsys.readouterr().out.splitlines()[3]
    assert main(["diff", a, a, "--exit-code"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "5 identical"


def test_diff_of_two_empty_files_has_nothing_to_compare(tmp_path, capsys):
    save_file({}, str(tmp_path / "e.safetensors"))
    assert main(["diff", str(tmp_path / "e.safetensors"), str(tmp_path / "e.safetensors"), "--exit-code"]) == 0
    assert capsys.readouterr().out == "nothing to compare\n"


def test_diff_json_has_no_suggestions_key_unless_asked(pair, capsys):
    a, b = pair
    assert main(["diff", a, b, "--json", "--exit-code"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"tensors", "summary"}
    assert [t["status"] for t in document["tensors"]] == ["dtype_mismatch", "only_in_a", "identical",
                                                          "shape_mismatch", "different", "only_in_b"]


def test_diff_save_recipe_needs_suggest(pair, tmp_path, capsys):
    a, b = pair
    assert main(["diff", a, b, "--save-recipe", str(tmp_path / "r.json")]) == 2
    assert capsys.readouterr().err == ("store-studio diff: --save-recipe saves what --suggest finds: give --suggest "
                                       "too\n")
    assert not (tmp_path / "r.json").exists()


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    torch.save({"model": {"w": torch.ones(2, 3), "b": torch.zeros(3, dtype=torch.float16)}, "epoch": 3, "lr": 0.5,
                "cfg": {"a.b": 1, "a": {"b": 2, "c": [10, 20, {"d": "deep"}]}, "list": [5, 6]}},
               tmp_path / "ck.pt")
    return str(tmp_path / "ck.pt")


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


@pytest.mark.parametrize("key, value", [
    ("epoch", 3),
    ("cfg.a.b", 1),  # an exact key holding a dot wins over the path a -> b
    ("cfg.a.c.1", 20),
    ("cfg.a.c.2.d", "deep"),
    ("cfg.list.0", 5),
    ("cfg.list.1", 6),
    ("cfg.a", {"b": 2, "c": [10, 20, {"d": "deep"}]}),
])
def test_config_key_takes_exact_keys_first_then_a_path(checkpoint, capsys, key, value):
    assert main(["config", checkpoint, "--key", key]) == 0
    assert json.loads(capsys.readouterr().out) == value


@pytest.mark.parametrize("key", ["nope", "cfg.list.2", "cfg.list.x", "epoch.1", "cfg.a.c.3.d", "cfg.list.-1"])
def test_config_a_missing_key_is_exit_1_listing_the_top_level_keys(checkpoint, capsys, key):
    assert main(["config", checkpoint, "--key", key]) == 1
    assert capsys.readouterr().err == (f"store-studio: ck.pt: has no value at {key!r}; its top-level keys are: "
                                       "'epoch', 'lr', 'cfg'\n")


def test_config_prints_every_value_as_json(checkpoint, capsys):
    assert main(["config", checkpoint]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == {"epoch": 3, "lr": 0.5, "cfg": {"a.b": 1, "a": {"b": 2, "c": [10, 20, {"d": "deep"}]},
                                                              "list": [5, 6]}}
    assert out.startswith('{\n  "epoch": 3,')  # indented by two


def test_config_keeps_text_as_written(tmp_path, capsys):
    torch.save({"name": "modèle"}, tmp_path / "u.pt")
    assert main(["config", str(tmp_path / "u.pt"), "--key", "name"]) == 0
    assert capsys.readouterr().out == '"modèle"\n'


def test_migrate_refuses_a_file_as_its_folder(checkpoint, capsys):
    assert main(["migrate", checkpoint]) == 1
    assert capsys.readouterr().err == f"store-studio: {checkpoint}: not a folder\n"


@pytest.mark.parametrize("saved, key", [([torch.ones(2), 5, "x"], "9"), ([torch.ones(2), 5, "x"], "x.y"),
                                        ({"w": torch.ones(2)}, "a")])
def test_config_names_no_keys_for_a_list_or_a_checkpoint_of_tensors_only(tmp_path, capsys, saved, key):
    torch.save(saved, tmp_path / "c.pt")
    assert main(["config", str(tmp_path / "c.pt"), "--key", key]) == 1
    assert capsys.readouterr().err == f"store-studio: c.pt: has no value at {key!r}; its top-level keys are: none\n"


def test_config_key_indexes_a_top_level_list(tmp_path, capsys):
    torch.save([torch.ones(2), 5, "x"], tmp_path / "c.pt")
    assert main(["config", str(tmp_path / "c.pt"), "--key", "1"]) == 0
    assert capsys.readouterr().out == "5\n"


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
