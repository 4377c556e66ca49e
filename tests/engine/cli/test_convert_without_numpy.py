"""A plain conversion copies bytes and never imports numpy (numpy was most of its start-up, and
a conversion is measured against cp). Each of the four conversions the benchmarks time runs in a child
process that reports ``sys.modules`` at exit; its output must equal, byte for byte, the same conversion run
in this process, where numpy is loaded, and hold the source's values. Listing a file (``inspect``) touches
no values either."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import msgpack
import numpy as np
import pytest
import torch
from safetensors.numpy import load_file, save_file

from engine import ArrayStore, export, open_store
from engine.cli import main

REPO = Path(__file__).resolve().parents[3]
PROBE = """
import contextlib, io, sys
from gui.launch import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
modules = sorted(sys.modules)
import json  # after the count: json is one of the modules a conversion must not need
print(json.dumps({"code": code, "out": out.getvalue(), "modules": modules}))
"""
NOT_NEEDED = {"numpy", "ml_dtypes", "PySide6", "engine.surgery", "engine.values.chunked", "engine.stats"}
# What a plain conversion's start-up no longer pays for (against cp, start-up is what it adds):
# `dataclasses` (a frozen dataclass compiled its methods at import), `pickletools` and `tarfile` (a zip
# `.pt` needs neither), json (only writing SafeTensors needs it), cbor2 (only reading a Burnpack header needs
# it) and the readers of the other formats.
START_UP_CUT = {"dataclasses", "pickletools", "tarfile"}
READERS = {"pt": "engine.formats.pytorch", "mpk": "engine.formats.burn_record"}


def not_needed_for(source: str, target: str) -> set[str]:
    """The modules converting ``source`` to ``target`` as it is must leave unimported."""
    others = {module for fmt, module in READERS.items() if fmt != source}
    return (NOT_NEEDED | START_UP_CUT | others | ({"json"} if target != "safetensors" else set())
            | ({"cbor2"} if source != "bpk" else set()))
VALUES = {"embed.weight": np.arange(12, dtype="<f4").reshape(3, 4) / 7, "embed.bias": np.array([-1.5, 2.25], "<f2"),
          "steps": np.arange(-3, 3, dtype="<i8").reshape(2, 3), "mask": np.array([True, False, True]),
          "half": np.array([0.5, -3.0, 1e4], dtype=ml_dtypes.bfloat16)}
F32_ONLY = {"layers.0.weight": np.linspace(-1, 1, 20, dtype="<f4").reshape(4, 5), "layers.0.bias": np.ones(5, "<f4")}


def write_pt(path: Path) -> dict[str, np.ndarray]:
    tensors = {k: torch.from_numpy(v.view(np.int16)).view(torch.bfloat16) if v.dtype == ml_dtypes.bfloat16
               else torch.from_numpy(v) for k, v in VALUES.items()}
    torch.save(tensors, path)
    return VALUES


def write_safetensors(path: Path) -> dict[str, np.ndarray]:
    save_file(VALUES, path)
    return VALUES


def write_bpk(path: Path) -> dict[str, np.ndarray]:
    export(ArrayStore(VALUES).entries, path)
    return VALUES


def write_mpk(path: Path) -> dict[str, np.ndarray]:
    """A NamedMpk record as Burn 0.17 wrote one: each parameter's bytes a msgpack bin, its id Burn's base32hex."""
    def param(index: int, array: np.ndarray) -> dict:
        pid = base64.b32hexencode(index.to_bytes(8, "little")).decode().lower().rstrip("=")
        return {"id": pid, "param": {"bytes": array.tobytes(), "shape": list(array.shape), "dtype": "F32"}}

    meta = {"float": "f32", "int": "i64", "format": "burn_core::record::file::NamedMpkFileRecorder<burn_core::record::"
            "settings::FullPrecisionSettings>", "version": "0.17.0", "settings": "FullPrecisionSettings"}
    item = {"layers": {"0": {"weight": param(1, F32_ONLY["layers.0.weight"]), "bias": param(2, F32_ONLY["layers.0.bias"])}}}
    path.write_bytes(msgpack.packb({"metadata": meta, "item": item}, use_bin_type=True))
    return F32_ONLY


def converted_values(path: Path) -> dict[str, np.ndarray]:
    if path.suffix == ".safetensors":  # the official reader, for the format it defines
        return load_file(path)
    with open_store(path) as store:
        return {name: np.array(store.read(name)) for name in store.names}


@pytest.mark.child
@pytest.mark.parametrize("source, target", [("pt", "bpk"), ("safetensors", "bpk"), ("bpk", "safetensors"),
                                            ("mpk", "bpk")])
def test_a_plain_conversion_imports_only_what_it_needs_and_writes_the_same_bytes(tmp_path, source, target):
    writer = {"pt": write_pt, "safetensors": write_safetensors, "bpk": write_bpk, "mpk": write_mpk}[source]
    src = tmp_path / f"model.{source}"
    values = writer(src)
    child_out, here_out = tmp_path / f"child.{target}", tmp_path / f"here.{target}"
    result = subprocess.run([sys.executable, "-c", PROBE, "convert", str(src), str(child_out)], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == 0
    assert "engine.exporting" in report["modules"]  # the probe saw the conversion's own imports
    assert READERS.get(source, "engine.formats.burnpack") in report["modules"]
    assert not_needed_for(source, target).isdisjoint(report["modules"]), \
        sorted(not_needed_for(source, target) & set(report["modules"]))
    assert "numpy" in sys.modules and main(["convert", str(src), str(here_out)]) == 0
    assert child_out.read_bytes() == here_out.read_bytes()
    written = converted_values(child_out)
    assert sorted(written) == sorted(values)  # in the source file's order, which SafeTensors sorts
    for name, expected in values.items():
        assert written[name].dtype == expected.dtype and written[name].shape == expected.shape
        assert written[name].tobytes() == expected.tobytes()


@pytest.mark.child
def test_touching_values_still_loads_numpy_where_needed(tmp_path):
    """The other half of the promise: a cast reads values, so numpy is imported for it, and it still works."""
    src, out = tmp_path / "model.safetensors", tmp_path / "model.bpk"
    save_file(F32_ONLY, src)
    result = subprocess.run([sys.executable, "-c", PROBE, "convert", str(src), str(out), "--cast", "f16"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == 0 and "numpy" in report["modules"]
    with open_store(out) as store:
        assert store.read("layers.0.weight").tolist() == F32_ONLY["layers.0.weight"].astype("<f2").tolist()


@pytest.mark.child
def test_inspect_of_a_file_lists_it_without_numpy(tmp_path):
    src = tmp_path / "model.safetensors"
    save_file(F32_ONLY, src)
    result = subprocess.run([sys.executable, "-c", PROBE, "inspect", str(src)], cwd=REPO, capture_output=True, text=True,
                            timeout=120)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == 0 and "layers.0.weight" in report["out"]
    assert NOT_NEEDED.isdisjoint(report["modules"])
