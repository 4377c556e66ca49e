"""``inspect --json``'s optional fields, each present exactly when the file has it (README "Command line",
"PyTorch files", "Burn records", quantized Burnpack), in-process. Without
them a script reading the JSON would miss what a file cannot do or hides.

Promises -> tests:
- the classes ``torch.load(weights_only=True)`` would refuse, and the names made from keys burn-store refuses, are
  listed -> ``test_a_checkpoints_refused_classes_and_guessed_keys_are_listed``
- a record's scalars (a scheduler's learning rate) are shown -> ``test_a_records_scalars_are_shown``
- a quantized tensor says its scheme, in the table and the JSON -> ``test_a_quantized_tensor_says_its_scheme``
- a file without them has none of these fields -> ``test_a_plain_file_has_no_optional_fields``
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file

from engine.cli import main
from tests.helpers.formats_burn_record_writers import Settings, Unit, write_record
from tests.helpers.formats_quantized_files import f32, gen2, i8, write

OPTIONAL = {"note", "scalars", "values", "refused_by_torch_weights_only", "guessed_keys", "burn"}


class Custom:
    """A class no allow-list knows: saved by torch's pickler, read back as an inert placeholder."""

    def __init__(self) -> None:
        self.a = 1


def inspect_json(path: Path, capsys) -> dict:
    assert main(["inspect", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_checkpoints_refused_classes_and_guessed_keys_are_listed(tmp_path, capsys):
    torch.save({"model": {"w": torch.ones(2)}, "obj": Custom(), 1.5: torch.zeros(1)}, tmp_path / "c.pt")
    document = inspect_json(tmp_path / "c.pt", capsys)
    name = f"{Custom.__module__}.Custom"
    assert document["refused_by_torch_weights_only"] == [name]
    assert document["guessed_keys"] == ["1.5"]
    assert [t["name"] for t in document["tensors"]] == ["model.w", "1.5"]
    assert document["values"] == {"obj": {"__class__": name, "a": 1}}
    assert "scalars" not in document and "burn" not in document
    assert main(["inspect", str(tmp_path / "c.pt")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"  class torch.load(weights_only=True) refuses: {name}"


def test_a_records_scalars_are_shown(tmp_path, capsys):
    record = write_record(tmp_path, "scheduler-2", {"lr": 0.01, "step": 2, "warmup": Unit}, Settings(recorder="NamedMpk"))
    document = inspect_json(record, capsys)
    assert document["scalars"] == {"lr": {"Float": 0.01}, "step": {"Int": 2}}
    assert document["tensors"] == [] and document["totals"] == {"tensors": 0, "parameters": 0, "buffer_values": 0, "bytes": 0}
    assert main(["inspect", str(record)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == ["  scalar lr = {'Float': 0.01}", "  scalar step = {'Int': 2}"]


def test_a_quantized_tensor_says_its_scheme(tmp_path, capsys):
    path = write(tmp_path, {"w": ({"QFloat": gen2(blocks=(8,))}, [16], i8(*range(-8, 8)) + f32(0.5, 0.25)),
                            "b": ("F32", [2], f32(1, 2))})
    document = inspect_json(path, capsys)
    quantized, plain = document["tensors"]
    scheme = quantized["quantization"]
    assert isinstance(scheme, str) and "8" in scheme and "quantization" not in plain
    assert main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("w "))
    assert lines[row + 1] == f"    {scheme}" and lines[row + 2].startswith("b ")


def test_a_plain_file_has_no_optional_fields(tmp_path, capsys):
    save_file({"w": np.ones(2, np.float32)}, str(tmp_path / "a.safetensors"))
    document = inspect_json(tmp_path / "a.safetensors", capsys)
    assert not OPTIONAL & set(document)
    assert document["tensors"] == [{"name": "w", "dtype": "F32", "shape": [2], "values": 2, "bytes": 8}]
