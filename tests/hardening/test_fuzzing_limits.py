"""The fuzz harness's per-case time limit counts CPU time: a case that waits (a loaded machine, a slow disk)
is not "slow"; a case that computes too long is."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import hard_fuzzing as fuzzing


@pytest.fixture
def case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(fuzzing, "TIME_LIMIT", 0.05)
    path = tmp_path / "case.bin"
    path.write_bytes(b"x")
    return path


def test_a_case_that_only_waits_is_not_slow(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzzing, "_exercise", lambda path: time.sleep(0.3) or "clean")
    assert fuzzing.check_input(case) == "clean"


def test_a_case_that_computes_past_the_limit_is_slow(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def busy(path: Path) -> str:
        start = time.process_time()
        while time.process_time() - start < 0.2:
            pass
        return "clean"

    monkeypatch.setattr(fuzzing, "_exercise", busy)
    with pytest.raises(fuzzing.InputFailure, match="of CPU time"):
        fuzzing.check_input(case)
