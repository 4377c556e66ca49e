"""Every class of hostile file ends in one clean line, within the issue's limits: exit 1 from the
command line, no traceback, at most 300 MiB of peak memory and 2 s of CPU, measured in a child.

The inputs come from ``hostile.CATALOGUE``: several sizes of each attack, generated here."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import child  # noqa: E402
from hostile import CATALOGUE  # noqa: E402

CASES = [pytest.param(build, refuses, id=f"{kind}-{label}") for kind, label, build, refuses in CATALOGUE]


@pytest.mark.parametrize("build, refuses", CASES)
def test_hostile_file_converts_or_is_refused_in_one_line_within_limits(build, refuses, tmp_path: Path) -> None:
    source = build(tmp_path)
    assert source.stat().st_size < 10 << 20  # the issue's inputs are under 2 MiB; the aliases' shard is 8 MiB
    out = tmp_path / "out.safetensors"
    run = child.cli("convert", source, out)
    assert "Traceback" not in run.output, run.describe()
    if refuses is None:
        assert run.status == 0, run.describe()
        assert out.stat().st_size > 0
    else:
        assert run.status == 1, run.describe()
        lines = run.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"store-studio: {source.name}: "), run.describe()
        assert re.search(refuses, lines[0]), run.describe()
        assert not out.exists() and not list(tmp_path.glob(".*.partial"))
    assert run.within_limits(), run.describe()
