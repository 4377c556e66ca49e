"""Burn's legacy records, every recorder, precision and TensorData layout, written by Burn's rules."""

from __future__ import annotations

import json
import struct

import cbor2
import numpy as np
import pytest

import engine
from engine import FormatError, open_store
from engine.cli import main
from engine.formats import burn_record

from tests.helpers.formats_burn_record_writers import RECORDER, Data, Param, Settings, Unit, Variant, id_text, model_item, write_record

NEW_VERSIONS = ("0.21.0", "0.17.0", "0.15.0")  # Bool(BoolStore); Flex32 in the dtype table; neither
VERSIONS = NEW_VERSIONS + ("0.13.0",)  # before 0.14: {value: [numbers], shape}
DTYPE_NAMES = {"float32": "F32", "float16": "F16", "int16": "I16", "int32": "I32", "int64": "I64"}


def cases():
    for recorder in RECORDER:
        for version in VERSIONS:
            for half in (False, True):
                yield pytest.param(recorder, version, half, id=f"{recorder}-{version}-{'half' if half else 'full'}")


@pytest.mark.parametrize("recorder, version, half", list(cases()))  # a list: a generator is spent after one pass
def test_every_recorder_reads_names_shapes_dtypes_values_and_param_ids(tmp_path, recorder, version, half):
    settings = Settings(version=version, half=half, recorder=recorder)
    old_half_bin = recorder.startswith("Bin") and version == "0.13.0" and half
    item, expected = model_item(int_param=not old_half_bin)
    path = write_record(tmp_path, "model", item, settings)
    positional = recorder.startswith("Bin")
    with open_store(path) as store:
        assert store.format == burn_record.NAME
        names = [f"param.{i}" for i in range(len(expected))] if positional else list(expected)
        assert store.names == names
        for name, (source, pid) in zip(names, expected.values()):
            stored = settings.stored(source)
            entry = store.entry(name)
            assert entry.shape == source.shape
            assert str(entry.dtype) == DTYPE_NAMES[stored.dtype.name]
            assert entry.param_id == pid and entry.nbytes == stored.nbytes
            np.testing.assert_array_equal(store.read(name), stored)
        assert store.metadata["burn.version"] == version
        assert store.metadata["burn.settings"] == settings.metadata()["settings"]
        assert store.metadata["burn.float"] == settings.float_type
        assert store.metadata["burn.recorder"] == RECORDER[recorder][0]
        assert ("positional" in store.metadata.get("burn.names", "")) == positional
        if not positional:  # constants, empty options and unit enum variants are the record's values
            assert store.values == {"layers": [{"norm": {"epsilon": None}}, {"norm": {"epsilon": None}}],
                                    "activation": "Relu", "hidden_size": None, "head": {"bias": None}}


def test_a_named_mpk_maps_each_tensor_in_place(tmp_path):
    item, expected = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="NamedMpk"))
    raw = path.read_bytes()
    with open_store(path) as store:
        for name, (array, _) in expected.items():
            fd, offset, length = store.byte_range(name)
            assert raw[offset:offset + length] == array.astype(store.entry(name).dtype.numpy).tobytes()


def test_tensor_names_follow_lists_and_enum_variants(tmp_path):
    item = {"stacked_lstm": {"layers": [{"weight_ih": {"weight": Data(np.ones((2, 2), "<f4"))}}] * 2},
            "block": Variant("Conv", 3, {"inner": [[Data(np.zeros(1, "<f4"))]]})}
    path = write_record(tmp_path, "nested", item, Settings())
    with open_store(path) as store:
        assert store.names == ["stacked_lstm.layers.0.weight_ih.weight", "stacked_lstm.layers.1.weight_ih.weight",
                               "block.Conv.inner.0.0"]
        assert all(e.param_id is None for e in store.entries)


def test_old_uuid_ids_are_kept_as_metadata_without_a_param_id(tmp_path):
    uuid = "0b6a1c2e-1f3d-4a5b-9c8d-7e6f5a4b3c2d"
    item = {"fc": {"weight": Param(uuid, np.arange(6, dtype="<f4").reshape(2, 3))}}
    for recorder in ("NamedMpk", "Bin"):
        path = write_record(tmp_path, f"old_{recorder}", item, Settings(version="0.13.0", recorder=recorder))
        with open_store(path) as store:
            (entry,) = store.entries
            assert entry.param_id is None
            assert store.metadata[f"burn.param_id.{entry.name}"] == uuid
            np.testing.assert_array_equal(store.read(entry.name), np.arange(6, dtype="<f4").reshape(2, 3))


def test_param_id_text_decodes_to_the_u64_burnpack_stores():
    from engine.formats.burn_record.record import param_id
    for value in (0, 1, 42, 10777079075451239370, 2**64 - 1):
        assert param_id(id_text(value)) == value
    assert id_text(0) == "0000000000000" and param_id("not-an-id") is None
    assert param_id("vvvvvvvvvvvvv") is None  # a 65th bit set: no u64 spells so


def test_bool_parameters_with_and_without_their_storage_variant(tmp_path):
    """0.21 writes Bool(BoolStore) (bincode: two indices), earlier Burn a plain Bool."""
    mask = np.array([[True, False], [False, True]])
    for version in ("0.21.0", "0.17.0"):
        for recorder in ("NamedMpk", "Bin", "PrettyJson"):
            path = write_record(tmp_path, f"mask{version}{recorder}", {"mask": Param(id_text(9), mask)},
                                Settings(version=version, recorder=recorder))
            with open_store(path) as store:
                (entry,) = store.entries
                assert str(entry.dtype) == "BOOL" and entry.param_id == 9
                np.testing.assert_array_equal(store.read(entry.name), mask)


# --- optimizer and scheduler records ------------------------------------------------------------

def optimizer_item(ids: list[int]) -> dict:
    """OptimizerAdaptor's record: param id -> AdaptorRecord enum (by rank) -> the optimizer's state."""
    rng = np.random.default_rng(3)
    return {id_text(pid): Variant("Rank2", 1, {"momentum": {"time": 7, "moment_1": Data(rng.random((2, 3), "<f4")),
                                                            "moment_2": Data(rng.random((2, 3), "<f4"))}})
            for pid in ids}


def test_optimizer_state_tensors_values_and_scalars(tmp_path):
    item = optimizer_item([42, 7])
    path = write_record(tmp_path, "optim-3", item, Settings())
    with open_store(path) as store:
        first = id_text(42)
        assert store.names[:2] == ["42.momentum.moment_1", "42.momentum.moment_2"]  # current Burn's layout
        np.testing.assert_array_equal(store.read(store.names[0]), item[first].payload["momentum"]["moment_1"].array)
        assert store.values["42"] == {"__rank": 2, "momentum": {"time": 7}}
        assert store.scalars["42.momentum.time"] == {"UInt": 7} and store.scalars["42.__rank"] == {"UInt": 2}


def test_scheduler_numbers_become_burnpack_scalars_on_conversion(tmp_path):
    path = write_record(tmp_path, "scheduler-3", {"init_lr": 0.001, "step": 12, "warmup": Unit}, Settings())
    out = tmp_path / "scheduler-3.bpk"
    assert main(["convert", str(path), str(out)]) == 0
    with open_store(out) as converted:
        assert len(converted) == 0
        assert converted.scalars == {"init_lr": {"Float": 0.001}, "step": {"Int": 12}}
        assert converted.metadata["burn.version"] == "0.21.0"


# --- conversion to Burnpack, byte for byte -----------------------------------------------------

def expected_burnpack(tensors: list[tuple[str, str, tuple, bytes, int | None]], metadata: dict[str, str]) -> bytes:
    """Burnpack laid out by the format's rules with an independent CBOR encoder: tensors in module
    order at 256-aligned offsets, descriptors sorted by name, metadata sorted."""
    descriptors, data, position = {}, b"", 0
    for name, dtype, shape, raw, pid in tensors:
        start = -(-position // 256) * 256
        data += bytes(start - len(data)) + raw
        descriptors[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [start, start + len(raw)],
                             **({"param_id": pid} if pid is not None else {})}
        position = start + len(raw)
    meta = cbor2.dumps({"tensors": dict(sorted(descriptors.items())), "metadata": dict(sorted(metadata.items()))})
    head = b"NRUB" + struct.pack("<HI", 1, len(meta)) + meta
    return head + bytes(-len(head) % 256) + data


@pytest.mark.parametrize("recorder", list(RECORDER))
@pytest.mark.parametrize("half", [False, True], ids=["full", "half"])
def test_convert_to_burnpack_is_byte_exact(tmp_path, recorder, half):
    settings = Settings(version="0.17.0", half=half, recorder=recorder)
    item, expected = model_item()
    path = write_record(tmp_path, "model", item, settings)
    args = ["convert", str(path), str(tmp_path / "model.bpk")]
    if recorder.startswith("Bin"):  # names come from a template of the same architecture
        template = write_record(tmp_path, "template", item, Settings(recorder="NamedMpk"))
        args += ["--template", str(template)]
    assert main(args) == 0
    metadata = {"producer": "store-studio", "format": "burnpack", "version": engine.__version__,
                "burn.version": "0.17.0", "burn.recorder": RECORDER[recorder][0],
                "burn.settings": settings.metadata()["settings"], "burn.float": settings.float_type,
                "burn.int": settings.int_type}
    if recorder.startswith("Bin"):
        metadata.update({"burn.names": "from the template template.mpk", "burn.encoding": "bincode 2 (varint)"})
    tensors = []
    for name, (array, pid) in expected.items():
        stored = settings.stored(array)
        tensors.append((name, DTYPE_NAMES[stored.dtype.name], array.shape, stored.tobytes(), pid))
    assert (tmp_path / "model.bpk").read_bytes() == expected_burnpack(tensors, metadata)


def test_migrated_json_record_reads_back_identical(tmp_path):
    item, expected = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="PrettyJson"))
    out = tmp_path / "model.safetensors"
    assert main(["convert", str(path), str(out)]) == 0
    with open_store(out) as converted:
        assert converted.metadata["burn.recorder"] == "PrettyJsonFileRecorder"
        for name, (array, _) in expected.items():
            np.testing.assert_array_equal(converted.read(name), array.astype(converted.entry(name).dtype.numpy))


# --- Bin records: positional names, or a template's ------------------------------------------------

def test_inspect_says_bin_names_are_positional(tmp_path, capsys):
    item, _ = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="Bin"))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "param.0" in out and "burn.names = positional" in out
    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["burn.names"].startswith("positional")


def test_a_template_names_bin_parameters_and_a_mismatch_is_refused(tmp_path):
    item, expected = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="BinGz", half=True))
    good = write_record(tmp_path, "good", item, Settings(recorder="NamedMpk"))
    with open_store(path, template=good) as store:
        assert store.names == list(expected)
        assert store.metadata["burn.names"] == "from the template good.mpk"
    other, _ = model_item()
    other["layers"][1]["linear"]["weight"].array = np.zeros((4, 3), "<f4")
    bad = write_record(tmp_path, "bad", other, Settings(recorder="NamedMpk"))
    with pytest.raises(FormatError, match=r"parameter 5 has shape \[4, 2\] but the template's tensor 5 "
                                          r"\('layers.1.linear.weight'\) has \[4, 3\]"):
        open_store(path, template=bad)
    fewer, _ = model_item(int_param=False)
    short = write_record(tmp_path, "short", fewer, Settings(recorder="NamedMpk"))
    with pytest.raises(FormatError, match="11 parameters but the template has 10 tensors"):
        open_store(path, template=short)


def test_bincode_1_fixed_width_records_are_read(tmp_path):
    item, expected = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="Bin", fixed=True))
    with open_store(path) as store:
        assert store.metadata["burn.encoding"] == "bincode 1 (fixed)"
        for i, (array, pid) in enumerate(expected.values()):
            np.testing.assert_array_equal(store.read(f"param.{i}"), Settings().stored(array))
            assert store.entry(f"param.{i}").param_id == pid


def test_gzip_records_leave_no_temporary_file(tmp_path, monkeypatch):
    import tempfile
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    item, _ = model_item()
    path = write_record(tmp_path, "model", item, Settings(recorder="NamedMpkGz"))
    with open_store(path) as store:
        assert len(list(scratch.iterdir())) == 1 and store.files == [path]
        store.read("embed.weight")
    assert list(scratch.iterdir()) == []


def test_half_floats_follow_the_settings_when_the_version_table_is_ambiguous(tmp_path):
    """F16 and BF16 trade indices between DType tables: a record whose version names the other table
    still reads its floats as the settings' f16, which Burn converted every float tensor to."""
    item, expected = model_item(int_param=False)
    raw = bytearray((write_record(tmp_path, "m", item, Settings(recorder="Bin", half=True, version="0.17.0"))
                     ).read_bytes())
    at = raw.index(b"0.17.0")
    raw[at:at + 6] = b"0.15.0"  # the 0.14 table: index 3 is BF16 there, F16 at 0.16+
    path = tmp_path / "relabelled.bin"
    path.write_bytes(bytes(raw))
    with open_store(path) as store:
        assert {str(e.dtype) for e in store.entries} == {"F16"}
        np.testing.assert_array_equal(store.read("param.0"), expected["embed.weight"][0].astype("<f2"))


def test_a_dtype_index_whose_size_fits_only_the_other_versions_table_reads_by_that_table(tmp_path):
    """I64 (full precision's int before 0.21) sits at index 5 from Burn 0.16 on, I32 before: the byte
    count tells which table wrote it."""
    item = {"steps": Param(id_text(3), np.arange(6, dtype="<i8").reshape(2, 3))}
    raw = bytearray(write_record(tmp_path, "m", item, Settings(recorder="Bin", version="0.17.0")).read_bytes())
    at = raw.index(b"0.17.0")
    raw[at:at + 6] = b"0.15.0"
    path = tmp_path / "relabelled.bin"
    path.write_bytes(bytes(raw))
    with open_store(path) as store:
        assert str(store.entry("param.0").dtype) == "I64"
        np.testing.assert_array_equal(store.read("param.0"), np.arange(6, dtype="<i8").reshape(2, 3))
