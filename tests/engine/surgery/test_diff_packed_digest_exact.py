"""Diffing tensors whose values are not decoded compares their bytes (engine/surgery/diff.py ``_digest``, mutation
run, issue 25), on Burnpack files laid out as Burn writes them.

Promises (README, "Limits", "Command line") -> tests:
- quantized schemes Burn cannot decode are listed and copied, never read as values; a diff still tells identical
  from different by their bytes -> test_undecoded_quantized_tensors_compare_by_their_bytes
"""

from __future__ import annotations

import sys
from pathlib import Path

from engine import open_store
from engine.surgery.diff import diff

from tests.helpers.formats_quantized_files import f32, gen2, i8, write

E4M3 = {"QFloat": gen2("E4M3", store="Native")}  # float8 values: Burn's QuantizedBytes does not decode them
E5M2 = {"QFloat": gen2("E5M2", store="Native")}


def test_undecoded_quantized_tensors_compare_by_their_bytes(tmp_path: Path) -> None:
    one = i8(1, 2, 3, 4) + f32(1.0)
    a = write(tmp_path, {name: (E4M3, [4], one) for name in ("same", "changed", "scale", "kind")}, "a.bpk")
    b = write(tmp_path, {"same": (E4M3, [4], one), "changed": (E4M3, [4], i8(1, 2, 3, 5) + f32(1.0)),
                         "scale": (E4M3, [4], i8(1, 2, 3, 4) + f32(2.0)), "kind": (E5M2, [4], one)}, "b.bpk")
    with open_store(a) as sa, open_store(b) as sb:
        rows = {row.name: row for row in diff(sa, sb, values=True).tensors}
        assert {name: row.status for name, row in rows.items()} == {
            "same": "identical", "changed": "different", "scale": "different", "kind": "dtype_mismatch"}
        assert all(row.max_abs is None and row.allclose is None for row in rows.values())  # no values were read
        assert [row.status for row in diff(sa, sa, values=False).tensors] == ["identical"] * 4
