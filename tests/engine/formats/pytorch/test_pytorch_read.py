"""Reading checkpoints that real torch wrote: every tensor equals torch.load(weights_only=True)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.errors import FormatError
from engine.formats import open_store

from tests.helpers.pytorch_checkpoints import (DTYPES, LAYOUTS, big_endian_copy, checkpoints, raw_bytes,
                                             tar_checkpoint, torch_flat)

FIXTURES = Path(__file__).parents[3] / "fixtures" / "burn-pytorch-tests"
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text())
TORCH_TO_OURS = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
                 "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL", "complex64": "C64",
                 "complex128": "C128", "uint16": "U16", "uint32": "U32", "uint64": "U64",
                 "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}


def value_at(values: dict, dotted: str):
    node = values
    for part in dotted.split("."):
        node = node[part]
    return node


@pytest.mark.parametrize("relative", sorted(MANIFEST))
def test_burn_fixture_matches_manifest(relative: str) -> None:
    expected = MANIFEST[relative]
    with open_store(FIXTURES / relative) as store:
        assert store.format == "pytorch" and store.version == "zip"
        tensors = {name: info for name, info in expected.items() if "value" not in info}
        assert store.names == list(tensors)
        for name, info in tensors.items():
            entry = store.entry(name)
            assert str(entry.dtype) == TORCH_TO_OURS[info["dtype"]]
            assert list(entry.shape) == info["shape"]
            assert float(entry.read().astype(np.float64).sum()) == pytest.approx(info["sum"], rel=1e-6, abs=1e-6)
        for name, info in expected.items():
            if "value" in info:
                assert repr(value_at(store.values, name)) == info["value"]


def assert_same_as_torch(path: Path, expected: dict[str, torch.Tensor] | None = None,
                         **options) -> dict[str, torch.Tensor]:
    if expected is None:
        loaded = torch.load(path, weights_only=True)
        expected = torch_flat(loaded[options["top_level_key"]] if options else loaded)
    with open_store(path, **options) as store:
        assert store.names == list(expected)
        for name, tensor in expected.items():
            entry = store.entry(name)
            assert entry.shape == tuple(tensor.shape), name
            assert str(entry.dtype) == TORCH_TO_OURS[str(tensor.dtype).removeprefix("torch.")], name
            array = entry.read()
            assert array.shape == tuple(tensor.shape)
            assert np.ascontiguousarray(array).tobytes() == raw_bytes(tensor), name
            assert b"".join(bytes(c) for c in entry.iter_bytes(chunk_size=16)) == raw_bytes(tensor), name
    return expected


@pytest.mark.parametrize(("stem", "layout"), [("dtypes", "zip")] + [
    (stem, layout) for stem in ("views", "shared", "params", "scalars_empty", "nested") for layout in LAYOUTS])
def test_tensors_equal_torch_load(torch_files, stem: str, layout: str) -> None:
    assert_same_as_torch(torch_files[(stem, layout)])


def test_legacy_files_torch_itself_cannot_load(torch_files) -> None:
    """torch 2.13 writes uint16/32/64 and float8 storages into legacy files as UntypedStorage, then
    fails to load them (UntypedStorage has no dtype); we read them, equal to what was saved."""
    path = torch_files[("dtypes", "legacy")]
    with pytest.raises(AttributeError):
        torch.load(path, weights_only=False)
    assert_same_as_torch(path, torch_flat(checkpoints()["dtypes"]))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_storage_dtype_is_listed(torch_files, layout: str) -> None:
    with open_store(torch_files[("dtypes", layout)]) as store:
        assert store.version == layout
        assert [str(e.dtype) for e in store.entries] == [TORCH_TO_OURS[str(d)[6:]] for d in DTYPES]


def test_complex32_and_fnuz_are_listed_but_not_decoded(tmp_path: Path) -> None:
    path = tmp_path / "odd.pt"
    torch.save({"c": torch.zeros(2, dtype=torch.complex32), "f": torch.zeros(3, dtype=torch.float8_e4m3fnuz)}, path)
    with open_store(path) as store:
        assert [(str(e.dtype), e.shape, e.nbytes) for e in store.entries] == [("C32", (2,), 8), ("F8_E4M3FNUZ", (3,), 3)]
        with pytest.raises(FormatError, match="cannot be decoded"):
            store.read("c")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_views_keep_offsets_strides_and_one_storage(torch_files, layout: str) -> None:
    with open_store(torch_files[("views", layout)]) as store:
        t = store.read("t")
        assert t.shape == (10, 6) and not t.flags.c_contiguous
        np.testing.assert_array_equal(store.read("slice"), np.arange(60, dtype=np.float32).reshape(6, 10)[2:4, 3:7])
        np.testing.assert_array_equal(store.read("expand"), np.tile(np.arange(3, dtype=np.float32), (4, 1)))
        # a contiguous view is a plain range of the file, inside the shared storage's bytes
        fd, offset, length = store.byte_range("row")
        assert length == 40 and store.byte_range("base")[1] + 5 * 40 == offset
        assert store.byte_range("t") is None and store.byte_range("col") is None


@pytest.mark.parametrize("layout", LAYOUTS)
def test_tied_weights_share_one_storage(torch_files, layout: str) -> None:
    with open_store(torch_files[("shared", layout)]) as store:
        enc, dec = store.byte_range("enc.weight"), store.byte_range("dec.weight")
        assert enc == dec
        assert store.byte_range("half")[1] == enc[1] + 2 * 4 * 4


def test_nested_checkpoint_names_and_values(torch_files) -> None:
    with open_store(torch_files[("nested", "zip")]) as store:
        assert "model_state_dict.0.weight" in store
        assert "optimizer_state_dict.state.0.exp_avg" in store and "optimizer_state_dict.state.0.step" in store
        assert "weights.0" in store and "weights.1" in store and "pair.0" in store
        values = store.values
        assert values["epoch"] == 42
        assert values["config"] == {"lr": 0.1, "betas": [0.9, 0.99], "name": "run", "size": [2, 3], "tags": ["a"],
                                    "none": None, "empty": {}}
        assert values["optimizer_state_dict"]["param_groups"][0]["lr"] == 0.01
        assert values["pair"] == ["<tensor pair.0>", 7]
        assert "model_state_dict" not in values and "weights" not in values
        json.dumps(values)


def test_top_level_key_picks_a_branch(torch_files) -> None:
    path = torch_files[("nested", "legacy")]
    expected = assert_same_as_torch(path, top_level_key="model_state_dict")
    assert "0.weight" in expected
    with open_store(path, top_level_key="optimizer_state_dict.state") as store:
        assert "0.exp_avg" in store.names


def test_missing_top_level_key_lists_the_keys(torch_files) -> None:
    with pytest.raises(FormatError, match="no top-level key 'state_dict'.*'model_state_dict', 'optimizer_state_dict'"):
        open_store(torch_files[("nested", "zip")], top_level_key="state_dict")


def test_burn_top_level_key_fixture(tmp_path: Path) -> None:
    with open_store(FIXTURES / "top_level_key" / "top_level_key.pt", top_level_key="my_state_dict") as store:
        assert store.names == ["conv1.weight", "conv1.bias"]


def test_parameters_read_as_their_data(torch_files) -> None:
    with open_store(torch_files[("params", "zip")]) as store:
        assert store.names == ["w", "frozen"]
        np.testing.assert_array_equal(store.read("frozen"), np.ones(2, np.float32))


def test_big_endian_zip_is_byteswapped_on_read(torch_files, tmp_path: Path) -> None:
    source = torch_files[("dtypes", "zip")]
    target = tmp_path / "big.pt"
    itemsizes = [torch.empty(0, dtype=d).element_size() // (2 if d.is_complex else 1) for d in DTYPES]
    big_endian_copy(source, target, itemsizes)
    original = torch_flat(torch.load(source, weights_only=True))
    swapped_by_torch = torch_flat(torch.load(target, weights_only=True))
    with open_store(target) as store:
        assert store.metadata["byteorder"] == "big"
        assert all(store.byte_range(name) is None for name in original)
        for name, tensor in original.items():
            assert np.ascontiguousarray(store.read(name)).tobytes() == raw_bytes(tensor), name
            assert b"".join(bytes(c) for c in store.iter_bytes(name, 16)) == raw_bytes(tensor), name
            # torch agrees, except for the newer dtypes it keeps in untyped (byte) storages,
            # which it does not swap at all
            if name not in ("uint16", "uint32", "uint64"):
                assert raw_bytes(swapped_by_torch[name]) == raw_bytes(tensor), name


def test_tar_layout_opens(tmp_path: Path) -> None:
    path, expected = tar_checkpoint(tmp_path / "old.pt")
    with open_store(path) as store:
        assert store.version == "tar" and store.names == list(expected)
        for name, array in expected.items():
            np.testing.assert_array_equal(store.read(name), array)
        assert store.values == {"epoch": 3}
        assert store.byte_range("full") is not None and store.byte_range("strided") is None


def test_plain_pickle_without_tensors(tmp_path: Path) -> None:
    import pickle
    path = tmp_path / "config.pt"
    path.write_bytes(pickle.dumps({"lr": 0.1, "layers": [1, 2], "name": "x", "pair": (1, 2)}, protocol=4))
    with open_store(path) as store:
        assert store.version == "pickle" and len(store) == 0
        assert store.values == {"lr": 0.1, "layers": [1, 2], "name": "x", "pair": [1, 2]}


def test_numpy_values_and_arrays_inside_a_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "np.pt"
    array = np.arange(6, dtype=">i4").reshape(2, 3)
    torch.save({"best": np.float64(0.5), "arr": array, "fortran": np.asfortranarray(np.ones((2, 3), "<f4"))}, path)
    with open_store(path) as store:
        assert store.values == {"best": 0.5}
        np.testing.assert_array_equal(store.read("arr"), array)
        np.testing.assert_array_equal(store.read("fortran"), np.ones((2, 3)))


def test_any_top_folder_name_is_accepted(torch_files, tmp_path: Path) -> None:
    source = torch_files[("views", "zip")]
    target = tmp_path / "renamed.pt"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr("something else/" + info.filename.split("/", 1)[1], src.read(info))
    assert_same_as_torch(target)


def test_release_and_close(torch_files) -> None:
    store = open_store(torch_files[("views", "zip")])
    store.read("t")
    store.release("t")
    store.close()
    with pytest.raises(ValueError, match="closed"):
        store.read("t")
