"""A PyTorch checkpoint split over shards (``pytorch_model.bin.index.json``, engine/formats/sharded.py) as one
store: each tensor comes from the shard the index maps it to, and only those tensors are listed.

Promises (README "Formats", sharded checkpoints; the audit of issue 25):
- an index and its shards open as one model, each tensor read from the shard the index names ->
  here::test_only_the_tensors_the_index_maps_are_listed_each_from_its_own_shard
- a shard's non-tensor values are kept, under the shard's file name ->
  here::test_each_shards_values_are_kept_under_its_file_name
- what torch's safe loader would refuse is said of the whole model (README "PyTorch files": the note and the
  classes named) -> here::test_what_a_shards_reader_says_is_said_of_the_whole_model
- export streams every tensor in the chunks it asks for -> here::test_streaming_a_sharded_tensor_gives_chunks_of_the_size_asked
"""

from __future__ import annotations

import argparse
import fractions
import json
import os
import struct

import numpy as np
import pytest
import torch

from engine import FormatError, open_store


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
