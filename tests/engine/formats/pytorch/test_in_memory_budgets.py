"""The unpickler's budgets hold on the zip layout's in-memory fast paths (APPENDS, SETITEMS, TUPLE and
the memo opcodes run there by index) and through loops the walk now reads: each hostile data.pkl is refused in one
line, within the hardening limits (300 MiB, 2 s of CPU), measured in a child process.

Promises (README, "Limits": nesting, hash flooding, shared references and loops, time) -> tests:
- nesting built by APPENDS, SETITEMS or TUPLE is counted as it is built, whatever its depth
  -> test_a_hostile_data_pkl_is_refused_in_one_line_within_limits[nesting-*]
- integer keys that all hash alike are refused before a dict scans them -> [...-hash-flooding-*]
- objects that all point at each other cannot make a small file walk for ever -> [...-loops-*]
"""

from __future__ import annotations

import re
import struct
import zipfile
from pathlib import Path

import pytest
from tests.helpers import hard_child as child
from tests.helpers.hard_hostile_files import PROTO, _text, colliding_int_keys, deep_tuple_key


def nested_by_appends(depth: int) -> bytes:
    """Lists ``depth`` deep, each filled by one APPENDS (the in-memory loop's list fast path)."""
    return PROTO + b"](" * (depth - 1) + b"]" + b"e" * (depth - 1) + b"."


def nested_by_setitems(depth: int) -> bytes:
    """Dicts ``depth`` deep, each filled by one SETITEMS with a text key (the dict fast path)."""
    return PROTO + (b"}(" + _text("k")) * (depth - 1) + b"}" + b"u" * (depth - 1) + b"."


def nested_by_tuple(depth: int) -> bytes:
    """Tuples ``depth`` deep, each built by MARK ... TUPLE."""
    return PROTO + b"(" * depth + b"K\x00" + b"t" * depth + b"."


def everyone_knows_everyone(count: int) -> bytes:
    """``count`` dicts, each holding every one of them (memo references): a small pickle whose paths never end,
    as loops of config objects pointing at their parents and siblings could be made."""
    made = b"".join(b"}r" + struct.pack("<I", i) + b"0" for i in range(count))  # EMPTY_DICT, LONG_BINPUT, POP
    filled = b"".join(b"j" + struct.pack("<I", i) + b"(" + b"".join(_text(f"n{j}") + b"j" + struct.pack("<I", j)
                                                                     for j in range(count)) + b"u0"
                      for i in range(count))
    return PROTO + made + filled + b"j\x00\x00\x00\x00."


# The unpickler's own refusal, as the container is built (the walk's says "the checkpoint is nested deeper").
BUILT_TOO_DEEP = r"data\.pkl is nested deeper than 100 levels \(a container 101 levels deep\)"
CASES = [
    *[(f"nesting-appends-{d}", lambda d=d: nested_by_appends(d), BUILT_TOO_DEEP)
      for d in (101, 300_000)],
    *[(f"nesting-setitems-{d}", lambda d=d: nested_by_setitems(d), BUILT_TOO_DEEP)
      for d in (101, 100_000)],
    *[(f"nesting-tuple-{d}", lambda d=d: nested_by_tuple(d), BUILT_TOO_DEEP)
      for d in (101, 300_000)],
    ("nesting-tuple-key-150000", lambda: deep_tuple_key(150_000), BUILT_TOO_DEEP),
    *[(f"hash-flooding-int-keys-{n}", lambda n=n: colliding_int_keys(n), r"with the same hash")
      for n in (1_000, 80_000)],
    *[(f"loops-{n}", lambda n=n: everyone_knows_everyone(n), r"expands to \d+ objects or more")
      for n in (12, 90)],  # 90: each dict's depth is counted from those filled before it, 91 at most
]


@pytest.mark.child
@pytest.mark.parametrize(("make", "refuses"), [pytest.param(make, refuses, id=label) for label, make, refuses in CASES])
def test_a_hostile_data_pkl_is_refused_in_one_line_within_limits(tmp_path: Path, make, refuses: str) -> None:
    path = tmp_path / "hostile.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("hostile/data.pkl", make())
        archive.writestr("hostile/byteorder", "little")
    assert path.stat().st_size < 2 << 20
    run = child.cli("inspect", path)
    lines = run.output.strip().splitlines()
    assert run.status == 1 and len(lines) == 1, run.describe()
    assert lines[0].startswith("store-studio: hostile.pt: ") and re.search(refuses, lines[0]), run.describe()
    assert run.within_limits(), run.describe()
