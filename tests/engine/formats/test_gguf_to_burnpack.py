"""GGUF into Burn (engine/exporting/written_forms.py, engine/ggml.py): Q8_0 and Q4_0 stay quantized as Burn's Q8S
and Q4S blocks of 32, whose values, as Burn dequantizes them, are gguf's bit for bit at every Burn version; every
other GGML type is dequantized to F16 (or ``--dequantize-to``) with one line per type, or refused under
``--strict``. Without these a user would get a Burnpack whose weights differ from the model llama.cpp runs, or
lose its quantization without a word."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader
from gguf.quants import dequantize

from engine import open_store
from tests.helpers.engine_cli_run import run
from tests.helpers.gguf_files import raw_file, tensor_info, write_model


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    write_model(path)
    return path


def gguf_values(path: Path) -> dict[str, np.ndarray]:
    return {t.name: dequantize(t.data, t.tensor_type).reshape(tuple(int(n) for n in reversed(t.shape)))
            for t in GGUFReader(str(path)).tensors if not t.tensor_type.name.startswith("I")}


def burn_dequantized(bpk: Path, name: str) -> tuple[np.ndarray, dict]:
    """A QFloat tensor's values as Burn computes them, decoded here from the file's bytes and Burn's rules (not
    the app's reader): i8 values, or 4-bit ones 8 to a little-endian u32 lowest first and sign-extended
    (burn-std quantization.rs:514-542), then one scale per 32 values, ``f32(scale) * f32(q)``, a zero scale as 0.1
    (burn-ndarray tensor.rs:716-737, ops/quantization.rs:78-85)."""
    raw = bpk.read_bytes()
    size = struct.unpack_from("<I", raw, 6)[0]
    import cbor2
    meta = cbor2.loads(raw[10:10 + size])
    desc = meta["tensors"][name]
    start = -(-(10 + size) // 256) * 256 + desc["data_offsets"][0]
    data = raw[start:start + desc["data_offsets"][1] - desc["data_offsets"][0]]
    scheme = desc["dtype"]["QFloat"]
    numel = int(np.prod(desc["shape"]))
    if scheme["value"] == "Q8S":
        q, rest = np.frombuffer(data[:numel], np.int8).astype(np.float32), data[numel:]
    else:
        words = np.frombuffer(data[:numel // 2], "<u4")
        nibbles = (words[:, None] >> np.arange(0, 32, 4, dtype=np.uint32)) & 0xF
        q, rest = np.where(nibbles >= 8, nibbles.astype(np.int16) - 16, nibbles).reshape(-1).astype(np.float32), \
            data[numel // 2:]
    half = (scheme.get("block") or {}).get("dtype") == "F16" or scheme.get("param") == "F16"
    scales = np.frombuffer(rest, "<f2" if half else "<f4").astype(np.float32)
    assert scales.size == numel // 32
    scales = np.where(scales == 0, np.float32(0.1), scales)
    return (np.repeat(scales, 32) * q).reshape(desc["shape"]), scheme


@pytest.mark.parametrize("version,scale_dtype", [("0.22", "F16"), ("0.21", "F32"), ("0.20", "F32")])
def test_q8_0_and_q4_0_keep_their_blocks_and_gguf_values_at_every_burn_version(model, tmp_path, version,
                                                                                 scale_dtype):
    out = tmp_path / "out.bpk"
    done = run("convert", str(model), str(out), "--burn-version", version)
    assert done.returncode == 0, done.stderr
    want = gguf_values(model)
    for name, value in (("blk.0.attn_q.weight", "Q8S"), ("blk.0.attn_k.weight", "Q4S")):
        got, scheme = burn_dequantized(out, name)
        assert scheme["value"] == value
        stored = json.dumps(scheme)
        assert f'"{scale_dtype}"' in stored and "32" in stored
        assert got.tobytes() == want[name].tobytes(), name
    with open_store(out) as store:  # the app's own reader agrees, and names the scheme
        assert store.read("blk.0.attn_k.weight").tobytes() == want["blk.0.attn_k.weight"].tobytes()
        assert store.entry("blk.0.attn_q.weight").dtype.quant_scheme.describe() == \
            f"Q8S, blocks of 32, {scale_dtype} block scales, packed 4 per u32"
    assert done.stderr.splitlines()[:3] == [
        f"1 Q8_0 tensor kept quantized, as Burn's Q8S, blocks of 32, {scale_dtype} block scales, packed 4 per u32",
        f"1 Q4_0 tensor kept quantized, as Burn's Q4S, blocks of 32, {scale_dtype} block scales, packed 8 per u32",
        "1 Q4_K tensor dequantized to F16 (Burn has no Q4_K)"]


def test_other_types_are_dequantized_to_f16_or_the_type_asked_for(model, tmp_path):
    want = gguf_values(model)
    out = tmp_path / "out.bpk"
    assert run("convert", str(model), str(out)).returncode == 0
    with open_store(out) as store:
        k_quant = store.read("blk.0.ffn_up.weight")
        assert str(store.entry("blk.0.ffn_up.weight").dtype) == "F16"
        assert k_quant.tobytes() == want["blk.0.ffn_up.weight"].astype(np.float16).tobytes()
        assert store.read("rope_freqs").tolist() == list(range(6))  # integers as they are
    exact = tmp_path / "exact.safetensors"
    done = run("convert", str(model), str(exact), "--dequantize-to", "f32")
    assert done.returncode == 0, done.stderr
    assert "1 Q8_0 tensor dequantized to F32 (SafeTensors has no quantized types)" in done.stderr.splitlines()
    with open_store(exact) as store:
        for name, values in want.items():
            got = store.read(name)
            assert got.astype(np.float32).tobytes() == values.tobytes(), name


def test_strict_refuses_a_dequantization_and_writes_nothing(model, tmp_path):
    out = tmp_path / "out.bpk"
    done = run("convert", str(model), str(out), "--strict")
    assert done.returncode == 3
    assert done.stderr.splitlines()[-1] == ("store-studio: --strict: 2 GGUF tensors would be dequantized (listed "
                                            "above); nothing written")
    assert not out.exists()


def test_a_zero_scale_block_stays_zero_in_burn(tmp_path):
    """Burn reads a zero scale as 0.1: a block whose f16 scale is zero but whose integers are not (no llama.cpp
    quantizer writes one) is written with zero integers, so its values stay gguf's zeros."""
    block = np.zeros(34, np.uint8)
    block[2:] = np.arange(1, 33, dtype=np.int8).view(np.uint8)  # d = 0, q = 1..32
    path = tmp_path / "zero.gguf"
    path.write_bytes(raw_file(infos=(tensor_info("w", (32,), 8, 0),), data=block.tobytes()))
    out = tmp_path / "zero.bpk"
    assert run("convert", str(path), str(out)).returncode == 0
    got, _ = burn_dequantized(out, "w")
    assert np.array_equal(got, np.zeros(32, np.float32))
