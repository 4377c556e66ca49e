"""Burnpack: read what Burn writes, write what Burn reads, refuse what Burn refuses."""

from __future__ import annotations

import struct

import cbor2
import ml_dtypes
import numpy as np
import pytest

from engine import ArrayStore, FormatError, export, open_store
from engine.formats import burnpack
from tests.helpers.formats_burnpack_files import burn_file, write

F32_DESC = {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}


def test_reads_a_burn_layout_file_in_data_section_order(tmp_path):
    weight = np.arange(576, dtype="<f4").reshape(64, 1, 3, 3)
    bias = np.linspace(-1, 1, 64, dtype="<f4")
    tensors = {  # keys sorted (BTreeMap), data in module order
        "conv1.conv.bias": {"dtype": "F32", "shape": [64], "data_offsets": [2304, 2560]},
        "conv1.conv.weight": {"dtype": "F32", "shape": [64, 1, 3, 3], "data_offsets": [0, 2304],
                              "param_id": 10777079075451239370},
    }
    path = write(tmp_path, burn_file(tensors, weight.tobytes() + bias.tobytes()))
    with open_store(path) as store:
        assert store.format == "burnpack" and store.version == "v1"
        assert store.metadata == {}
        assert [e.name for e in store.entries] == ["conv1.conv.weight", "conv1.conv.bias"]
        first = store.entries[0]
        assert first.param_id == 10777079075451239370 and first.shape == (64, 1, 3, 3) and first.nbytes == 2304
        assert first.offset % 256 == 0
        np.testing.assert_array_equal(store.read("conv1.conv.weight"), weight)
        np.testing.assert_array_equal(store.read("conv1.conv.bias"), bias)


def test_writer_header_matches_burns_byte_for_byte(tmp_path):
    """Our CBOR and layout equal an independent encoder's for Burn's schema."""
    arrays = {"b.weight": np.ones((3, 5), "<f4"), "a.bias": np.zeros(7, "<f4")}
    store = ArrayStore(arrays, param_ids={"b.weight": 2**63 + 5})
    header, offsets = burnpack.layout(store.entries, {"producer": "x"}, {"step": {"Int": -3}})
    expected_meta = cbor2.dumps({
        "tensors": {"a.bias": {"dtype": "F32", "shape": [7], "data_offsets": [256, 284]},
                    "b.weight": {"dtype": "F32", "shape": [3, 5], "data_offsets": [0, 60], "param_id": 2**63 + 5}},
        "metadata": {"producer": "x"}, "scalars": {"step": {"Int": -3}}})
    expected = b"NRUB" + struct.pack("<HI", 1, len(expected_meta)) + expected_meta
    expected += bytes(-len(expected) % 256)
    assert header == expected
    assert offsets == [len(header), len(header) + 256]


ALL_DTYPES = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
    "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8,
    "u64": np.uint64, "u32": np.uint32, "u16": np.uint16, "u8": np.uint8, "bool": np.bool_,
}


def sample_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = {f"t.{k}": (rng.standard_normal((3, 4)) * 50).astype(v) for k, v in ALL_DTYPES.items()}
    arrays["scalar"] = np.array(3.5, np.float32)
    arrays["empty"] = np.zeros((0, 7), np.float32)
    arrays["f8.e4m3"] = rng.standard_normal(9).astype(ml_dtypes.float8_e4m3fn)
    arrays["f8.e5m2"] = rng.standard_normal(9).astype(ml_dtypes.float8_e5m2)
    return arrays


def test_round_trip_burnpack_safetensors_burnpack_is_bit_exact(tmp_path):
    arrays = {k: v for k, v in sample_arrays().items() if not k.startswith("f8")}  # Burn has no f8
    export(ArrayStore(arrays).entries, tmp_path / "a.bpk")
    with open_store(tmp_path / "a.bpk") as a:
        export(a.entries, tmp_path / "b.safetensors")
    with open_store(tmp_path / "b.safetensors") as b:
        export(b.entries, tmp_path / "c.bpk")
    with open_store(tmp_path / "c.bpk") as c, open_store(tmp_path / "a.bpk") as a:
        assert [(e.name, e.dtype, e.shape) for e in c.entries] == [(e.name, e.dtype, e.shape) for e in a.entries]
        for name, array in arrays.items():
            got = c.read(name)
            assert got.dtype == array.dtype and got.shape == array.shape
            assert got.tobytes() == array.tobytes()
    assert (tmp_path / "a.bpk").read_bytes() == (tmp_path / "c.bpk").read_bytes()


def test_burnpack_copy_keeps_param_ids_metadata_scalars_and_module_order(tmp_path):
    ids = {"z.weight": 11, "a.weight": 2**64 - 1}
    arrays = {"z.weight": np.ones(3, "<f4"), "a.weight": np.ones(2, "<f4")}
    scalars = {"epoch": {"Int": 7}, "lr": {"Float": 0.5}, "flag": {"Bool": True}, "n": {"UInt": 2**64 - 1}}
    export(ArrayStore(arrays, param_ids=ids).entries, tmp_path / "a.bpk", metadata={"k": "v"}, scalars=scalars)
    with open_store(tmp_path / "a.bpk") as a:
        export(a.entries, tmp_path / "b.bpk", metadata=a.metadata, scalars=a.scalars)
    with open_store(tmp_path / "b.bpk") as b:
        assert b.names == ["z.weight", "a.weight"]
        assert {e.name: e.param_id for e in b.entries} == ids
        assert b.metadata["k"] == "v" and b.metadata["format"] == "burnpack" and b.metadata["producer"] == "store-studio"
        assert b.scalars == scalars
    assert (tmp_path / "a.bpk").read_bytes() == (tmp_path / "b.bpk").read_bytes()


def test_every_tensor_is_256_aligned_with_zero_padding(tmp_path):
    arrays = {f"t{i}": np.full(i + 1, i + 1, np.uint8) for i in range(5)}
    export(ArrayStore(arrays).entries, tmp_path / "a.bpk")
    raw = (tmp_path / "a.bpk").read_bytes()
    with open_store(tmp_path / "a.bpk") as store:
        for e in store.entries:
            assert e.offset % 256 == 0
            end = e.offset + e.nbytes
            assert raw[end:-(-end // 256) * 256].strip(b"\0") == b""


def test_bool_storages_read_as_numpy_bool(tmp_path):
    tensors = {"native": {"dtype": {"Bool": "Native"}, "shape": [3], "data_offsets": [0, 3]},
               "bare": {"dtype": "Bool", "shape": [2], "data_offsets": [256, 258]},
               "wide": {"dtype": {"Bool": "U32"}, "shape": [2], "data_offsets": [512, 520]}}
    data = bytes([1, 0, 1]) + bytes(253) + bytes([0, 1]) + bytes(254) + struct.pack("<II", 7, 0)
    with open_store(write(tmp_path, burn_file(tensors, data))) as store:
        for name, expected in {"native": [1, 0, 1], "bare": [0, 1], "wide": [1, 0]}.items():
            got = store.read(name)
            assert got.dtype == np.bool_ and got.tolist() == [bool(x) for x in expected]


# --- refusing malformed files ------------------------------------------------------------------

def good_file() -> bytes:
    return burn_file({"w": F32_DESC}, np.arange(4, dtype="<f4").tobytes())


def test_truncation_anywhere_in_the_header_is_a_format_error(tmp_path):
    content = good_file()
    meta_end = 10 + struct.unpack("<I", content[6:10])[0]
    for cut in range(meta_end):
        path = write(tmp_path, content[:cut], f"cut{cut}.bpk")
        with pytest.raises(FormatError) as info:
            open_store(path).close()
        assert f"cut{cut}.bpk" in str(info.value)


@pytest.mark.parametrize("content, problem", [
    (burn_file({"w": F32_DESC}, bytes(16), magic=b"NRUX"), "magic|not a Burnpack|match none"),
    (burn_file({"w": F32_DESC}, bytes(16), version=2), "version 2 is newer"),
    (b"NRUB" + struct.pack("<HI", 1, 1 << 20) + bytes(100), "truncated"),
    (b"NRUB" + struct.pack("<HI", 1, (100 << 20) + 1), "over Burn's limit"),
    (burn_file({"w": {**F32_DESC, "data_offsets": [0, 16]}}, bytes(8)), "past the end"),
    (burn_file({"w": {**F32_DESC, "data_offsets": [1 << 40, (1 << 40) + 16]}}, bytes(16)), "past the end"),
    (burn_file({"w": F32_DESC, "v": {**F32_DESC, "data_offsets": [8, 24]}}, bytes(32)), "overlap"),
    (burn_file({"w": {**F32_DESC, "data_offsets": [0, 12]}}, bytes(16)), "needs 16"),
    (burn_file({"w": {**F32_DESC, "shape": [2**62]}}, bytes(16)), "10 GiB"),
    (burn_file({"w": {**F32_DESC, "shape": [-1]}}, bytes(16)), "invalid shape"),
    (burn_file({"w": {**F32_DESC, "dtype": "F128"}}, bytes(16)), "unknown Burnpack dtype"),
    (burn_file({"w": F32_DESC}, bytes(16), raw_meta=b"\xff\xff\xff"), "not valid"),
    (burn_file({}, b"", raw_meta=b"\x81" * 200 + b"\x00"), "nested deeper"),
    (burn_file({"w": F32_DESC}, bytes(16), extra={"metadata": {"k": 1}}), "text to text"),
    (burn_file({"w": F32_DESC}, bytes(16), extra={"scalars": {"s": {"Complex": 1}}}), "scalar"),
    (burn_file({"w": F32_DESC}, bytes(16), raw_meta=cbor2.dumps([1, 2])), "map"),
])
def test_malformed_files_are_refused_with_a_reason(tmp_path, content, problem):
    path = write(tmp_path, content)
    with pytest.raises(FormatError, match=problem) as info:
        open_store(path).close()
    assert isinstance(info.value, ValueError) and str(info.value).startswith("m.bpk:")


def test_more_tensors_than_burn_allows_is_refused_before_reading_them(tmp_path):
    tensors = {f"t{i}": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(100_001)}
    with pytest.raises(FormatError, match="100000"):
        open_store(write(tmp_path, burn_file(tensors, b""))).close()
