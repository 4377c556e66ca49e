"""Quantized Burnpack tensors: Burn's own test vectors (bytes to values) and files built to the cited layout.

Vectors come from Burn's source at main (2c06be351): burn-std ``src/tensor/quantization.rs`` tests
(:550-602 packing, :659-684 two-level, :766-788 UE4M3), burn-backend-tests
``tests/tensor/float/quantization/data.rs`` (:6-50) and ``ops/quantize.rs`` (:168-208), and burn-ndarray
``src/ops/quantization.rs`` (:201-215).
"""

from __future__ import annotations

import re
import struct

import ml_dtypes
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from engine import FormatError, export, open_store
from engine import quantized as q
from engine.burn_versions import BurnVersion
from engine.cli import main
from engine.stats import stats_for
from engine.surgery.diff import diff
from tests.helpers.formats_quantized_files import (
    block,
    f32,
    gen1,
    gen2,
    i8,
    read_meta,
    write,
)

DATA_RS_SCALE = np.float32(0.014_173_228)


# --- Burn's packing vectors ---------------------------------------------------------------------

def test_packed_words_unpack_as_burns_tests_say():
    q8 = q.parse_scheme(gen1("Q8S"))
    assert q.unpack_values(memoryview(struct.pack("<I", 2147287680)), q8, 4).tolist() == [-128, 2, -3, 127]
    assert q.unpack_values(memoryview(struct.pack("<I", 55)), q8, 1).tolist() == [55]
    words = [0, 286331136, 286331153, 572657937, 572662306, 857874978, 858993459, 858993459, 1145324612,
             1145324612, 1431655748, 1431655765, 1717982549, 1717986918, 2003199590, 2004318071]
    q4 = q.parse_scheme(gen1("Q4S"))
    got = q.unpack_values(memoryview(np.array(words, "<u4").tobytes()), q4, 128).tolist()
    assert got == [v for v, n in enumerate([10, 18, 18, 18, 18, 18, 18, 10]) for _ in range(n)]


def test_sub_byte_values_are_sign_extended():
    q2 = q.parse_scheme(gen2("Q2S"))
    # fields lowest bits first: 0b01, 0b11, 0b10, 0b00 -> 1, -1, -2, 0
    assert q.unpack_values(memoryview(struct.pack("<I", 0b00_10_11_01)), q2, 4).tolist() == [1, -1, -2, 0]


# --- data.rs vectors, as files of both generations ---------------------------------------------

@pytest.mark.parametrize("scheme", [gen1(), gen2()], ids=["gen1", "gen2"])
def test_per_tensor_int8_dequantizes_as_burn(tmp_path, scheme):
    raw = i8(-127, -71, 0, 35) + f32(DATA_RS_SCALE)
    with open_store(write(tmp_path, {"w": ({"QFloat": scheme}, [4], raw)})) as store:
        got = store.read("w")
        assert got.dtype == np.float32
        assert got.tolist() == (DATA_RS_SCALE * np.array([-127, -71, 0, 35], np.float32)).tolist()
        assert got.tolist() == pytest.approx([-1.8, -1.0, 0.0, 0.5], abs=1e-2)  # ops/quantize.rs:31
        assert store.read_quantized("w").values.tolist() == [-127, -71, 0, 35]


@pytest.mark.parametrize("scheme", [gen1(level={"Block": block(8)}), gen2(blocks=(8,))], ids=["gen1", "gen2"])
def test_per_block_int8_dequantizes_each_block_by_its_scale(tmp_path, scheme):
    ints = [-127, -71, 0, 35, -127, -71, 0, 35, -32, -63, -95, -127, -32, -63, -95, -127]
    scales = np.array([0.014_173_228, 0.000_314_96], np.float32)
    with open_store(write(tmp_path, {"w": ({"QFloat": scheme}, [16], i8(*ints) + scales.tobytes())})) as store:
        expected = np.repeat(scales, 8) * np.array(ints, np.float32)
        assert store.read("w").tolist() == expected.tolist()
        assert store.read_quantized("w").scales.tolist() == scales.tolist()


def test_ndarray_reference_dequantization_vector(tmp_path):
    raw = i8(-127, -77, -26, 25, 76, 127) + f32(0.1)
    with open_store(write(tmp_path, {"w": ({"QFloat": gen2(store="Native")}, [2, 3], raw)})) as store:
        assert store.read("w") == pytest.approx(np.array([[-12.7, -7.7, -2.6], [2.5, 7.6, 12.7]], np.float32))


def test_two_level_layout_is_dense_values_block_scales_global(tmp_path):
    """quantization.rs:661-684: 8 values, two UE4M3 block scales, an F32 global scale: 8 + 2 + 4 bytes."""
    ints = [0, 25, 51, 76, 102, 127, -128, -1]
    e4m3 = np.array([0.5, 0.125], ml_dtypes.float8_e4m3fn).tobytes()
    scheme = gen2(store="Native", tensor="F32", blocks=(4,), block_dtype="UE4M3")
    raw = i8(*ints) + e4m3 + f32(3.0)
    assert len(raw) == 14
    with open_store(write(tmp_path, {"w": ({"QFloat": scheme}, [8], raw)})) as store:
        parts = store.read_quantized("w")
        assert parts.scales.tolist() == [0.5, 0.125] and parts.global_scale == 3.0
        assert store.read("w").tolist() == [v * s for v, s in zip(ints, [1.5] * 4 + [0.375] * 4)]
        assert q.scheme_description(store.entry("w").dtype) == \
            "Q8S, blocks of 4, UE4M3 block scales, F32 global scale"


def test_f16_block_scales_packed_q4_describe_and_decode(tmp_path):
    scheme = gen2("Q4S", tensor="F32", blocks=(32,), block_dtype="F16")
    ints = np.tile(np.arange(-7, 8), 3)[:32].astype(np.int8)
    words = np.zeros(4, np.uint32)
    for i, v in enumerate(ints):
        words[i // 8] |= np.uint32((int(v) & 0xF) << (4 * (i % 8)))
    raw = words.astype("<u4").tobytes() + np.array([0.25], "<f2").tobytes() + f32(4.0)
    with open_store(write(tmp_path, {"w": ({"QFloat": scheme}, [32], raw)})) as store:
        assert q.scheme_description(store.entry("w").dtype) == \
            "Q4S, blocks of 32, F16 block scales, F32 global scale, packed 8 per u32"
        assert store.read("w").tolist() == (ints.astype(np.float32) * 1.0).tolist()


def test_generation_2_blocks_are_rectangles(tmp_path):
    """ops/quantize.rs:168-208: blocks of [2, 4] over [4, 8] hold four magnitudes, one per rectangle."""
    magnitudes = np.array([[1, 10], [100, 1000]], np.float32)
    expected = np.kron(magnitudes, np.ones((2, 4), np.float32))
    raw = i8(*[127] * 32) + (magnitudes.reshape(-1) / np.float32(127)).astype("<f4").tobytes()
    scheme = gen2(blocks=(2, 4))
    with open_store(write(tmp_path, {"w": ({"QFloat": scheme}, [4, 8], raw)})) as store:
        assert store.read("w") == pytest.approx(expected, rel=1e-6)


def test_generation_1_blocks_are_runs_of_the_flat_values(tmp_path):
    """Up to 0.22.0-pre.2 a block of 4 over [2, 4] is each row: burn-ndarray ops/quantization.rs:45-60."""
    raw = i8(*[1] * 8) + f32(2.0, 3.0)
    with open_store(write(tmp_path, {"w": ({"QFloat": gen1(level={"Block": block(4)})}, [2, 4], raw)})) as store:
        assert store.read("w").tolist() == [[2.0] * 4, [3.0] * 4]


def test_a_zero_scale_reads_as_burns_reference_does(tmp_path):
    with open_store(write(tmp_path, {"w": ({"QFloat": gen2(store="Native")}, [2], i8(3, -2) + f32(0.0))})) as store:
        assert store.read("w").tolist() == pytest.approx([0.3, -0.2])


# --- refusals -----------------------------------------------------------------------------------

@pytest.mark.parametrize("scheme, raw, message", [
    (gen2(blocks=(2,)), i8(1, 2, 3, 4) + f32(1.0, 2.0)[:-1], r"tensor 'w' has 11 bytes, but Q8S, blocks of 2.*needs 12"),
    (gen1(), i8(1, 2, 3, 4, 5, 6, 7, 8, 9), r"tensor 'w' has 9 bytes, but Q8S, F32 tensor scale.*needs 8 \(4 of values \+ 1 F32 scale\)"),
    (gen2("Q3S"), i8(1, 2, 3, 4) + f32(1.0), r"tensor 'w': QFloat value type 'Q3S' is not one Burn knows"),
    ({"value": "Q8S", "mode": "Symmetric", "level": "Tensor"}, i8(1, 2, 3, 4), r"Burn writes either"),
    (gen2(store={"PackedU32": "x"}), i8(1, 2, 3, 4) + f32(1.0), r"store .* is not Native, PackedU32"),
    ({**gen2(), "value": {"Q8S": 1}}, i8(1, 2, 3, 4) + f32(1.0), r"value type \{'Q8S': 1\} is not one Burn knows"),
    ({**gen1(), "level": {"Block": {"storage": [32], "len": 1}}}, i8(1, 2, 3, 4) + f32(1.0), r"block size .* is not"),
], ids=["truncated-scales", "scheme-does-not-fit", "unknown-value-type", "neither-generation", "bad-store",
        "unhashable-value", "short-block-storage"])
def test_bad_quantized_tensors_are_one_line_and_nothing_is_written(tmp_path, capsys, scheme, raw, message):
    path = write(tmp_path, {"w": ({"QFloat": scheme}, [4], raw)})
    with pytest.raises(FormatError, match=message) as caught:
        open_store(path)
    assert "\n" not in str(caught.value) and str(caught.value).startswith("q.bpk: ")
    assert main(["convert", str(path), str(tmp_path / "out.bpk")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "q.bpk" in err
    assert not (tmp_path / "out.bpk").exists()


def test_schemes_burn_cannot_decode_are_listed_copied_and_refused_when_read(tmp_path):
    scheme = gen2("E4M3", store="Native")
    path = write(tmp_path, {"w": ({"QFloat": scheme}, [4], i8(1, 2, 3, 4) + f32(1.0))})
    with open_store(path) as store:
        with pytest.raises(FormatError, match="tensor 'w': E4M3 values are not decoded by Burn"):
            store.read("w")
        with pytest.raises(Exception, match="E4M3 values are not decoded by Burn"):
            stats_for(store.entry("w"))
        export(store.entries, tmp_path / "copy.bpk")
    with open_store(tmp_path / "copy.bpk") as copy:
        assert b"".join(copy.iter_bytes("w")) == i8(1, 2, 3, 4) + f32(1.0)


def test_packed_rows_that_split_words_are_refused_not_guessed(tmp_path):
    path = write(tmp_path, {"w": ({"QFloat": gen2("Q4S")}, [3, 3], bytes(12) + f32(1.0))})
    with pytest.raises(FormatError, match="rows of 3 Q4S values do not fill whole u32 words"):
        open_store(path)


# --- values through statistics and diff ---------------------------------------------------------

def test_statistics_and_diff_use_the_dequantized_values(tmp_path):
    ints = [-127, -71, 0, 35]
    a = write(tmp_path, {"w": ({"QFloat": gen2()}, [4], i8(*ints) + f32(DATA_RS_SCALE))}, "a.bpk")
    b = write(tmp_path, {"w": ({"QFloat": gen2()}, [4], i8(*ints[:3], 36) + f32(DATA_RS_SCALE))}, "b.bpk")
    with open_store(a) as sa, open_store(b) as sb:
        stats = stats_for(sa.entry("w"))
        assert stats.kind == "float" and stats.min == pytest.approx(-1.8) and stats.max == pytest.approx(0.496063)
        (row,) = diff(sa, sb, values=True).tensors
        assert row.status == "different" and row.max_abs == pytest.approx(float(DATA_RS_SCALE), rel=1e-5)


# --- writing for a Burn version -----------------------------------------------------------------

def test_bpk_to_bpk_keeps_the_bytes_and_writes_the_target_generation(tmp_path):
    raw = i8(*[1] * 8) + f32(2.0, 3.0)
    path = write(tmp_path, {"w": ({"QFloat": gen1(level={"Block": block(4)})}, [8], raw)})
    with open_store(path) as store:
        export(store.entries, tmp_path / "new.bpk")
        export(store.entries, tmp_path / "old.bpk", burn_version=BurnVersion.V0_21)
    assert read_meta(tmp_path / "new.bpk")["tensors"]["w"]["dtype"] == {"QFloat": gen2(blocks=(4,))}
    assert read_meta(tmp_path / "old.bpk")["tensors"]["w"]["dtype"] == {"QFloat": gen1(level={"Block": block(4)})}
    for name in ("new.bpk", "old.bpk"):
        with open_store(tmp_path / name) as copy:
            assert b"".join(copy.iter_bytes("w")) == raw
            assert copy.read("w").tolist() == [2.0] * 4 + [3.0] * 4


@pytest.mark.parametrize("scheme, shape, raw, version, why", [
    (gen2(store="Native", tensor="F32", blocks=(4,), block_dtype="F16"), [8], i8(*[1] * 8) + bytes(4) + f32(1.0), "0.21",
     "Burn 0.21 has no two-level scales"),
    (gen2(store="Native", tensor=None, blocks=(4,), block_dtype="F16"), [8], i8(*[1] * 8) + bytes(4), "0.20",
     "Burn 0.20 reads every scale as F32"),
    (gen1(level={"Block": block(16)}), [2, 8], i8(*[1] * 16) + f32(1), "0.22",
     "runs of the flat values up to 0.22.0-pre.2 .* but rectangles from #5262"),
])
def test_a_scheme_the_target_cannot_express_is_refused_naming_why(tmp_path, capsys, scheme, shape, raw, version, why):
    path = write(tmp_path, {"w": ({"QFloat": scheme}, shape, raw)})
    assert main(["convert", str(path), str(tmp_path / "out.bpk"), "--burn-version", version]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"cannot be written for Burn {version}" in err
    assert re.search(why, err)
    assert not (tmp_path / "out.bpk").exists()


def test_convert_to_safetensors_refuses_quantized_unless_dequantize(tmp_path, capsys):
    path = write(tmp_path, {"w": ({"QFloat": gen2(blocks=(8,))}, [16], i8(*range(-8, 8)) + f32(0.5, 0.25))})
    out = tmp_path / "out.safetensors"
    assert main(["convert", str(path), str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dequantize" in err and not out.exists()
    assert main(["convert", str(path), str(out), "--dequantize"]) == 0
    from safetensors.numpy import load_file
    got = load_file(out)["w"]
    assert got.dtype == np.float32
    with open_store(path) as store:
        assert got.tobytes() == store.read("w").tobytes()


def test_a_scheme_of_the_targets_generation_is_written_as_burn_spells_it(tmp_path):
    implicit = {"value": "Q8S", "store": "Native", "mode": "Symmetric", "tensor": None, "block": None}
    path = write(tmp_path, {"w": ({"QFloat": implicit}, [4], i8(1, 2, 3, 4) + f32(0.5))})
    with open_store(path) as store:
        assert store.read("w").tolist() == [0.5, 1.0, 1.5, 2.0]
        export(store.entries, tmp_path / "copy.bpk")
    assert read_meta(tmp_path / "copy.bpk")["tensors"]["w"]["dtype"] == {"QFloat": implicit}
    assert list(read_meta(tmp_path / "copy.bpk")["tensors"]["w"]["dtype"]["QFloat"]) == \
        ["value", "store", "mode", "tensor", "block"]  # serde's field order (cubecl-common scheme.rs:32-46)


def test_a_scheme_rewritten_for_another_generation_is_the_same_dtype(tmp_path):
    raw = i8(*[1] * 8) + f32(2.0, 3.0)
    path = write(tmp_path, {"w": ({"QFloat": gen1(level={"Block": block(4)})}, [8], raw)})
    with open_store(path) as store:
        export(store.entries, tmp_path / "new.bpk")
        with open_store(tmp_path / "new.bpk") as new:
            assert new.entry("w").dtype == store.entry("w").dtype
            assert new.entry("w").dtype.quant_scheme.generation == 2
            (row,) = diff(store, new, values=True).tensors
            assert row.status == "identical"


def test_a_block_is_right_aligned_to_the_tensor_as_to_dim_vec_does():
    """cubecl-common 0.10.0 quant/scheme.rs:311-318: ones in front; a longer block keeps its first sizes."""
    assert q.block_dims((32,), 3) == (1, 1, 32)
    assert q.block_dims((2, 4), 2) == (2, 4)
    assert q.block_dims((2, 4, 8), 2) == (2, 4)


@pytest.mark.parametrize("shape", [(8,), (2, 4), (4, 2), (3, 4), (2, 2, 4), (4, 4)])
@pytest.mark.parametrize("blk", [(2,), (4,), (8,), (2, 2), (1, 4), (2, 4), (4, 2), (2, 2, 2)])
def test_runs_and_rectangles_are_called_equal_exactly_when_they_group_the_same_elements(shape, blk):
    numel = int(np.prod(shape))
    dims = q.block_dims(blk, len(shape))
    rect = np.zeros(shape, np.int64)
    for index in np.ndindex(*shape):
        grid = [-(-n // b) for n, b in zip(shape, dims)]
        rect[index] = np.ravel_multi_index([i // b for i, b in zip(index, dims)], grid)
    run = int(np.prod(blk))
    # the same elements under the same scale index: scale i is run i, and the i-th rectangle in row-major order
    same = numel % run == 0 and bool((np.arange(numel) // run == rect.reshape(-1)).all())
    assert q.blocks_are_runs(shape, blk) == same


LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2, 300), st.sampled_from(
    ["Q8S", "Q4S", "Q2F", "E4M3", "F32", "F16", "UE4M3", "UE8M0", "Native", "Tensor", "Symmetric", "Lookup"]),
    st.sampled_from([{"PackedU32": 0}, {"PackedU32": 1}, {"PackedNative": 0}, {"Block": block(2)},
                     {"Block": block(3, 2)}, {"BlockTensor": {"block": block(2), "global": "F32"}},
                     {"size": block(2), "dtype": "F16"}, {"size": block(4, 2, 2), "dtype": "UE4M3"}]))


VALUES = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=6) | st.dictionaries(
    st.sampled_from(["PackedU32", "PackedNative", "Block", "BlockTensor", "storage", "len", "size", "dtype",
                     "block", "global"]), inner, max_size=3), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(fields=st.sampled_from([sorted(q.GEN1_FIELDS), sorted(q.GEN2_FIELDS)]), data=st.data(),
       shape=st.lists(st.integers(0, 9), max_size=3), extra=st.integers(-3, 40))
def test_any_scheme_decodes_or_says_why_in_a_scheme_error(fields, data, shape, extra):
    payload = {name: data.draw(VALUES, label=name) for name in fields}
    try:
        scheme = q.parse_scheme(payload)
        layout = q.layouts(scheme, tuple(shape))[0] if not q.undecodable(scheme) else None
        size = max(0, (layout.total if layout else 8) + extra)
        raw = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
        parts = q.split(raw, scheme, tuple(shape))
    except q.SchemeError:
        event("refused")
        return
    event("decoded")
    values = q.DequantizedValues(scheme, tuple(shape), len(raw), lambda at, n: raw[at:at + n]).array()
    assert values.shape == parts.values.shape == tuple(shape)


def test_quantized_values_that_cannot_be_decoded_are_refused_naming_the_file(tmp_path):
    from tests.helpers.formats_quantized_files import f32, gen2, i8, write
    path = write(tmp_path, {"w": ({"QFloat": gen2("E4M3", store="Native")}, [4], i8(1, 2, 3, 4) + f32(1.0)),
                            "d": ("F32", [1], f32(2.0))})
    with open_store(path) as store:
        with pytest.raises(FormatError) as info:
            store.read_quantized("w")
        assert str(info.value).startswith("q.bpk: tensor 'w': E4M3 values are not decoded by Burn's QuantizedBytes")
        with pytest.raises(ValueError) as info:
            store.read_quantized("d")
        assert str(info.value) == "tensor 'd' is F32, not quantized"
