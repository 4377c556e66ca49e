"""What an open remote file keeps in memory (README "Remote files and the Hugging Face Hub", what is cached where:
"Each open remote file keeps up to 32 MiB of the ranges it read for its index and for values shown in memory ...;
bytes streamed by a conversion are never kept"): without it a tab kept open on a remote file would grow without
bound, or a conversion would hold the whole model in memory. A real HTTP server on loopback serves a SafeTensors file
of 1 MiB tensors; whether a read was kept is read from the server's request log.

Promise -> test:
- the ranges read are kept up to 32 MiB, the least recently read going first ->
  test_the_last_32_mib_read_are_kept_and_older_ranges_fetched_again (checked: a bound of 16 MiB and one of 64 MiB
  each fail it)
- bytes streamed by a conversion are not kept -> test_a_conversion_keeps_none_of_the_bytes_it_streamed (checked:
  streamed pieces remembered fails it)
"""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import save as save_safetensors

from engine import export, open_store

MiB = 1 << 20
TENSORS = {f"t{i:02}": np.full((512, 512), i, np.float32) for i in range(36)}  # 1 MiB each, 36 MiB in all


def requests_for(site, store, name: str) -> int:
    """How many requests reading ``name`` took (0: the bytes were kept)."""
    before = len(site.site.log)
    assert store.read(name)[0, 0] == int(name[1:])
    return len(site.site.log) - before


@pytest.mark.slow  # 36 MiB over loopback; engine/remote is not in the mutation run's set, nothing else is lost
def test_the_last_32_mib_read_are_kept_and_older_ranges_fetched_again(site):
    site.site.files["/m.safetensors"] = save_safetensors(TENSORS)
    with open_store(site.url("/m.safetensors")) as store:
        assert all(requests_for(site, store, name) == 1 for name in TENSORS)  # 36 MiB read, one range each
        recent = list(TENSORS)[-31:]  # 31 MiB: within the bound, whatever the header's block takes
        assert [requests_for(site, store, name) for name in reversed(recent)] == [0] * 31
        assert requests_for(site, store, "t00") == 1  # read first, 36 MiB ago: dropped


def test_a_conversion_keeps_none_of_the_bytes_it_streamed(site, tmp_path):
    site.site.files["/m.safetensors"] = save_safetensors({name: TENSORS[name] for name in list(TENSORS)[:8]})
    with open_store(site.url("/m.safetensors")) as store:
        export(store.entries, tmp_path / "m.bpk")
        assert all(requests_for(site, store, name) == 1 for name in ("t01", "t04", "t07"))
    with open_store(tmp_path / "m.bpk") as written:
        assert written.read("t07")[0, 0] == 7
