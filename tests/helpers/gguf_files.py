"""GGUF files for the tests: real ones written by the ``gguf`` library llama.cpp publishes, and raw bytes for the
hostile ones no library would write."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFWriter
from gguf.quants import quantize

K_QUANT_BYTES = {T.Q4_K: 144, T.Q6_K: 210}  # bytes a 256-value block takes (gguf.constants.GGML_QUANT_SIZES)


def k_quant_blocks(kind: T, rows: int, row_values: int, seed: int = 0) -> np.ndarray:
    """Random K-quant blocks with small, finite f16 scales (``gguf`` quantizes no K-quant): any bytes are valid
    blocks, and llama.cpp's dequantization of them is what the reader must match."""
    rng = np.random.default_rng(seed)
    size = K_QUANT_BYTES[kind]
    blocks = rng.integers(0, 256, (rows * row_values // 256, size), dtype=np.uint8)
    scales = np.frombuffer(np.array([0.01, 0.002], np.float16).tobytes(), np.uint8)
    if kind == T.Q4_K:
        blocks[:, :4] = scales  # d, dmin lead the block
    else:
        blocks[:, -2:] = scales[:2]  # Q6_K's d ends it
    return blocks.reshape(rows, -1)


def weights(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def write_model(path: Path, *, tokens: int = 1000, output_rows: int = 0) -> dict[str, np.ndarray]:
    """A small llama-like GGUF holding every kind of tensor the reader must tell apart (and, with
    ``output_rows``, an F32 ``output.weight`` of that many rows of 1,024 values); returns the float weights the
    quantized ones were made from."""
    writer = GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_uint32("llama.attention.head_count", 4)
    writer.add_float32("llama.rope.freq_base", 10000.0)
    writer.add_string("general.name", "tiny llama")
    writer.add_bool("tokenizer.ggml.add_bos_token", True)
    writer.add_token_list([f"tok{i}" for i in range(tokens)])
    writer.add_array("tokenizer.ggml.scores", [float(i) / 2 for i in range(tokens)])
    made = {"blk.0.attn_q.weight": weights((64, 128), 1), "blk.0.attn_k.weight": weights((64, 128), 2)}
    writer.add_tensor("blk.0.attn_q.weight", quantize(made["blk.0.attn_q.weight"], T.Q8_0), raw_dtype=T.Q8_0)
    writer.add_tensor("blk.0.attn_k.weight", quantize(made["blk.0.attn_k.weight"], T.Q4_0), raw_dtype=T.Q4_0)
    writer.add_tensor("blk.0.ffn_up.weight", k_quant_blocks(T.Q4_K, 8, 512), raw_dtype=T.Q4_K)
    writer.add_tensor("blk.0.ffn_down.weight", k_quant_blocks(T.Q6_K, 4, 256, 3), raw_dtype=T.Q6_K)
    writer.add_tensor("blk.0.attn_norm.weight", weights((128,), 4))
    writer.add_tensor("token_embd.weight", weights((32, 128), 5).astype(np.float16))
    writer.add_tensor("rope_freqs", np.arange(6, dtype=np.int32))
    if output_rows:
        writer.add_tensor("output.weight", weights((output_rows, 1024), 6))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return made


# --- raw bytes, for files no library writes -----------------------------------------------------

def text(value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return struct.pack("<Q", len(raw)) + raw


def header(n_tensors: int, n_keys: int, version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_keys)


def key_u32(name: str, value: int) -> bytes:
    return text(name) + struct.pack("<II", 4, value)


def tensor_info(name: str, ne: tuple[int, ...], code: int, offset: int) -> bytes:
    return text(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne) + \
        struct.pack("<IQ", code, offset)


def raw_file(keys: bytes = b"", n_keys: int = 0, infos: tuple[bytes, ...] = (), data: bytes = b"",
             n_tensors: int | None = None, version: int = 3) -> bytes:
    """A GGUF file from its parts, the data section aligned to 32 bytes."""
    head = header(len(infos) if n_tensors is None else n_tensors, n_keys, version) + keys + b"".join(infos)
    return head + bytes(-len(head) % 32) + data
