"""The longest name a folder allows is still exported on every machine: the partial file beside it (shortened
``.NAME.``, the pid, 8 random hex digits, ``.partial``) fits the folder's name limit even when the pid has
Linux's most digits, seven (pid_max is at most 2**22: PID_MAX_LIMIT, include/linux/threads.h).

Promise (README "Export": exports are atomic, a partial file beside the destination, renamed into place) -> test:
- a destination name of the folder's full length exports, its partial file using exactly that length ->
  here::test_the_longest_name_exports_when_the_pid_has_seven_digits
"""

from __future__ import annotations

import os

import numpy as np

from engine import ArrayStore, export, open_store
from engine.exporting import PARTIAL

LARGEST_PID = 2**22 - 1  # the largest pid Linux can give (pid_max's upper bound is 2**22)


def test_the_longest_name_exports_when_the_pid_has_seven_digits(tmp_path, monkeypatch):
    longest = os.pathconf(tmp_path, "PC_NAME_MAX")
    name = "m" * (longest - len(".bpk")) + ".bpk"
    seen: list[str] = []

    def progress(done: int, total: int) -> None:  # while writing, the partial file is in the folder
        seen.extend(p.name for p in tmp_path.iterdir())

    with monkeypatch.context() as m:
        m.setattr(os, "getpid", lambda: LARGEST_PID)  # this machine's pids have 5 digits; another's have 7
        export(ArrayStore({"w": np.arange(4, dtype=np.float32)}).entries, tmp_path / name, progress=progress)
    partial = seen[0]
    assert partial.startswith(f".{name[:longest - len(f'..{LARGEST_PID}-00000000{PARTIAL}')]}.{LARGEST_PID}-")
    assert partial.endswith(PARTIAL) and len(partial) == longest
    assert [p.name for p in tmp_path.iterdir()] == [name]
    with open_store(tmp_path / name) as store:
        assert store.read("w").tolist() == [0.0, 1.0, 2.0, 3.0]
