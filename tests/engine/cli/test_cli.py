"""The command line: exit codes, one-line errors, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from engine import ArrayStore, export, open_store
from tests.helpers.samples import SAMPLES


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gui.launch", *args], capture_output=True, text=True)


@pytest.mark.child
def test_inspect_lists_tensors_and_totals():
    result = run("inspect", str(SAMPLES / "sample_cnn.bpk"))
    assert result.returncode == 0
    assert "fc1.weight" in result.stdout and "[800, 128]" in result.stdout
    assert "16 tensors" in result.stdout and "producer = store-studio" in result.stdout


@pytest.mark.child
def test_inspect_json_is_machine_readable():
    result = run("inspect", "--json", str(SAMPLES / "sample_cnn.safetensors"))
    doc = json.loads(result.stdout)
    assert doc["format"] == "safetensors" and doc["totals"]["tensors"] == 18
    fc = next(t for t in doc["tensors"] if t["name"] == "fc1.weight")
    assert fc == {"name": "fc1.weight", "dtype": "F32", "shape": [128, 800], "values": 102400, "bytes": 409600}


@pytest.mark.child
def test_convert_writes_a_readable_file(tmp_path):
    out = tmp_path / "out.safetensors"
    result = run("convert", str(SAMPLES / "sample_cnn.bpk"), str(out), "--metadata", "who=me")
    assert result.returncode == 0, result.stderr
    with open_store(out) as converted, open_store(SAMPLES / "sample_cnn.bpk") as source:
        assert converted.metadata["who"] == "me"
        assert converted.names == source.names
        np.testing.assert_array_equal(converted.read("fc1.weight"), source.read("fc1.weight"))


@pytest.mark.child
def test_convert_refuses_to_overwrite_with_one_line(tmp_path):
    out = tmp_path / "out.bpk"
    out.write_bytes(b"x")
    result = run("convert", str(SAMPLES / "sample_cnn.bpk"), str(out))
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "already exists" in result.stderr
    assert run("convert", str(SAMPLES / "sample_cnn.bpk"), str(out), "--overwrite").returncode == 0


@pytest.mark.child
def test_a_broken_file_is_exit_1_with_one_line_naming_it(tmp_path):
    bad = tmp_path / "broken.bpk"
    bad.write_bytes(b"NRUB\x01\x00\xff\xff\xff\x00")
    result = run("inspect", str(bad))
    assert result.returncode == 1
    assert result.stderr.startswith("store-studio: broken.bpk:") and "Traceback" not in result.stderr


@pytest.mark.child
def test_usage_errors_are_exit_2():
    assert run("convert", "only-one-arg").returncode == 2
    assert run("inspect", "--no-such-flag", "x").returncode == 2


@pytest.mark.child
def test_convert_format_flag_overrides_the_extension(tmp_path):
    export(ArrayStore({"a": np.ones(2, np.float32)}).entries, tmp_path / "a.bpk")
    out = tmp_path / "weights.bin"
    assert run("convert", str(tmp_path / "a.bpk"), str(out), "--format", "safetensors").returncode == 0
    with open_store(out) as store:
        assert store.format == "safetensors"
