"""Inputs the fuzzer found crashing or hanging a reader, reduced by hand: each is now a clear FormatError."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import cbor2
import numpy as np
import pytest

from engine import FormatError, open_store
from tests.helpers.hard_fuzzing import Worker, check_input, pytorch_helpers

FOUND = Path(__file__).parent / "regressions"


def burnpack(tensors: object, data: bytes = b"", *, value_sharing: bool = False) -> bytes:
    meta = cbor2.dumps({"tensors": tensors}, value_sharing=value_sharing)
    head = b"NRUB" + struct.pack("<HI", 1, len(meta)) + meta
    return head + bytes(-len(head) % 256) + data


def safetensors(header: str, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header.encode() + data


def shared_dag(levels: int) -> list:
    """A few hundred bytes of CBOR (value sharing) that is 2**levels nodes when walked as a tree."""
    value: list = [1]
    for _ in range(levels):
        value = [value, value]
    return value


F32 = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
CASES = {
    "bpk-value-sharing-dag-hung-the-depth-check": (
        burnpack({"a": F32, "junk": {"dtype": shared_dag(64), "shape": [], "data_offsets": [0, 0]}}, bytes(4),
                 value_sharing=True), "value sharing"),
    "bpk-bignum-offset-broke-the-error-message": (
        burnpack({"a": {**F32, "data_offsets": [10**5000, 0]}}), "wider than 64 bits"),
    "bpk-rational-tag-in-a-shape": (
        burnpack({"a": {**F32, "shape": [cbor2.CBORTag(30, [1, 3])]}}), "Fraction"),
    "bpk-array-map-key-made-the-cbor-decoder-hang": (
        burnpack({"q": {"dtype": {"QFloat": {(1, 2): 3}}, "shape": [1], "data_offsets": [0, 1]}}, bytes(1)),
        "map key must be a text string"),
    "bpk-qfloat-scheme-with-bytes-keys-raised-type-error": (
        burnpack({"q": {"dtype": {"QFloat": {b"k": 2, "a": 3}}, "shape": [1], "data_offsets": [0, 1]}}, bytes(1)),
        "scheme is not a plain map"),
    "bpk-65-dimensions-failed-in-numpy": (
        burnpack({"a": {**F32, "shape": [1] * 65}}, bytes(4)), "no array can hold"),
    "st-5001-digit-offset-broke-json": (
        '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,' + "1" * 5001 + "]}}", "number too long"),
    "st-65-dimensions-failed-in-numpy": (
        json.dumps({"a": {**F32, "shape": [1] * 65}}), "no array can hold"),
    "st-empty-tensor-with-a-2-to-the-62-dim-failed-in-numpy": (
        json.dumps({"a": {"dtype": "F32", "shape": [0, 2**62], "data_offsets": [0, 0]}}), "no array can hold"),
    "st-empty-tensor-with-a-10-to-the-30-dim-overflowed": (
        json.dumps({"a": {"dtype": "F32", "shape": [0, 10**30], "data_offsets": [0, 0]}}), "no array can hold"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_fuzzer_finding_is_refused_with_a_clear_format_error(name: str, tmp_path: Path) -> None:
    content, message = CASES[name]
    path = tmp_path / name
    if isinstance(content, str):
        path.write_bytes(safetensors(content, bytes(4) if "65-dim" in name else b""))
    else:
        path.write_bytes(content)
    with pytest.raises(FormatError, match=message):
        with open_store(path) as store:
            for entry in store.entries:
                store.read(entry.name)
    assert check_input(path) == "refused"


@pytest.mark.parametrize("index, message", [
    ({"weight_map": {}, "metadata": 5}, "'metadata' is not a map"),
    ({"weight_map": {"a": "shard\u0000.safetensors"}}, "lies outside"),
], ids=["metadata-not-a-map-raised-attribute-error", "nul-in-shard-name-raised-value-error"])
def test_hostile_sharded_index_is_refused_with_a_clear_format_error(index: dict, message: str, tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors.index.json"
    path.write_text(json.dumps(index))
    with pytest.raises(FormatError, match=message):
        open_store(path)


@pytest.mark.parametrize("path", sorted(p for p in FOUND.glob("*") if p.suffix != ".txt"), ids=lambda p: p.name)
def test_saved_fuzzer_input_keeps_the_property(path: Path) -> None:
    """Inputs saved as the fuzzer found them, run in a worker so a regression into a hang fails, not stalls."""
    with Worker() as worker:
        result = worker.check(path)
    assert not result.failed, f"{result.kind} {result.signature}\n{result.detail}"


@pytest.mark.parametrize("offset, size, stride, message", [
    (-10**5000, (2,), (1,), "an integer of 2077 bytes, over the limit"),
    (0, (2,), (2**64,), "65-bit number"),
    (0, (0, 2**62), (1, 1), "larger than any array"),
], ids=["bignum-offset-broke-the-error-message", "stride-wider-than-int64", "empty-view-with-a-2-to-the-62-dim"])
def test_forged_pytorch_view_numbers_are_refused_with_a_clear_format_error(offset: int, size: tuple, stride: tuple,
                                                                           message: str, tmp_path: Path) -> None:
    helpers = pytorch_helpers()
    path = helpers.zip_checkpoint(tmp_path / "forged.pt", {"t": helpers.Tensor(helpers.Storage("0", 4), offset, size,
                                                                                stride)}, {"0": bytes(16)})
    with pytest.raises(FormatError, match=message):
        open_store(path)


def test_a_forged_stride_on_a_size_one_dim_reads_because_it_never_steps(tmp_path: Path) -> None:
    """Hypothesis found a 2**62 stride on a size-1 dim overflowing numpy's byte strides (a ValueError)."""
    helpers = pytorch_helpers()
    values = np.arange(1, 5, dtype="<f4")
    path = helpers.zip_checkpoint(tmp_path / "forged.pt", {"t": helpers.Tensor(helpers.Storage("0", 4), 2, (1, 2),
                                                                                (2**62, 1))}, {"0": values.tobytes()})
    with open_store(path) as store:
        assert store.read("t").tolist() == [[3.0, 4.0]]
