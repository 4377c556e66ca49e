"""What the PyTorch reader says and reads at its edges, where a slip would misread or wrongly refuse a file: the
TorchScript note, the rebuild calls' argument counts, a checkpoint holding itself under an empty key, a numpy array
without its data, the walk's node count at the nesting limit and through a cycle, each tensor's file offset,
storages named by a torch dtype, how much of a bad storage reference a refusal prints, an empty tensor of the
largest size, and the unpickler's stack mark, key depth and hash counting.

Promises (README, "PyTorch files" and "Limits") -> tests:
- "A TorchScript archive says a TorchScript archive: read as data, its code/ never run ..." word for word
  -> test_a_torchscript_archive_says_so_word_for_word
- a forged pickle is refused in one line naming the file and what is wrong
  -> test_rebuild_tensor_v2_takes_6_to_7_arguments, test_ordered_dict_takes_one_argument,
  test_a_numpy_array_without_its_data_is_refused_naming_the_file,
  test_a_persistent_id_is_printed_up_to_120_characters, test_a_storage_reference_is_printed_up_to_120_characters
- a checkpoint that contains itself around a tensor is refused, naming where
  -> test_a_dict_holding_itself_under_an_empty_key_contains_itself_at_its_root
- a checkpoint that expands to too many objects is refused (each visit counted, a pointer back once)
  -> test_a_cycle_counts_once_in_the_node_budget, test_a_container_at_the_nesting_limit_counts_its_items
- each tensor's entry gives its absolute byte offset in the file when its bytes lie there as-is
  -> test_each_entry_gives_the_offset_of_its_bytes_in_the_file
- storages may name their element type by a torch dtype global -> test_a_storage_named_by_a_torch_dtype_reads
- an empty tensor must still fit an array: its other dims up to 2**59 elements
  -> test_an_empty_tensor_of_2_to_the_59_elements_per_row_reads
- the pickle interpreter refuses a stack underflow past a mark, counts a key's nesting in its dict, and counts
  equal hashes of non-text keys per hash -> test_an_item_under_a_mark_cannot_be_taken,
  test_a_deeply_nested_dict_key_counts_in_the_dicts_depth, test_a_text_key_set_many_times_is_no_flood,
  test_many_distinct_whole_number_keys_are_no_flood
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.helpers.pytorch_checkpoints import Storage, Tensor, zip_checkpoint

from engine.errors import FormatError
from engine.formats import open_store
from engine.formats.pytorch.checkpoint import flatten
from engine.formats.pytorch.unpickler import MAX_DEPTH, PickleStream, load
from tests.helpers.pytorch_pickle_builders import (
    EMPTY_HOOKS,
    STORAGE,
    call,
    checkpoint,
    op_global,
    plain,
)
from tests.refusals import refusal

V2 = op_global("torch._utils", "_rebuild_tensor_v2")


def unpickle(raw: bytes):
    return load(PickleStream.over_bytes("x.pt", raw))


# --- the note ------------------------------------------------------------------------------------

def test_a_torchscript_archive_says_so_word_for_word(tmp_path: Path) -> None:
    path = tmp_path / "scripted.pt"
    torch.jit.script(torch.nn.Linear(2, 3)).save(str(path))
    with open_store(path) as store:
        assert store.version == "TorchScript"
        assert store.note == ("a TorchScript archive: read as data, its code/ never run; "
                              "torch.load(weights_only=True) refuses it (torch.jit.load runs its code)")


# --- rebuild calls ---------------------------------------------------------------------------------

def test_rebuild_tensor_v2_takes_6_to_7_arguments(tmp_path: Path) -> None:
    base = (STORAGE, plain(0), plain((4,)), plain((1,)), plain(False), EMPTY_HOOKS)
    seven = checkpoint(tmp_path / "seven.pt", call(V2, *base, plain(None)))
    with open_store(seven) as store:
        assert store.read("tensor").tolist() == [1.0, 2.0, 3.0, 4.0]
    five = checkpoint(tmp_path / "five.pt", call(V2, *base[:5]))
    assert refusal(five).endswith(": _rebuild_tensor_v2 takes 6 to 7 arguments, got 5")
    assert refusal(five).startswith("five.pt: ")
    eight = checkpoint(tmp_path / "eight.pt", call(V2, *base, plain(None), plain(None)))
    assert refusal(eight).endswith(": _rebuild_tensor_v2 takes 6 to 7 arguments, got 8")


def test_ordered_dict_takes_one_argument(tmp_path: Path) -> None:
    ordered = op_global("collections", "OrderedDict")
    one = checkpoint(tmp_path / "one.pt", call(ordered, plain([("a", 1)])))
    with open_store(one) as store:
        assert store.values == {"a": 1}
    two = checkpoint(tmp_path / "two.pt", call(ordered, plain([("a", 1)]), plain([("b", 2)])))
    assert refusal(two).endswith(": OrderedDict takes 1 to 1 arguments, got 2")


# --- the walk --------------------------------------------------------------------------------------

def test_a_dict_holding_itself_under_an_empty_key_contains_itself_at_its_root(tmp_path: Path) -> None:
    looped: dict = {"w": Tensor(Storage("0", 4), 0, (4,), (1,))}
    looped[""] = looped
    path = zip_checkpoint(tmp_path / "loop.pt", looped, {"0": np.arange(4, dtype="<f4").tobytes()})
    assert refusal(path) == ("loop.pt: the checkpoint contains itself at its root: the tensors inside that loop would "
                             "have names without end")


def test_a_numpy_array_without_its_data_is_refused_naming_the_file(tmp_path: Path) -> None:
    """``numpy.core.multiarray._reconstruct`` without the BUILD that gives the array its state."""
    ops = call(op_global("numpy.core.multiarray", "_reconstruct"), op_global("numpy", "ndarray"), plain((0,)),
               plain(b"b"))
    path = checkpoint(tmp_path / "bare.pt", b"}" + plain("a") + ops + b"s")
    assert refusal(path) == "bare.pt: a numpy array in the checkpoint has no data"


def test_a_cycle_counts_once_in_the_node_budget() -> None:
    """[x] with x = [x]: the root, x, and x again inside itself (counted once, a pointer back, never followed)."""
    inner: list = []
    inner.append(inner)
    assert flatten("c.pt", [inner], max_nodes=3).values == [[{"$ref": "0"}]]
    with pytest.raises(FormatError) as caught:
        flatten("c.pt", [inner], max_nodes=2)
    assert str(caught.value) == ("c.pt: the checkpoint expands to 3 objects or more (the same objects referenced over "
                                 "and over), over the limit of 2 for a file of its size")


def test_a_container_at_the_nesting_limit_counts_its_items() -> None:
    """Lists nested MAX_DEPTH deep, the deepest holding two numbers: 100 lists, then the last and its two items."""
    root: list = [1, 2]
    for _ in range(MAX_DEPTH):
        root = [root]
    with pytest.raises(FormatError) as caught:
        flatten("n.pt", root, max_nodes=MAX_DEPTH + 1)
    assert str(caught.value) == ("n.pt: the checkpoint expands to 103 objects or more (the same objects referenced "
                                 "over and over), over the limit of 101 for a file of its size")
    with pytest.raises(FormatError) as caught:
        flatten("n.pt", root, max_nodes=103)
    assert str(caught.value) == "n.pt: the checkpoint is nested deeper than 100 levels"


# --- the store --------------------------------------------------------------------------------------

def test_each_entry_gives_the_offset_of_its_bytes_in_the_file(tmp_path: Path) -> None:
    first, second = np.arange(4, dtype="<f4") + 0.5, np.arange(6, dtype="<f4") + 100.25
    storage = Storage("1", 6)
    path = zip_checkpoint(tmp_path / "at.pt", {"a": Tensor(Storage("0", 4), 0, (4,), (1,)),
                                               "b": Tensor(storage, 2, (4,), (1,)),
                                               "t": Tensor(storage, 0, (2, 2), (1, 2))},
                          {"0": first.tobytes(), "1": second.tobytes()})
    raw = path.read_bytes()
    with open_store(path) as store:
        assert store.entry("a").offset == raw.index(first.tobytes())
        assert store.entry("b").offset == raw.index(second.tobytes()) + 2 * 4
        assert store.entry("t").offset is None  # a transposed view: its bytes are not as-is in the file
        assert store.read("b").tolist() == second[2:].tolist()


# --- tensors ----------------------------------------------------------------------------------------

def test_a_storage_named_by_a_torch_dtype_reads(tmp_path: Path) -> None:
    values = np.array([1.5, -2.0, 3.25], dtype="<f2")
    path = zip_checkpoint(tmp_path / "dtype.pt", {"h": Tensor(Storage("0", 3, torch.float16), 0, (3,), (1,))},
                          {"0": values.tobytes()})
    with open_store(path) as store:
        assert store.entry("h").dtype.name == "F16"
        assert store.read("h").tolist() == [1.5, -2.0, 3.25]


def pid_file(path: Path, pid_ops: bytes) -> Path:
    return checkpoint(path, b"}" + plain("w") + pid_ops + b"Qs")


def test_a_persistent_id_is_printed_up_to_120_characters(tmp_path: Path) -> None:
    pid = ("x" * 116,)  # repr: 121 characters, cut to 117 and "..."
    assert len(repr(pid)) == 121
    path = pid_file(tmp_path / "pid.pt", plain(pid))
    assert refusal(path).endswith(f": persistent id {repr(pid)[:117]}... is not a storage reference")
    short = ("y" * 115,)  # 120 characters: printed whole
    path = pid_file(tmp_path / "short.pt", plain(short))
    assert refusal(path).endswith(f": persistent id {short!r} is not a storage reference")


def test_a_storage_reference_is_printed_up_to_120_characters(tmp_path: Path) -> None:
    def reference(location: str) -> bytes:
        return (b"(" + plain("storage") + op_global("torch", "FloatStorage") + plain(1.5) + plain(location)
                + plain(4) + b"t")

    def text(location: str) -> str:
        return f"('storage', torch.FloatStorage, 1.5, {location!r}, 4)"

    long, short = "l" * (121 - len(text(""))), "s" * (120 - len(text("")))
    assert len(text(long)) == 121 and len(text(short)) == 120
    message = refusal(pid_file(tmp_path / "long.pt", reference(long)))
    assert message.endswith(f": storage reference {text(long)[:117]}... has an invalid key or location")
    message = refusal(pid_file(tmp_path / "short.pt", reference(short)))
    assert message.endswith(f": storage reference {text(short)} has an invalid key or location")


def test_an_empty_tensor_of_2_to_the_59_elements_per_row_reads(tmp_path: Path) -> None:
    path = zip_checkpoint(tmp_path / "empty.pt", {"e": Tensor(Storage("0", 0), 0, (0, 1 << 59), (1 << 59, 1))},
                          {"0": b""})
    with open_store(path) as store:
        assert store.entry("e").shape == (0, 1 << 59)
        assert store.read("e").shape == (0, 1 << 59)
    over = zip_checkpoint(tmp_path / "over.pt", {"e": Tensor(Storage("0", 0), 0, (0, (1 << 59) + 1),
                                                             ((1 << 59) + 1, 1))}, {"0": b""})
    assert refusal(over).endswith(f"a tensor of size [0, {(1 << 59) + 1}] is larger than any array can be")


# --- the interpreter ----------------------------------------------------------------------------------

@pytest.mark.parametrize("streamed", [False, True])
def test_an_item_under_a_mark_cannot_be_taken(streamed: bool) -> None:
    """TUPLE1 right after a MARK would take the item below the mark, in a pickle held whole (a zip's data.pkl)
    or read as it goes (the legacy and tar layouts)."""
    raw = b"\x80\x02K\x01(\x851."
    source = PickleStream("x.pt", lambda offset, n: raw[offset:offset + n], 0, len(raw), "the pickle") if streamed \
        else PickleStream.over_bytes("x.pt", raw)
    with pytest.raises(FormatError) as caught:
        load(source)
    assert str(caught.value) == "x.pt: the pickle is malformed (TUPLE1 at byte 5): stack underflow"


def test_a_deeply_nested_dict_key_counts_in_the_dicts_depth() -> None:
    key: object = 0
    for _ in range(MAX_DEPTH):
        key = (key,)
    with pytest.raises(FormatError) as caught:
        unpickle(pickle.dumps({key: 1}, protocol=2))
    assert str(caught.value) == ("x.pt: the pickle is nested deeper than 100 levels (a container 101 levels deep): "
                                 "no weights file nests so deep")


def test_a_text_key_set_many_times_is_no_flood() -> None:
    """The same text key set 200 times in one dict (SETITEM each time): text hashes are not counted."""
    raw = b"\x80\x02}" + b"X\x01\x00\x00\x00aK\x01s" * 200 + b"."
    assert unpickle(raw) == {"a": 1}


def test_many_distinct_whole_number_keys_are_no_flood() -> None:
    """200 whole-number keys, each set by its own SETITEM: each hash counted apart, none 65 times."""
    raw = b"\x80\x02}" + b"".join(b"M" + i.to_bytes(2, "little") + b"K\x01s" for i in range(200)) + b"."
    assert unpickle(raw) == dict.fromkeys(range(200), 1)
