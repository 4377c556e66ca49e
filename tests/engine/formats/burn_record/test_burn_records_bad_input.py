"""Truncated, corrupt and hostile records: one-line FormatErrors naming where, never a crash."""

from __future__ import annotations

import gzip
import json

import msgpack
import numpy as np
import pytest

from engine import FormatError, open_store
from engine.formats.burn_record import gz

from tests.helpers.formats_burn_record_writers import Data, Settings, model_item, record_bytes, record_tree, write_record


def one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("recorder", ["NamedMpk", "Bin", "PrettyJson", "NamedMpkGz", "BinGz", "JsonGz"])
def test_truncation_anywhere_is_a_format_error(tmp_path, recorder):
    item, _ = model_item()
    raw = record_bytes(item, Settings(recorder=recorder))
    for cut in sorted({1, 9, 40, len(raw) // 3, len(raw) // 2, len(raw) - 30, len(raw) - 1}):
        path = tmp_path / f"cut{cut}.{recorder}"
        path.write_bytes(raw[:cut])
        try:
            with open_store(path) as store:
                # a Bin record cut between parameters still holds the whole ones before the cut
                assert recorder.startswith("Bin") and len(store) < 11
        except FormatError as exc:
            assert "\n" not in str(exc)


def test_a_truncated_tensor_names_its_field_path_and_offset(tmp_path):
    item, _ = model_item()
    raw = record_bytes(item, Settings(recorder="NamedMpk"))
    payload = np.asarray(item["layers"][1]["linear"]["weight"].array, "<f4").tobytes()
    path = tmp_path / "cut.mpk"
    path.write_bytes(raw[:raw.index(payload) + 4])
    with pytest.raises(FormatError) as exc:
        open_store(path)
    assert "truncated" in one_line(exc) and "layers.1.linear.weight.param.bytes" in str(exc.value)


def test_a_truncated_bin_parameter_names_its_index_and_offset(tmp_path):
    item, _ = model_item()
    raw = record_bytes(item, Settings(recorder="Bin"))
    path = tmp_path / "cut.bin"
    path.write_bytes(raw[:-20])
    with pytest.raises(FormatError, match=r"file is truncated|parameter 10 at byte \d+") as exc:
        open_store(path)
    one_line(exc)


def test_corrupt_msgpack_is_refused_with_its_offset(tmp_path):
    item, _ = model_item()
    raw = bytearray(record_bytes(item, Settings(recorder="NamedMpk")))
    at = raw.index(b"\xa5embed")
    raw[at] = 0xC1  # the one byte msgpack never uses
    path = tmp_path / "bad.mpk"
    path.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match=rf"not valid msgpack .*\(byte {at}\)") as exc:
        open_store(path)
    one_line(exc)


def test_bytes_that_do_not_match_dtype_and_shape_are_refused(tmp_path):
    tree = record_tree({"w": Data(np.ones((2, 2), "<f4"))}, Settings(), False)
    tree["item"]["w"]["shape"] = [2, 3]
    path = tmp_path / "bad.mpk"
    path.write_bytes(msgpack.packb(tree, use_bin_type=True))
    with pytest.raises(FormatError, match=r"tensor 'w': 16 bytes, but F32 x \[2, 3\] needs 24"):
        open_store(path)


def test_an_unknown_dtype_is_refused_by_name(tmp_path):
    tree = record_tree({"w": Data(np.ones(2, "<f4"))}, Settings(), True)
    tree["item"]["w"]["dtype"] = "F128"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(tree))
    with pytest.raises(FormatError, match="tensor 'w': dtype 'F128' is not one of Burn's"):
        open_store(path)


def test_a_bin_dtype_index_outside_the_versions_table_is_refused(tmp_path):
    from tests.helpers.formats_burn_record_writers import Bincode, Param, id_text
    s = Settings(recorder="Bin", version="0.15.0")
    raw = bytearray(Bincode(s).record({"w": Param(id_text(1), np.ones(2, "<f4"))}))
    raw[-1] = 40
    path = tmp_path / "bad.bin"
    path.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="dtype index 40 is not a DType of Burn 0.15.0"):
        open_store(path)


def test_nesting_deeper_than_the_limit_is_refused(tmp_path):
    deep: dict = {"w": Data(np.ones(1, "<f4"))}
    for _ in range(200):
        deep = {"n": deep}
    for recorder in ("NamedMpk", "PrettyJson"):
        path = write_record(tmp_path, "deep", deep, Settings(recorder=recorder))
        with pytest.raises(FormatError, match="nested deeper than 128 levels") as exc:
            open_store(path)
        one_line(exc)


def test_a_gzip_bomb_is_stopped_while_it_inflates(tmp_path, monkeypatch):
    import tempfile
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(gz, "MIN_ALLOWANCE", 1 << 20)
    head = record_bytes({"w": Data(np.ones(1, "<f4"))}, Settings(recorder="NamedMpk"))
    path = tmp_path / "bomb.mpk.gz"
    path.write_bytes(gzip.compress(head + bytes(32 << 20), 9))
    with pytest.raises(FormatError, match="possible gzip bomb"):
        open_store(path)
    assert list(scratch.iterdir()) == []  # the partial copy is gone


def test_a_corrupt_gzip_stream_is_refused(tmp_path):
    raw = bytearray(record_bytes({"w": Data(np.ones(64, "<f4"))}, Settings(recorder="NamedMpkGz")))
    raw[40:60] = bytes(20)
    path = tmp_path / "bad.mpk.gz"
    path.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="gzip stream is corrupt|cannot be decompressed|truncated|not valid") as exc:
        open_store(path)
    one_line(exc)


def test_metadata_without_its_fields_is_refused(tmp_path):
    path = tmp_path / "bad.mpk"
    path.write_bytes(msgpack.packb({"metadata": {"float": "f32"}, "item": {}}, use_bin_type=True))
    with pytest.raises(FormatError, match="metadata is not a map of float, int, format, version, settings"):
        open_store(path)


@pytest.mark.parametrize("recorder", ["NamedMpk", "Bin", "PrettyJson", "BinGz"])
def test_random_corruption_gives_a_format_error_or_a_readable_store(tmp_path, recorder):
    """Flipped, overwritten, deleted and inserted bytes: opening, reading and streaming every tensor
    either works or raises FormatError, never anything else."""
    rng = np.random.default_rng(14)
    item, _ = model_item()
    seed = record_bytes(item, Settings(recorder=recorder, half=recorder == "Bin"))
    path = tmp_path / "fuzzed"
    for case in range(150):
        data = bytearray(seed)
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(0, len(data)))
            action = case % 4
            if action == 0:
                data[at] ^= 1 << int(rng.integers(0, 8))
            elif action == 1:
                data[at] = int(rng.choice([0x00, 0x0D, 0xC6, 0xDE, 0xFB, 0xFD, 0xFF]))
            elif action == 2:
                del data[at:at + int(rng.integers(1, 16))]
            else:
                data[at:at] = rng.bytes(int(rng.integers(1, 8)))
        path.write_bytes(bytes(data))
        try:
            with open_store(path) as store:
                for entry in store.entries:
                    store.read(entry.name)
                    b"".join(store.iter_bytes(entry.name))
        except FormatError as exc:
            assert "\n" not in str(exc), f"case {case}"
