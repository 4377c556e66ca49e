"""``store-studio diff A B``: statuses as JSON or text, values optional, through a recipe's plan."""

import json

import numpy as np
import pytest

from engine import ArrayStore, export
from engine.cli import main
from tests.helpers.engine_cli_run import fixture_as_safetensors, run


def write(path, **arrays):
    export(ArrayStore(arrays).entries, path)
    return str(path)


def test_json_lists_every_tensor_with_its_status_and_a_summary(tmp_path, capsys):
    a = write(tmp_path / "a.safetensors", same=np.ones(3, np.float32), moved=np.zeros(2, np.float32), gone=np.zeros(1, np.float32))
    b = write(tmp_path / "b.bpk", same=np.ones(3, np.float32), moved=np.array([0, 0.5], np.float32), new=np.zeros(1, np.int32))
    assert main(["diff", a, b, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    statuses = {t["name"]: t["status"] for t in doc["tensors"]}
    assert statuses == {"same": "identical", "moved": "different", "gone": "only_in_a", "new": "only_in_b"}
    moved = next(t for t in doc["tensors"] if t["name"] == "moved")
    assert moved["max_abs"] == 0.5 and moved["mean_abs"] == 0.25 and moved["allclose"] is False
    assert doc["summary"]["identical"] == 1 and doc["summary"]["total"] == 4


def test_no_values_skips_the_statistics(tmp_path, capsys):
    a = write(tmp_path / "a.safetensors", x=np.zeros(2, np.float32))
    b = write(tmp_path / "b.safetensors", x=np.ones(2, np.float32))
    assert main(["diff", a, b, "--json", "--no-values"]) == 0
    (tensor,) = json.loads(capsys.readouterr().out)["tensors"]
    assert tensor == {"name": "x", "status": "different", "dtype_a": "F32", "dtype_b": "F32", "shape_a": [2], "shape_b": [2]}


@pytest.mark.child
def test_a_source_and_its_converted_result_are_identical_through_the_recipe(tmp_path):
    src = fixture_as_safetensors("complex_nested/complex_nested.pt", tmp_path / "nested.safetensors")
    assert main(["convert", str(src), str(tmp_path / "out.bpk"), "--adapter", "pytorch-to-burn", "--cast", "f16",
                 "--save-recipe", str(tmp_path / "r.json")]) == 0
    result = run("diff", str(src), str(tmp_path / "out.bpk"), "--recipe", str(tmp_path / "r.json"), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert summary["identical"] == summary["total"] == 23
    plain = run("diff", str(src), str(tmp_path / "out.bpk"))
    assert "only_in_a" in plain.stdout and "fc1.weight" in plain.stdout


@pytest.mark.child
def test_a_missing_file_is_exit_1_naming_it(tmp_path):
    result = run("diff", str(tmp_path / "nope.bpk"), str(tmp_path / "nope2.bpk"))
    assert result.returncode == 1 and "nope.bpk" in result.stderr
