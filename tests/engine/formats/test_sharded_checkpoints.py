"""Sharded checkpoints (``*.index.json`` and its shards, engine/formats/sharded.py and safetensors.py) opened as one
store: each tensor read from the shard the index maps it to, each shard's file held open once and closed with the
store, and an index that is malformed, too large, too deep or names a file outside its folder refused naming the
index or the shard. Without these a user would read a tensor from the wrong shard, leak open files over a long
day in the GUI, or have an index reach files outside its folder.

Promises (README "Formats", sharded checkpoints):
- an index and its shards open as one model, each tensor read from the shard the index names ->
  here::test_only_the_tensors_the_index_maps_are_listed_each_from_its_own_shard
- a shard's non-tensor values are kept, under the shard's file name ->
  here::test_each_shards_values_are_kept_under_its_file_name
- what torch's safe loader would refuse is said of the whole model (README "PyTorch files": the note and the
  classes named) -> here::test_what_a_shards_reader_says_is_said_of_the_whole_model
- export streams every tensor in the chunks it asks for -> here::test_streaming_a_sharded_tensor_gives_chunks_of_the_size_asked
- each shard is open once while the store is, none after it is closed ->
  here::test_each_shard_is_open_once_and_closed_with_the_store
- a SafeTensors shard shorter than the 8-byte header length is refused as truncated, naming the shard
  -> test_a_shard_shorter_than_its_header_length_is_refused_naming_it
- a sharded index names only files beside it -> test_a_shard_outside_the_folder_or_naming_no_file_is_refused
- a sharded index is checked against its shards -> test_a_sharded_index_is_refused_when_malformed,
  test_a_pytorch_shard_lacking_a_tensor_its_index_maps_is_refused_naming_both,
  test_an_index_mixing_safetensors_and_pytorch_shards_is_refused_at_the_odd_shard
- an index up to 100 MB is read, a larger one refused before it is read ->
  test_an_index_of_exactly_100_mb_is_read, test_an_index_over_100_mb_is_refused_before_it_is_read
"""

from __future__ import annotations

import argparse
import fractions
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

from engine import FormatError, open_store
from tests.helpers.formats_small_files import F32, VALUES, safetensors_file
from tests.refusals import refusal


def index_of(folder, weight_map: dict[str, str]):
    index = folder / "pytorch_model.bin.index.json"
    index.write_text(json.dumps({"weight_map": weight_map}))
    return index


def test_only_the_tensors_the_index_maps_are_listed_each_from_its_own_shard(tmp_path):
    """p1 also holds an old copy of "b" and a tensor no one maps: neither is listed, and "b" is p2's."""
    torch.save({"a": torch.arange(3.0), "b": torch.zeros(2, dtype=torch.int16), "stray": torch.ones(1)},
               tmp_path / "p1.bin")
    torch.save({"b": torch.tensor([7, 8], dtype=torch.int16), "a": torch.full((3,), 9.0)}, tmp_path / "p2.bin")
    with open_store(index_of(tmp_path, {"a": "p1.bin", "b": "p2.bin"})) as store:
        assert store.names == ["a", "b"]
        assert store.read("a").tolist() == [0.0, 1.0, 2.0] and store.read("b").tolist() == [7, 8]
        assert (store.format, store.description) == ("pytorch", "PyTorch sharded")
        assert [f.name for f in store.files] == ["p1.bin", "p2.bin"]


def test_a_single_shard_index_is_the_shards_format(tmp_path):
    torch.save({"a": torch.arange(2.0)}, tmp_path / "only.bin")
    with open_store(index_of(tmp_path, {"a": "only.bin"})) as store:
        assert (store.format, store.names, store.read("a").tolist()) == ("pytorch", ["a"], [0.0, 1.0])


def test_each_shards_values_are_kept_under_its_file_name(tmp_path):
    torch.save({"a": torch.arange(3.0), "step": 5, "name": "run-1"}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2)}, tmp_path / "p2.bin")  # no values: no entry
    with open_store(index_of(tmp_path, {"a": "p1.bin", "b": "p2.bin"})) as store:
        assert store.values == {"p1.bin": {"step": 5, "name": "run-1"}}


def test_streaming_a_sharded_tensor_gives_chunks_of_the_size_asked(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.arange(5, dtype=torch.int16)}, tmp_path / "p2.bin")
    with open_store(index_of(tmp_path, {"a": "p1.bin", "b": "p2.bin"})) as store:
        assert [bytes(c) for c in store.iter_bytes("a", chunk_size=4)] == [
            torch.tensor([x], dtype=torch.float32).numpy().tobytes() for x in (0.0, 1.0, 2.0)]
        assert [len(c) for c in store.iter_bytes("b", chunk_size=4)] == [4, 4, 2]
        assert b"".join(bytes(c) for c in store.iter_bytes("b")) == torch.arange(5, dtype=torch.int16).numpy().tobytes()


def test_a_closed_sharded_store_closes_its_shards_and_reads_nothing(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2)}, tmp_path / "p2.bin")
    store = open_store(index_of(tmp_path, {"a": "p1.bin", "b": "p2.bin"}))
    store.close()
    assert store.closed
    for call in (lambda: store.read("b"), lambda: store.byte_range("a"), lambda: store.iter_bytes("b"),
                 lambda: store.verify("a")):
        with pytest.raises(ValueError):
            call()


def test_each_tensor_is_checked_in_the_shard_that_holds_it_even_an_index_of_shards(tmp_path):
    """A shard opens by its own bytes, so it may itself be a SafeTensors index: checking "b" asks that index for
    "b" by name, and an in-place change of the file holding "b" is caught."""
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    header = json.dumps({"b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    header += b" " * (-(len(header) + 8) % 8)
    inner = tmp_path / "s.safetensors"
    inner.write_bytes(struct.pack("<Q", len(header)) + header + struct.pack("<f", 2.5))
    (tmp_path / "inner.index.json").write_text(json.dumps({"weight_map": {"b": "s.safetensors"}}))
    with open_store(index_of(tmp_path, {"a": "p1.bin", "b": "inner.index.json"})) as store:
        assert store.read("b").tolist() == [2.5]
        store.verify("b")
        store.verify("a")
        stat = inner.stat()
        with open(inner, "r+b") as f:  # the same bytes written again: a change on disk all the same
            f.write(inner.read_bytes())
        os.utime(inner, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        with pytest.raises(FormatError) as caught:
            store.verify("b")
        assert str(caught.value) == "s.safetensors: changed on disk since it was opened; reload it to read the new contents"
        store.verify("a")


def test_what_a_shards_reader_says_is_said_of_the_whole_model(tmp_path):
    """Classes torch's safe loader would refuse, from every shard, sorted; every shard's note, naming its shard."""
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2), "args": argparse.Namespace(lr=0.1)}, tmp_path / "p2.bin")
    torch.save({"c": torch.ones(1), "f": fractions.Fraction(1, 3)}, tmp_path / "p3.bin")
    with open_store(index_of(tmp_path, {"a": "p1.bin", "b": "p2.bin", "c": "p3.bin"})) as store:
        assert store.foreign_classes == ("argparse.Namespace", "fractions.Fraction")
        assert store.note == ("p2.bin: torch.load(weights_only=True) would refuse this file: it names 1 non-weight "
                              "class (argparse.Namespace), shown here as placeholders; nothing was run; "
                              "p3.bin: torch.load(weights_only=True) would refuse this file: it names 1 non-weight "
                              "class (fractions.Fraction), shown here as placeholders; nothing was run")


def test_a_model_of_plain_shards_has_no_note_and_no_foreign_class(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    with open_store(index_of(tmp_path, {"a": "p1.bin"})) as store:
        assert (store.foreign_classes, store.note) == ((), None)


def open_files_under(folder) -> list[str]:
    """The files under ``folder`` this process holds open (Linux: /proc/self/fd)."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the descriptor listdir itself used, gone by now
            continue
        if target.startswith(str(folder)):
            held.append(os.path.basename(target))
    return sorted(held)


def test_closing_the_store_closes_every_shard(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2)}, tmp_path / "p2.bin")
    store = open_store(index_of(tmp_path, {"a": "p1.bin", "b": "p2.bin"}))
    assert open_files_under(tmp_path) == ["p1.bin", "p2.bin"]
    store.close()
    assert open_files_under(tmp_path) == []
    store.close()  # a second close is no error


def test_a_shard_in_another_format_opens_by_its_own_bytes(tmp_path):
    """Shards after the first may be any format a file opens as (here a Burnpack, which names no foreign class)."""
    from engine import ArrayStore, export
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    export(ArrayStore({"b": np.array([4, 5], "<i4")}).entries, tmp_path / "p2.bpk", "burnpack")
    with open_store(index_of(tmp_path, {"a": "p1.bin", "b": "p2.bpk"})) as store:
        assert (store.format, store.names, store.foreign_classes, store.note) == ("pytorch", ["a", "b"], (), None)
        assert store.read("b").tolist() == [4, 5] and store.read("a").tolist() == [0.0, 1.0, 2.0]


def open_descriptors(folder: Path) -> list[str]:
    """The names of the files under ``folder`` this process holds open, one per descriptor (/proc/self/fd)."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the descriptor listdir itself used, closed meanwhile
            continue
        if target.parent == folder:
            names.append(target.name)
    return sorted(names)


def test_each_shard_is_open_once_and_closed_with_the_store(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2)}, tmp_path / "p2.bin")
    index = tmp_path / "pytorch_model.bin.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "p1.bin", "b": "p2.bin"}}))
    folder = tmp_path.resolve()
    with open_store(index) as store:
        assert store.read("a").tolist() == [0.0, 1.0, 2.0] and store.read("b").tolist() == [1.0, 1.0]
        assert open_descriptors(folder) == ["p1.bin", "p2.bin"]
    assert open_descriptors(folder) == []


@pytest.mark.parametrize("length", [1, 5, 7])
def test_a_shard_shorter_than_its_header_length_is_refused_naming_it(tmp_path, length: int) -> None:
    save_file({"a": np.arange(3, dtype=np.float32)}, tmp_path / "model-1.safetensors")
    short = tmp_path / "model-2.safetensors"
    short.write_bytes(b"\x10" * length)  # not a sharded index's JSON either: read as a SafeTensors shard
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}}))
    with pytest.raises(FormatError) as refused:
        open_store(index)
    assert refused.value.path == str(short)
    assert refused.value.problem == (f"file is truncated: the 8-byte header length needs bytes 0..8 but the file "
                                     f"has {length}")


def shard_index(tmp_path, weight_map: dict, **extra) -> object:
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": weight_map, **extra}))
    return index


@pytest.mark.parametrize("shard, words", [
    ("../a.safetensors", "shard '../a.safetensors' lies outside the index's folder"),
    ("/tmp/a.safetensors", "shard '/tmp/a.safetensors' lies outside the index's folder"),
    ("sub/../../a.safetensors", "shard 'sub/../../a.safetensors' lies outside the index's folder"),
    ("a\0.safetensors", "shard 'a\\x00.safetensors' lies outside the index's folder"),
    ("", "the index maps a tensor to '', which names no file"),
    (".", "the index maps a tensor to '.', which names no file"),
    ("sub/", "the index maps a tensor to 'sub/', which names no file"),
])
def test_a_shard_outside_the_folder_or_naming_no_file_is_refused(tmp_path, shard, words):
    index = shard_index(tmp_path, {"w": shard})
    assert refusal(index) == f"model.safetensors.index.json: {words}"


def test_a_shard_in_a_subfolder_and_its_aliases_open_as_one_file(tmp_path):
    (tmp_path / "sub").mkdir()
    safetensors_file(tmp_path / "sub" / "a.safetensors",
                     {"w": F32, "v": {**F32, "data_offsets": [8, 16]}, "__metadata__": {"from": "shard"}},
                     VALUES.tobytes() + (VALUES * 2).tobytes())
    index = shard_index(tmp_path, {"w": "sub/a.safetensors", "v": "./sub/a.safetensors"},
                        metadata={"total_size": 16, "from": "index"})
    with open_store(index) as store:
        assert sorted(store.names) == ["v", "w"]
        assert store.read("v").tobytes() == (VALUES * 2).tobytes() and store.read("w").tobytes() == VALUES.tobytes()
        assert store.metadata == {"total_size": "16", "from": "index"}


@pytest.mark.parametrize("content, words", [
    ({"weight_map": {"w": 1}}, "index has no 'weight_map' of tensor names to shard files"),
    ({"weight_map": ["a.safetensors"]}, "index has no 'weight_map' of tensor names to shard files"),
    ({"weight_map": {"w": "a.safetensors"}, "metadata": [1]}, "index 'metadata' is not a map"),
    ({"weight_map": {"x": "a.safetensors"}}, "shard a.safetensors lacks tensor 'x' that the index maps to it"),
])
def test_a_sharded_index_is_refused_when_malformed(tmp_path, content, words):
    safetensors_file(tmp_path / "a.safetensors", {"w": F32}, VALUES.tobytes())
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps(content))
    assert refusal(index) == f"model.safetensors.index.json: {words}"


def test_an_index_over_100_mb_is_refused_before_it_is_read(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    with open(index, "wb") as out:  # sparse: no 100 MB are written
        out.write(b'{"weight_map": {}}')
        out.truncate(100_000_001)
    assert refusal(index) == "model.safetensors.index.json: index file is larger than 100 MB"


def test_an_index_that_is_not_json_is_refused_naming_the_index(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text('{"weight_map": {"w": "a.safetensors"')
    assert refusal(index) == ("model.safetensors.index.json: index is not valid JSON: Expecting ',' delimiter at "
                              "character 36")


def test_an_index_of_exactly_100_mb_is_read(tmp_path):
    """100 MB is within the limit: the index is read (and here refused for what it holds, not for its size)."""
    index = tmp_path / "model.safetensors.index.json"
    with open(index, "wb") as out:  # sparse: the rest reads as zero bytes
        out.write(b'{"weight_map": {}}')
        out.truncate(100_000_000)
    assert refusal(index) == "model.safetensors.index.json: index is not valid JSON: Extra data at character 18"


def test_pytorch_shards_open_as_one_store_by_their_own_bytes(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2, dtype=torch.int16)}, tmp_path / "p2.bin")
    index = tmp_path / "pytorch_model.bin.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 14}, "weight_map": {"a": "p1.bin", "b": "p2.bin"}}))
    with open_store(index) as store:
        assert (store.format, store.description) == ("pytorch", "PyTorch sharded")
        assert store.names == ["a", "b"] and store.metadata == {"total_size": "14"}
        assert store.read("a").tolist() == [0.0, 1.0, 2.0] and store.read("b").tolist() == [1, 1]


def test_a_safetensors_index_keeps_its_metadata_over_the_shards_and_adds_theirs(tmp_path):
    """An index may start with white space; a key both give is the index's, a key only a shard gives is kept."""
    safetensors_file(tmp_path / "s1.safetensors", {"a": F32, "__metadata__": {"only": "shard", "k": "shard"}},
                     VALUES.tobytes())
    index = tmp_path / "m.safetensors.index.json"
    index.write_text("\n  " + json.dumps({"metadata": {"k": "index"}, "weight_map": {"a": "s1.safetensors"}}))
    with open_store(index) as store:
        assert (store.format, store.version, store.description) == ("safetensors", "sharded", "SafeTensors sharded")
        assert store.metadata == {"k": "index", "only": "shard"}
        assert store.read("a").tobytes() == VALUES.tobytes()


def test_an_index_mixing_safetensors_and_pytorch_shards_is_refused_at_the_odd_shard(tmp_path):
    safetensors_file(tmp_path / "s1.safetensors", {"a": F32}, VALUES.tobytes())
    torch.save({"b": torch.ones(2)}, tmp_path / "p2.bin")
    index = tmp_path / "mix.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "s1.safetensors", "b": "p2.bin"}}))
    assert refusal(index).startswith("p2.bin: header claims ")


def test_an_index_nested_too_deep_for_the_parser_is_refused_with_its_depth(tmp_path):
    safetensors_file(tmp_path / "s1.safetensors", {"a": F32}, VALUES.tobytes())
    index = tmp_path / "deep.safetensors.index.json"
    index.write_text('{"weight_map": {"a": "s1.safetensors"}, "metadata": {"x": ' + "[" * 3000 + "]" * 3000 + "}}")
    assert refusal(index) == "deep.safetensors.index.json: index is nested deeper than 64 levels (3002 levels)"


def test_the_depth_of_a_too_deep_index_counts_brackets_outside_strings_only(tmp_path):
    safetensors_file(tmp_path / "s1.safetensors", {"a": F32}, VALUES.tobytes())
    index = tmp_path / "deep.safetensors.index.json"
    index.write_text('{"weight_map": {"a": "s1.safetensors"}, "metadata": {"s": "[[{{", "x": ' + "[" * 1000
                     + "]" * 1000 + ', "y": ' + "[" * 3000 + "]" * 3000 + "}}")
    assert refusal(index) == "deep.safetensors.index.json: index is nested deeper than 64 levels (3002 levels)"


def test_a_pytorch_shard_lacking_a_tensor_its_index_maps_is_refused_naming_both(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "p1.bin")
    torch.save({"b": torch.ones(2)}, tmp_path / "p2.bin")
    index = tmp_path / "pytorch_model.bin.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "p1.bin", "b": "p2.bin", "c": "p2.bin"}}))
    assert refusal(index) == "pytorch_model.bin.index.json: shard p2.bin lacks tensor 'c' that the index maps to it"
