"""What a Burnpack is written for: the Bool spelling per Burn version, SafeTensors bools as burn-store writes
them, and which Burn releases a file loads in, read from its own bytes."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from engine import open_store
from engine.burn_versions import BurnVersion
from engine.cli import main
from engine.surgery.printers import as_cli
from engine.surgery.recipe import Recipe, SourceSpec
from tests.helpers.formats_burn_record_writers import Data, Settings, write_record
from tests.helpers.formats_quantized_files import block, gen1, gen2, read_meta, write


# --- the Bool spelling per version, and what a file says about itself ---------------------------

@pytest.mark.parametrize("version, spelling", [("0.20", "Bool"), ("0.21", {"Bool": "Native"}),
                                               ("0.22", {"Bool": "Native"})])
def test_bools_are_spelled_as_the_target_version_reads_them(tmp_path, version, spelling):
    path = write(tmp_path, {"m": ({"Bool": "Native"}, [3], bytes([1, 0, 1]))})
    out = tmp_path / "out.bpk"
    assert main(["convert", str(path), str(out), "--burn-version", version]) == 0
    assert read_meta(out)["tensors"]["m"]["dtype"] == spelling
    with open_store(out) as store:
        assert [v.value for v in store.burn.loads_in] == (["0.20"] if version == "0.20" else ["0.21", "0.22"])
        assert store.read("m").tolist() == [True, False, True]


def test_a_u32_bool_cannot_go_to_burn_0_20(tmp_path, capsys):
    path = write(tmp_path, {"m": ({"Bool": "U32"}, [2], struct.pack("<II", 1, 0))})
    assert main(["convert", str(path), str(tmp_path / "o.bpk"), "--burn-version", "0.20"]) == 1
    assert "Burn 0.20 has only one-byte bools" in capsys.readouterr().err


def test_a_recipes_burn_version_decides_the_spelling(tmp_path):
    path = write(tmp_path, {"m": ({"Bool": "Native"}, [1], bytes([1]))})
    recipe = tmp_path / "r.json"
    recipe.write_text('{"version": 1, "burn_version": "0.20"}')
    assert main(["convert", str(path), str(tmp_path / "o.bpk"), "--recipe", str(recipe)]) == 0
    assert read_meta(tmp_path / "o.bpk")["tensors"]["m"]["dtype"] == "Bool"
    assert main(["convert", str(path), str(tmp_path / "p.bpk"), "--recipe", str(recipe), "--burn-version", "0.21"]) == 0
    assert read_meta(tmp_path / "p.bpk")["tensors"]["m"]["dtype"] == {"Bool": "Native"}


@pytest.mark.parametrize("tensors, loads", [
    ({"m": ("Bool", [1], bytes(1))}, ["0.20"]),
    ({"m": ({"Bool": "U8"}, [1], bytes(1))}, ["0.21", "0.22"]),
    ({"w": ({"QFloat": gen1()}, [4], bytes(8))}, ["0.20", "0.21", "0.22"]),
    ({"w": ({"QFloat": gen1(param="F16")}, [4], bytes(6))}, []),
    ({"w": ({"QFloat": gen1(level={"Block": block(2)})}, [4], bytes(12))}, ["0.20", "0.21"]),
    ({"w": ({"QFloat": gen2()}, [4], bytes(8))}, ["0.22"]),
    ({"m": ("Bool", [1], bytes(1)), "w": ({"QFloat": gen2()}, [4], bytes(8))}, []),
])
def test_which_burn_releases_load_a_file_is_read_from_its_bytes(tmp_path, tensors, loads):
    with open_store(write(tmp_path, tensors)) as store:
        assert [v.value for v in store.burn.loads_in] == loads
        assert {v.value for v, _ in store.burn.reasons} == {"0.20", "0.21", "0.22"} - set(loads)


def test_inspect_names_the_scheme_and_the_releases(tmp_path, capsys):
    path = write(tmp_path, {"w": ({"QFloat": gen2("Q4S", tensor="F32", blocks=(8,), block_dtype="F16")}, [8], bytes(4 + 2 + 4))})
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "loads in: Burn 0.22" in out
    assert "not Burn 0.21: its quantization scheme is #5262's" in out
    assert "Q4S, blocks of 8, F16 block scales, F32 global scale, packed 8 per u32" in out
    assert main(["inspect", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["burn"]["loads_in"] == ["0.22"]
    assert doc["tensors"][0]["quantization"].startswith("Q4S, blocks of 8")


def test_safetensors_bools_are_written_as_burn_stores_safetensors_store_writes_them(tmp_path):
    """burn-store safetensors/store.rs:1088-1090 (main): Native -> BOOL, U8 -> U8, U32 -> U32, bytes as stored."""
    path = write(tmp_path, {"n": ({"Bool": "Native"}, [2], bytes([1, 0])), "b": ({"Bool": "U8"}, [2], bytes([0, 1])),
                            "w": ({"Bool": "U32"}, [2], struct.pack("<II", 1, 0))})
    out = tmp_path / "out.safetensors"
    assert main(["convert", str(path), str(out)]) == 0
    from safetensors import safe_open
    with safe_open(out, "np") as f:
        got = {name: f.get_tensor(name) for name in f.keys()}
    assert got["n"].dtype == np.bool_ and got["n"].tolist() == [True, False]
    assert got["b"].dtype == np.uint8 and got["b"].tolist() == [0, 1]
    assert got["w"].dtype == np.uint32 and got["w"].tolist() == [1, 0]


def test_migrate_writes_for_the_burn_version_asked(tmp_path, capsys):
    record = write_record(tmp_path, "model", {"mask": Data(np.array([True, False, True]))}, Settings())
    assert main(["migrate", str(tmp_path), "--burn-version", "0.20"]) == 0
    out = record.with_name("model.bpk")
    assert read_meta(out)["tensors"]["mask"]["dtype"] == "Bool"
    with open_store(out) as store:
        assert store.read("mask").tolist() == [True, False, True]
    with pytest.raises(SystemExit) as usage:
        main(["migrate", str(tmp_path), "--burn-version", "0.9"])
    assert usage.value.code == 2 and "invalid choice: '0.9'" in capsys.readouterr().err


def test_the_copied_command_line_keeps_a_recipes_burn_version(tmp_path):
    path = write(tmp_path, {"m": ({"Bool": "Native"}, [1], bytes([1]))})
    recipe = Recipe(sources=(SourceSpec(str(path)),), burn_version=BurnVersion.V0_20)
    line = as_cli(recipe, str(tmp_path / "o.bpk"))
    assert line.endswith("--burn-version 0.20")
    assert "--burn-version" not in as_cli(recipe.with_changes(burn_version=BurnVersion.V0_22))
    assert main(line.split()[1:]) == 0
    assert read_meta(tmp_path / "o.bpk")["tensors"]["m"]["dtype"] == "Bool"
