"""GGUF files for the tests: real ones written by the ``gguf`` library llama.cpp publishes, and raw bytes for the
hostile ones no library would write."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import GGUFWriter
from gguf.quants import dequantize, quantize

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


# --- a llama model as llama.cpp's converter writes it -------------------------------------------------

HEADS, KV_HEADS, HIDDEN, BLOCKS = 4, 2, 64, 2
HF_SHAPES = {"model.embed_tokens.weight": (96, HIDDEN), "model.norm.weight": (HIDDEN,), "lm_head.weight": (96, HIDDEN),
             **{f"model.layers.{b}.{part}.weight": shape for b in range(BLOCKS) for part, shape in (
                 ("input_layernorm", (HIDDEN,)), ("post_attention_layernorm", (HIDDEN,)),
                 ("self_attn.q_proj", (HIDDEN, HIDDEN)), ("self_attn.k_proj", (HIDDEN // 2, HIDDEN)),
                 ("self_attn.v_proj", (HIDDEN // 2, HIDDEN)), ("self_attn.o_proj", (HIDDEN, HIDDEN)),
                 ("mlp.gate_proj", (128, HIDDEN)), ("mlp.up_proj", (128, HIDDEN)), ("mlp.down_proj", (HIDDEN, 128)))}}


def llama_permute(weights: np.ndarray, n_head: int, n_head_kv: int | None = None) -> np.ndarray:
    """llama.cpp's ``LlamaModel.permute`` (convert_hf_to_gguf.py), as its converter applies it to q and k."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def hf_weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in HF_SHAPES.items()}


def write_llama_gguf(path: Path, quantized: bool) -> dict[str, np.ndarray]:
    """A llama model as llama.cpp's converter writes it: gguf's own name map, q and k permuted, 2-D weights Q8_0
    when ``quantized``, a rope_freqs tensor HF does not have; returns the HF weights (Q8_0 round-tripped)."""
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, BLOCKS)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_block_count(BLOCKS)
    expected = {}
    for hf_name, weights in hf_weights().items():
        stored = weights
        if hf_name.endswith("q_proj.weight"):
            stored = llama_permute(weights, HEADS, HEADS)
        elif hf_name.endswith("k_proj.weight"):
            stored = llama_permute(weights, HEADS, KV_HEADS)
        gguf_name = names.get_name(hf_name, try_suffixes=(".weight",))
        if quantized and weights.ndim == 2:
            writer.add_tensor(gguf_name, quantize(stored, T.Q8_0), raw_dtype=T.Q8_0)
            expected[hf_name] = dequantize(quantize(weights, T.Q8_0), T.Q8_0)  # blocks are row-local
        else:
            writer.add_tensor(gguf_name, stored)
            expected[hf_name] = weights
    writer.add_tensor("rope_freqs.weight", np.ones(HIDDEN // HEADS // 2, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return expected
