"""Keys that are not text: named as burn-store's PytorchStore names them, or said to be a guess.

burn-store turns an integer dict key into its decimal text and refuses every other non-text key
(crates/burn-store/src/pytorch/pickle_reader.rs, ``get_dict_key``, at Burn's main 2c06be35).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.formats import open_store
from tests.helpers.pytorch_checkpoints import LAYOUTS, save


@pytest.mark.parametrize("layout", LAYOUTS)
def test_integer_keys_are_named_in_decimal_as_burn_store_does(tmp_path: Path, layout: str) -> None:
    """An optimizer's state keys parameters by int; negative and large ones too."""
    obj = {"state": {0: {"exp_avg": torch.ones(2)}, 12: {"exp_avg": torch.zeros(2)}}, -3: torch.ones(1),
           2**40: torch.ones(1)}
    with open_store(save(obj, tmp_path / f"ints_{layout}.pt", layout)) as store:
        assert store.names == ["state.0.exp_avg", "state.12.exp_avg", "-3", str(2**40)]
        assert store.guessed_keys == () and store.note is None


@pytest.mark.parametrize("layout", LAYOUTS)
def test_keys_burn_store_refuses_are_named_as_python_prints_them_and_said_so(tmp_path: Path, layout: str) -> None:
    obj = {"by_pair": {(1, "a"): torch.ones(2), 2.5: torch.zeros(1), True: torch.ones(1)},
           (0, 1): {"label": "no tensor here"}}
    with open_store(save(obj, tmp_path / f"tuples_{layout}.pt", layout)) as store:
        assert store.names == ["by_pair.(1, 'a')", "by_pair.2.5", "by_pair.True"]
        assert store.guessed_keys == ("by_pair.(1, 'a')", "by_pair.2.5", "by_pair.True")
        assert "3 keys naming tensors are neither text nor a whole number" in store.note
        assert "burn-store refuses such keys" in store.note
        assert store.values == {"(0, 1)": {"label": "no tensor here"}}
