"""A fixed-seed slice of the mutation fuzzer: every reader survives a few hundred hostile variants of real files.

``python tests/hardening/fuzz.py --long SECONDS`` runs the same harness for as long as asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers.hard_fuzzing import FORMATS, Worker, fuzz

SEED = 20260522
CASES = {"bpk": 2500, "safetensors": 5000, "pt-zip": 3000, "pt-legacy": 1200, "pt-tar": 3000}  # ~5 s each


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    with Worker() as running:
        yield running


@pytest.mark.parametrize("name", list(FORMATS))
def test_mutated_files_open_cleanly_or_raise_format_error(name: str, worker: Worker, tmp_path: Path) -> None:
    campaign = fuzz(FORMATS[name], worker, tmp_path, seed=SEED, cases=CASES[name])
    found = "\n\n".join(f"{sig}:\n{campaign.details[sig]}" for sig in campaign.failures)
    assert not campaign.failures, f"replay with seed {SEED}; findings:\n{found}"
    assert campaign.refused < campaign.cases, "every case was refused: the mutations never reach the deep paths"
