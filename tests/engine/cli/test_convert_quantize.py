"""``convert --quantize q8s|q4s|q2s [--block N] [--modules KINDS]`` writes Burn's own quantization of float weights
into a Burnpack (engine/quantize.py): by default the weights of two or more dimensions outside norms and embeddings,
with a line for what it quantized and one per reason it left a chosen tensor float; SafeTensors, ``--dequantize``
and unknown kinds are usage errors. Without these a user could not tell which tensors Burn will run quantized."""

from __future__ import annotations

import numpy as np
import pytest

from engine import open_store
from engine.quantize import quantize_rows
from tests.helpers.engine_cli_run import run
from tests.helpers.samples import SAMPLES

SAMPLE = SAMPLES / "sample_cnn.pt"


def burn_values(source: np.ndarray, value: str, block: int, scale_dtype: str) -> np.ndarray:
    q, scales = quantize_rows(source.reshape(-1, source.shape[-1]), value, block, scale_dtype)
    scales = np.where(scales == 0, np.float32(0.1), scales)
    return (np.repeat(scales, block, axis=1) * q.astype(np.float32)).reshape(source.shape)


def test_by_default_the_weights_are_quantized_and_the_rest_left_float(tmp_path):
    out = tmp_path / "q.bpk"
    done = run("convert", str(SAMPLE), str(out), "--quantize", "q8s")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[:3] == [
        "2 tensors quantized as Burn's Q8S, blocks of 32, F16 block scales, packed 4 per u32",
        "left as they are: conv1.weight, conv2.weight (the last dimension (3) is not a multiple of the block (32))",
        "quantized: fc1.weight, fc2.weight; --modules KIND,... chooses by kind outright"]
    with open_store(SAMPLE) as source, open_store(out) as written:
        kinds = {e.name: e.dtype.kind for e in written.entries}
        assert [n for n, k in kinds.items() if k == "quantized"] == ["fc1.weight", "fc2.weight"]
        for name in ("fc1.weight", "fc2.weight"):
            assert written.read(name).tobytes() == burn_values(source.read(name), "Q8S", 32, "F16").tobytes()
        assert written.read("fc1.bias").tobytes() == source.read("fc1.bias").tobytes()


def test_modules_and_block_choose_what_and_how_and_old_burn_gets_f32_scales(tmp_path):
    out = tmp_path / "q.bpk"
    done = run("convert", str(SAMPLE), str(out), "--quantize", "Q4S", "--block", "16", "--modules", "linear",
               "--burn-version", "0.21")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == "3 tensors quantized as Burn's Q4S, blocks of 16, F32 block scales, packed 8 per u32"
    assert "left as it is: fc2.bias (the last dimension (10) is not a multiple of the block (16))" in done.stderr
    with open_store(SAMPLE) as source, open_store(out) as written:
        for name in ("fc1.weight", "fc1.bias", "fc2.weight"):
            assert written.entry(name).dtype.kind == "quantized", name
            assert written.read(name).tobytes() == burn_values(source.read(name), "Q4S", 16, "F32").tobytes()


@pytest.mark.parametrize("extra, words", [
    (["--quantize", "q8s", "--dequantize"], "--quantize and --dequantize ask opposite things"),
    (["--quantize", "q8s", "--modules", "Dense"], "--modules: unknown module kind 'Dense'"),
    (["--quantize", "q8s", "--block", "256"], "--block 256: Burn stores a block of 1 to 255 values"),
    (["--block", "64"], "--block and --modules say how to --quantize"),
])
def test_contradictory_or_unknown_choices_are_usage_errors(tmp_path, extra, words):
    out = tmp_path / "q.bpk"
    done = run("convert", str(SAMPLE), str(out), *extra)
    assert done.returncode == 2 and words in done.stderr and not out.exists()


def test_safetensors_cannot_hold_a_quantization(tmp_path):
    out = tmp_path / "q.safetensors"
    done = run("convert", str(SAMPLE), str(out), "--quantize", "q8s")
    assert done.returncode == 2
    assert done.stderr.strip() == ("store-studio convert: --quantize writes Burn's quantization, which only a Burnpack "
                                   "(.bpk) holds")
