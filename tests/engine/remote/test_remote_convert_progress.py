"""`convert URL` draws the same progress line as a local conversion (README "Remote files and the Hugging Face Hub":
"`convert URL out.bpk` writes the same bytes as converting the downloaded file ... with the same progress line
(bytes, rate, time left)"): without it a slow download would look hung. A real HTTP server on loopback serves the
file; stderr is a real pty.

Promise -> test:
- a conversion from an address draws the progress line on a terminal, names the output and ends in `wrote OUT`,
  and writes the bytes the downloaded file converts to ->
  test_converting_an_address_draws_the_progress_line_on_a_terminal (checked: a remote conversion without a
  progress line fails it)
"""

from __future__ import annotations


import numpy as np
from safetensors.numpy import save as save_safetensors

from engine.cli.progress import ERASE

from tests.terminals import cli_on_a_terminal

ARRAYS = {f"w{i}": np.full((256, 256), i, np.float32) for i in range(4)}


def test_converting_an_address_draws_the_progress_line_on_a_terminal(site, tmp_path, monkeypatch):
    site.site.files["/m.safetensors"] = save_safetensors(ARRAYS)
    (tmp_path / "m.safetensors").write_bytes(site.site.files["/m.safetensors"])
    out = tmp_path / "out.bpk"
    terminal = cli_on_a_terminal(monkeypatch, ["convert", site.url("/m.safetensors"), str(out)])
    assert f"{ERASE}writing out.bpk  " in terminal
    assert " of 1 MiB (" in terminal and " (100%)  " in terminal and "/s" in terminal
    assert terminal.rstrip().endswith(f"{ERASE}wrote {out}")
    local = tmp_path / "local.bpk"
    cli_on_a_terminal(monkeypatch, ["convert", str(tmp_path / "m.safetensors"), str(local), "-q"])
    assert out.read_bytes() == local.read_bytes()
