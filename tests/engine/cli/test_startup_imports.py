"""A command imports only what it needs: start-up is most of a small command's time,
and without it ``store-studio inspect`` would wait on libraries it never uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

REPO = Path(__file__).resolve().parents[3]
PROBE = """
import contextlib, io, json, sys
from gui.launch import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exit:  # argparse's --version
        code = exit.code
roots = sorted({m.split(".")[0] for m in sys.modules} | {m for m in sys.modules if m.startswith(("engine.", "gui."))})
print(json.dumps({"code": code, "out": out.getvalue(), "modules": roots}))
"""


def probe(*args: str) -> dict:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.child
def test_version_loads_neither_numpy_nor_qt():
    report = probe("--version")
    assert report["code"] == 0 and report["out"].startswith("store-studio ")
    assert not {"numpy", "ml_dtypes", "PySide6", "gui.app"} & set(report["modules"])
    assert not {"msgspec", "dataclasses", "engine.store"} & set(report["modules"])  # error types name locations only


@pytest.mark.child
def test_inspect_loads_no_qt_no_surgery_and_no_ml_dtypes_for_f32(tmp_path):
    path = tmp_path / "tiny.safetensors"
    save_file({"w": np.arange(3, dtype=np.float32)}, path)
    report = probe("inspect", str(path))
    assert report["code"] == 0 and "w" in report["out"]
    assert not {"ml_dtypes", "PySide6", "engine.surgery", "engine.exporting", "engine.formats.pytorch"} & set(report["modules"])
    assert {m for m in report["modules"] if m.startswith("gui.")} == {"gui.launch"}


@pytest.mark.child
def test_a_plain_convert_loads_no_qt_no_surgery_and_no_ml_dtypes_for_f32(tmp_path):
    path, out = tmp_path / "tiny.safetensors", tmp_path / "tiny.bpk"
    save_file({"w": np.arange(3, dtype=np.float32)}, path)
    report = probe("convert", str(path), str(out), "--metadata", "who=me")
    assert report["code"] == 0
    from engine import open_store
    with open_store(out) as written:
        assert written.read("w").tolist() == [0.0, 1.0, 2.0] and written.metadata["who"] == "me"
    assert "engine.exporting" in report["modules"]  # the probe saw the conversion's imports
    assert not {"ml_dtypes", "PySide6", "engine.surgery", "engine.formats.pytorch"} & set(report["modules"])
    assert {m for m in report["modules"] if m.startswith("gui.")} == {"gui.launch"}


def test_a_bfloat16_tensor_still_reads_once_ml_dtypes_is_needed(tmp_path):
    import ml_dtypes

    from engine import open_store
    path = tmp_path / "bf16.safetensors"
    save_file({"w": np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)}, path)
    with open_store(path) as store:
        values = store.read("w")
    assert values.dtype == np.dtype(ml_dtypes.bfloat16) and values.astype(np.float32).tolist() == [1.5, -2.0]


@pytest.mark.child
def test_engine_export_stays_the_function_after_its_module_is_imported():
    code = "import engine.exporting, engine; from engine import export; print(callable(export), export.__module__)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["True", "engine.exporting"], result.stderr
