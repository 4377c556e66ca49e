"""SafeTensors: the official library reads what we write, and we refuse what it refuses."""

from __future__ import annotations

import json
import struct

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch

from engine import ArrayStore, FormatError, export, open_store
from tests.helpers.formats_safetensors_files import write

NUMPY_DTYPES = [np.float64, np.float32, np.float16, ml_dtypes.bfloat16, np.int64, np.int32, np.int16, np.int8,
                np.uint64, np.uint32, np.uint16, np.uint8, np.bool_]


def arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    result = {f"layer.{np.dtype(t).name}": (rng.standard_normal((5, 3)) * 40).astype(t) for t in NUMPY_DTYPES}
    result["scalar"] = np.array(-2, np.int64)
    result["empty"] = np.zeros((4, 0), np.float32)
    result["f8.e4m3"] = rng.standard_normal(6).astype(ml_dtypes.float8_e4m3fn)
    result["f8.e5m2"] = rng.standard_normal(6).astype(ml_dtypes.float8_e5m2)
    return result


def test_official_numpy_reader_gets_exactly_what_we_wrote(tmp_path):
    source = {k: v for k, v in arrays().items() if not k.startswith("f8")}  # the numpy API has no f8
    export(ArrayStore(source).entries, tmp_path / "ours.safetensors", metadata={"k": "v"})
    loaded = safetensors.numpy.load_file(tmp_path / "ours.safetensors")
    assert set(loaded) == set(source)
    for name, array in source.items():
        assert loaded[name].shape == array.shape
        assert loaded[name].tobytes() == array.tobytes()
    with safetensors.safe_open(tmp_path / "ours.safetensors", "np") as f:
        assert f.metadata() == {"k": "v", "producer": "store-studio"}


def test_official_torch_reader_gets_exactly_what_we_wrote(tmp_path):
    source = arrays()
    export(ArrayStore(source).entries, tmp_path / "ours.safetensors")
    loaded = safetensors.torch.load_file(tmp_path / "ours.safetensors")
    assert loaded["f8.e4m3"].dtype == torch.float8_e4m3fn and loaded["layer.bfloat16"].dtype == torch.bfloat16
    for name, array in source.items():
        tensor = loaded[name]
        raw = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        assert tuple(tensor.shape) == array.shape and raw == array.tobytes()


def test_we_read_the_official_writers_files(tmp_path):
    tensors = {"a": torch.randn(3, 4), "b": torch.arange(10, dtype=torch.int16), "c": torch.randn(2).bfloat16(),
               "d": torch.tensor(True), "e": torch.randn(4).to(torch.float8_e5m2)}
    safetensors.torch.save_file(tensors, str(tmp_path / "t.safetensors"), metadata={"m": "1"})
    with open_store(tmp_path / "t.safetensors") as store:
        assert store.format == "safetensors" and store.metadata == {"m": "1"}
        for name, tensor in tensors.items():
            got = store.read(name)
            assert got.shape == tuple(tensor.shape)
            assert got.tobytes() == tensor.reshape(-1).view(torch.uint8).numpy().tobytes()
        assert store.read("c").dtype == ml_dtypes.bfloat16 and store.read("d").dtype == np.bool_


def test_header_is_padded_with_spaces_to_eight_bytes(tmp_path):
    export(ArrayStore({"abc": np.zeros(1, np.float32)}).entries, tmp_path / "x.safetensors")
    raw = (tmp_path / "x.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = raw[8:8 + n].decode()
    text = header.rstrip(" ")
    assert n % 8 == 0 and n - len(text) == -len(text) % 8  # only spaces, and no more than needed
    assert json.loads(text)["abc"] == {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    assert raw[8 + n:] == bytes(4)


def test_newer_dtypes_are_listed_not_decoded(tmp_path):
    header = {"packed": {"dtype": "F4", "shape": [4], "data_offsets": [0, 2]},
              "c": {"dtype": "C64", "shape": [1], "data_offsets": [2, 10]}}
    path = write(tmp_path, header, bytes(10))
    with open_store(path) as store:
        assert [str(e.dtype) for e in store.entries] == ["F4", "C64"]
        with pytest.raises(FormatError, match="cannot be decoded"):
            store.read("packed")
        assert store.read("c").dtype == np.complex64


def test_sharded_checkpoint_opens_as_one_store(tmp_path):
    safetensors.numpy.save_file({"a": np.ones(2, np.float32)}, tmp_path / "model-00001-of-00002.safetensors")
    safetensors.numpy.save_file({"b": np.zeros(3, np.int8), "c": np.ones(1, np.float64)},
                                tmp_path / "model-00002-of-00002.safetensors")
    index = {"metadata": {"total_size": 19}, "weight_map": {"a": "model-00001-of-00002.safetensors",
             "b": "model-00002-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    with open_store(tmp_path / "model.safetensors.index.json") as store:
        assert store.format == "safetensors" and sorted(store.names) == ["a", "b", "c"]
        assert store.metadata["total_size"] == "19" and len(store.files) == 2
        assert store.read("c").tolist() == [1.0]
        export(store.entries, tmp_path / "merged.bpk")
    with open_store(tmp_path / "merged.bpk") as merged:
        assert merged.read("b").tolist() == [0, 0, 0]


def test_shard_outside_the_index_folder_is_refused(tmp_path):
    (tmp_path / "m.safetensors.index.json").write_text(json.dumps({"weight_map": {"a": "../evil.safetensors"}}))
    with pytest.raises(FormatError, match="outside"):
        open_store(tmp_path / "m.safetensors.index.json")


# --- refusing malformed files ------------------------------------------------------------------

T = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("header, data, problem", [
    (b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "\xff": 1}', bytes(8), "UTF-8"),
    (b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "a": {"dtype": "F32", "shape": [2], '
     b'"data_offsets": [0, 8]}}', bytes(8), "twice"),
    # an escape sends the header to the strict parser, which counts descriptors without __metadata__
    (b'{"__metadata__": {"note": "a\\nb"}, "a": {"dtype": "F32", "dtype": "F32", "shape": [2], '
     b'"data_offsets": [0, 8]}}', bytes(8), "names 'dtype' twice"),
    (b'[1, 2]', b"", "match none"),
    (b'{"a": ', b"", "not valid JSON"),
    ({"a": T, "b": {**T, "data_offsets": [12, 20]}}, bytes(20), "gap"),
    ({"a": T, "b": {**T, "data_offsets": [4, 12]}}, bytes(12), "overlap"),
    ({"a": T}, bytes(12), "no tensor uses"),
    ({"a": {**T, "data_offsets": [0, 8]}}, bytes(4), "past the end"),
    ({"a": {**T, "shape": [3]}}, bytes(8), "needs 12"),
    ({"a": {**T, "shape": [2**62]}}, bytes(8), "needs"),
    ({"a": {**T, "dtype": "F99"}}, bytes(8), "unknown dtype"),
    ({"a": {"dtype": "F32", "shape": [2]}}, bytes(8), "needs dtype, shape and data_offsets"),
    ({"a": T, "__metadata__": {"k": 1}}, bytes(8), "text to text"),
])
def test_malformed_files_are_refused_like_the_official_reader(tmp_path, header, data, problem):
    path = write(tmp_path, header, data)
    with pytest.raises(FormatError, match=problem) as info:
        open_store(path).close()
    assert str(info.value).startswith("m.safetensors:")
    if problem not in ("UTF-8", "twice", "names 'dtype' twice", "match none"):  # the official reader is laxer on these
        with pytest.raises(Exception):
            safetensors.numpy.load_file(path)


def test_truncation_anywhere_in_the_header_is_a_format_error(tmp_path):
    good = write(tmp_path, {"a": T}, bytes(8), "good.safetensors").read_bytes()
    for cut in range(1, len(good) - 8):
        path = tmp_path / f"cut{cut}.safetensors"
        path.write_bytes(good[:cut])
        with pytest.raises(FormatError):
            open_store(path).close()


def test_absurd_header_length_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "m.safetensors"
    path.write_bytes(struct.pack("<Q", 2**62) + b"{}")
    with pytest.raises(FormatError, match="over the limit"):
        open_store(path)
