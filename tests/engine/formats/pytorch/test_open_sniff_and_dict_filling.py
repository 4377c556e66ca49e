"""What the PyTorch reader's entry (``open``, ``sniff``) and the unpickler's SETITEMS/DICT filling promise, exactly:
which files are claimed as PyTorch, and dict keys counted against the nesting and hash-flood limits. Checkpoints are
written by real torch where torch writes the case; a text key set many times over is a pickle torch never writes,
built byte by byte.

Promises (README, "Limits": nesting counted as containers are built, 100 levels; at most 64 non-text dict keys with
the same hash in one container) -> tests:
- a dict filled by SETITEMS counts as one level above its deepest value, so a list holding it at level 101 is
  refused, one level less opens -> test_a_dict_filled_at_once_counts_its_depth_for_the_list_holding_it
- text keys are not counted for hash flooding: a key set 65 times over in one SETITEMS opens, its last value kept,
  as pickle keeps it -> test_a_text_key_set_65_times_in_one_setitems_opens_with_its_last_value
- equal hashes are counted per dict: two dicts of 64 keys of one hash open
  -> test_two_dicts_of_64_equal_hash_keys_each_open
- keys are counted per hash: an optimizer's state for 100 parameters (keyed 0 to 99) opens
  -> test_an_optimizer_state_keyed_by_100_parameter_numbers_opens
- a file of just a pickle's protocol header (two bytes) is read as the truncated pickle it is, not as an unknown
  format -> test_a_two_byte_pickle_header_is_refused_as_a_truncated_pickle
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine import open_store
from tests.helpers.pytorch_pickle_builders import checkpoint, plain, tensor_v2
from tests.refusals import refusal

SAME_HASH = 2**61 - 1  # Python hashes an int modulo this prime: every multiple hashes to 0


def nested(depth: int, leaf: object) -> object:
    """``leaf`` inside ``depth`` one-item lists."""
    for _ in range(depth):
        leaf = [leaf]
    return leaf


@pytest.mark.parametrize("depth, refused", [(97, False), (98, True)])
def test_a_dict_filled_at_once_counts_its_depth_for_the_list_holding_it(tmp_path: Path, depth: int,
                                                                        refused: bool) -> None:
    """The outer dict, a list, a two-key dict (torch writes it as one SETITEMS), then ``depth`` lists."""
    path = tmp_path / "deep.pt"
    torch.save({"w": torch.ones(2), "deep": [{"a": nested(depth, 0), "b": 0}]}, path)
    if refused:
        assert refusal(path) == ("deep.pt: data.pkl is nested deeper than 100 levels (a container 101 levels deep): "
                                 "no weights file nests so deep")
        return
    with open_store(path) as store:
        assert store.names == ["w"] and store.values["deep"] == [{"a": nested(depth, 0), "b": 0}]


def test_a_text_key_set_65_times_in_one_setitems_opens_with_its_last_value(tmp_path: Path) -> None:
    """``{"w": 0, "w": 1, ..., "w": 63, "w": <tensor>}`` in one MARK ... SETITEMS: 65 sets of one text key."""
    ops = b"}(" + b"".join(plain("w") + plain(i) for i in range(64)) + plain("w") + tensor_v2() + b"u"
    with open_store(checkpoint(tmp_path / "repeated.pt", ops)) as store:
        assert store.names == ["w"] and store.read("w").tolist() == [1.0, 2.0, 3.0, 4.0]


def test_two_dicts_of_64_equal_hash_keys_each_open(tmp_path: Path) -> None:
    path = tmp_path / "two.pt"
    keys = [i * SAME_HASH for i in range(64)]
    torch.save({"w": torch.ones(2), "a": dict.fromkeys(keys, 1), "b": dict.fromkeys(keys, 2)}, path)
    with open_store(path) as store:
        assert store.names == ["w"]
        assert store.values == {"a": {str(k): 1 for k in keys}, "b": {str(k): 2 for k in keys}}  # keys as text


def test_an_optimizer_state_keyed_by_100_parameter_numbers_opens(tmp_path: Path) -> None:
    """SGD with momentum keeps one buffer per parameter under the parameter's number: 100 distinct int keys."""
    params = [torch.nn.Parameter(torch.full((2,), float(i))) for i in range(100)]
    optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    sum(p.sum() * (i + 1) for i, p in enumerate(params)).backward()
    optimizer.step()
    path = tmp_path / "optimizer.pt"
    torch.save(optimizer.state_dict(), path)
    with open_store(path) as store:
        assert store.names == [f"state.{i}.momentum_buffer" for i in range(100)]
        assert store.read("state.99.momentum_buffer").tolist() == [100.0, 100.0]


def test_a_two_byte_pickle_header_is_refused_as_a_truncated_pickle(tmp_path: Path) -> None:
    path = tmp_path / "header-only"
    path.write_bytes(b"\x80\x02")
    assert refusal(path) == "header-only: the pickle is truncated: it needs 1 bytes at byte 2 but only 0 remain"
