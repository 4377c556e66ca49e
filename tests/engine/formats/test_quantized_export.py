"""Export of quantized tensors: kept as stored unless ``dequantize`` is asked, and refused where the target
cannot hold them, with the reason. Files are Burnpacks laid out as Burn writes them (tests/helpers/formats_quantized_files.py).

Promise -> test (README, "Export" and "Quantized tensors"):
- quantized tensors are written as stored (bytes and scheme) -> test_quantized_tensors_are_kept_as_stored_by_default
- --dequantize writes their F32 values, other tensors untouched -> test_dequantize_writes_values_and_leaves_dense_tensors
- SafeTensors cannot hold them: refused unless dequantized -> test_safetensors_refuses_quantized_tensors_unless_dequantized
- a scheme the chosen Burn cannot read is refused before writing -> test_a_scheme_an_older_burn_cannot_express_is_refused_before_writing,
  test_blocks_whose_layout_depends_on_the_shape_are_refused_for_that_shape
- --burn-version writes the spelling that Burn reads -> test_a_block_scheme_is_written_in_the_chosen_burns_spelling
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import ExportError, export, open_store
from engine.burn_versions import BurnVersion
from tests.helpers.formats_quantized_files import (
    block,
    f32,
    gen1,
    gen2,
    i8,
    read_meta,
    write,
)

SCHEME = {"QFloat": gen2(blocks=(8,))}


def source(tmp_path):
    return write(tmp_path, {"w": (SCHEME, [16], i8(*range(-8, 8)) + f32(0.5, 0.25)), "b": ("F32", [2], f32(1.5, -2.0))})


def test_quantized_tensors_are_kept_as_stored_by_default(tmp_path):
    src = source(tmp_path)
    with open_store(src) as store:
        out = export(store.entries, tmp_path / "out.bpk")
        stored = store.read_quantized("w")
    assert read_meta(out)["tensors"]["w"]["dtype"] == read_meta(src)["tensors"]["w"]["dtype"]
    with open_store(out) as copy:
        again = copy.read_quantized("w")
        assert again.values.tobytes() == stored.values.tobytes() and again.scales.tobytes() == stored.scales.tobytes()
        assert copy.read("b").tolist() == [1.5, -2.0]


def test_dequantize_writes_values_and_leaves_dense_tensors(tmp_path):
    with open_store(source(tmp_path)) as store:
        out = export(store.entries, tmp_path / "out.bpk", dequantize=True)
        values = store.read("w")
    assert read_meta(out)["tensors"]["w"]["dtype"] == "F32"
    with open_store(out) as copy:
        assert copy.read("w").tobytes() == values.tobytes() and values.tolist()[:2] == [-4.0, -3.5]
        assert copy.read("b").tolist() == [1.5, -2.0]


def test_safetensors_refuses_quantized_tensors_unless_dequantized(tmp_path):
    with open_store(source(tmp_path)) as store:
        with pytest.raises(ExportError) as info:
            export(store.entries, tmp_path / "out.safetensors")
        assert str(info.value) == ("out.safetensors: tensor 'w': SafeTensors has no quantized dtype for Q8S, blocks of 8, "
                                   "F32 block scales, packed 4 per u32 (burn-store refuses it too: "
                                   "safetensors/store.rs:1091 at main); dequantizing (convert --dequantize) writes "
                                   "its F32 values")
        out = export(store.entries, tmp_path / "plain.safetensors", dequantize=True)
    with open_store(out) as copy:
        assert copy.read("w").dtype == np.float32
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.safetensors", "q.bpk"]


def test_a_scheme_an_older_burn_cannot_express_is_refused_before_writing(tmp_path):
    two_level = gen2(store="Native", tensor="F32", blocks=(4,), block_dtype="F16")
    src = write(tmp_path, {"w": ({"QFloat": two_level}, [8], i8(*[1] * 8) + bytes(4) + f32(1.0))})
    with open_store(src) as store, pytest.raises(ExportError) as info:
        export(store.entries, tmp_path / "old.bpk", burn_version=BurnVersion.V0_21)
    assert str(info.value).startswith("old.bpk: tensor 'w': cannot be written for Burn 0.21: Burn 0.21 has no "
                                      "two-level scales")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.bpk"]


def test_a_block_scheme_is_written_in_the_chosen_burns_spelling(tmp_path):
    raw = i8(*[1] * 8) + f32(2.0, 3.0)
    src = write(tmp_path, {"w": ({"QFloat": gen2(blocks=(4,))}, [8], raw)})
    with open_store(src) as store:
        out = export(store.entries, tmp_path / "old.bpk", burn_version=BurnVersion.V0_21)
    assert read_meta(out)["tensors"]["w"]["dtype"] == {"QFloat": gen1(level={"Block": block(4)})}
    with open_store(out) as copy:
        assert b"".join(copy.iter_bytes("w")) == raw and copy.read("w").tolist() == [2.0] * 4 + [3.0] * 4


def test_blocks_whose_layout_depends_on_the_shape_are_refused_for_that_shape(tmp_path):
    src = write(tmp_path, {"w": ({"QFloat": gen1(level={"Block": block(16)})}, [2, 8], i8(*[1] * 16) + f32(1))})
    with open_store(src) as store, pytest.raises(ExportError) as info:
        export(store.entries, tmp_path / "out.bpk", burn_version=BurnVersion.V0_22)
    assert str(info.value).startswith("out.bpk: tensor 'w': cannot be written for Burn 0.22: ")
    assert "runs of the flat values up to 0.22.0-pre.2" in str(info.value)
