"""A SafeTensors sharded checkpoint whose later shard is too short to hold its header's length, exactly (mutation
run, issue 25): engine/formats/safetensors.py's ``_open_index`` reads each shard's first bytes once, and a shard of
fewer than 8 bytes is refused in the reader's words, naming that shard.

Promise (README, "Formats": SafeTensors, sharded too; bad input is one line naming the file) -> test:
- a shard shorter than the 8-byte header length is refused as truncated, naming the shard
  -> test_a_shard_shorter_than_its_header_length_is_refused_naming_it
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from engine import open_store
from engine.errors import FormatError


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
