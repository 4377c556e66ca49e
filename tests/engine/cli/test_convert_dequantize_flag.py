"""``convert --dequantize`` (README "Burn versions", quantized Burnpack): SafeTensors has no quantized dtype, so a
quantized tensor is refused there unless the flag writes its F32 values; the plain copy and the recipe path agree.
Without it a quantized model converted to SafeTensors would lose its values or be refused with no way out.

Promise -> test: ``--dequantize`` writes a quantized tensor's F32 values, without it the conversion is refused in one
line naming the flag -> ``test_dequantize_writes_the_values_and_is_needed_for_safetensors``
"""

from __future__ import annotations


import numpy as np
import pytest
from safetensors.numpy import load_file

from engine import open_store
from engine.cli import main

from tests.helpers.formats_quantized_files import f32, gen2, i8, write


@pytest.mark.parametrize("surgery", [[], ["--allow-partial"]])
def test_dequantize_writes_the_values_and_is_needed_for_safetensors(tmp_path, capsys, surgery):
    path = write(tmp_path, {"w": ({"QFloat": gen2(blocks=(8,))}, [16], i8(*range(-8, 8)) + f32(0.5, 0.25))})
    out = tmp_path / "out.safetensors"
    assert main(["convert", str(path), str(out), *surgery]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dequantize" in err and not out.exists()
    assert main(["convert", str(path), str(out), "--dequantize", *surgery]) == 0
    written = load_file(str(out))["w"]
    with open_store(path) as store:
        expected = store.read("w")
    assert written.dtype == np.float32 and written.tobytes() == expected.tobytes()
    assert written[:2].tolist() == [-4.0, -3.5] and written[8:10].tolist() == [0.0, 0.25]
