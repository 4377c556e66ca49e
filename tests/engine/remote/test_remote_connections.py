"""Bounding every answer keeps what made remote reads cheap (else each range read would pay a new connection): an
answer read to its end gives its connection back for the next request (only one that goes on past what was asked
loses it, see tests/hardening/test_hostile_remote.py)."""

from __future__ import annotations

import numpy as np
from safetensors.numpy import save as save_safetensors

from engine import open_store

TENSORS = {f"w{i}": np.full((512, 512), i, np.float32) for i in range(8)}  # 1 MiB each: one request each


def test_range_answers_read_to_their_end_share_one_connection(site):
    site.site.files["/m.safetensors"] = save_safetensors(TENSORS)
    with open_store(site.url("/m.safetensors")) as store:
        for name, values in TENSORS.items():
            assert np.array_equal(store.read(name), values)
    assert len(site.site.log) == 1 + len(TENSORS)
    assert len({r.client_port for r in site.site.log}) == 1

