"""``diff --values`` on half-precision floats and infinities: the numbers the diff shows (README "diff": max and
mean absolute difference and allclose per pair; an infinity against the same infinity is equal) (issue 25: the
survivors of ``_Stats.add``) ->
- float16 and bfloat16 values differ by their exact difference (2048 - 1 is no float16), as numpy.allclose
  computes it in float32 -> ``test_half_floats_differ_by_their_exact_difference``
- an infinity against the same infinity differs by 0 -> ``test_an_infinity_against_itself_adds_nothing``
"""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

from engine import open_store
from engine.surgery.diff import diff


def _row(tmp_path, a: torch.Tensor, b: torch.Tensor):
    save_file({"w": a}, str(tmp_path / "a.safetensors"))
    save_file({"w": b}, str(tmp_path / "b.safetensors"))
    with open_store(tmp_path / "a.safetensors") as sa, open_store(tmp_path / "b.safetensors") as sb:
        (row,) = diff(sa, sb, values=True).tensors
    return row


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_floats_differ_by_their_exact_difference(tmp_path, dtype):
    a = torch.tensor([2048.0, 0.0], dtype=dtype)  # 2048 - 1 = 2047 is not a float16 (nor a bfloat16)
    b = torch.tensor([1.0, 0.0], dtype=dtype)
    row = _row(tmp_path, a, b)
    assert (row.status, row.max_abs, row.mean_abs, row.allclose) == ("different", 2047.0, 1023.5, False)


def test_an_infinity_against_itself_adds_nothing(tmp_path):
    inf = float("inf")
    row = _row(tmp_path, torch.tensor([inf, -inf, 1.0, 1.0]), torch.tensor([inf, -inf, 1.5, 1.0]))
    assert (row.status, row.max_abs, row.mean_abs, row.allclose) == ("different", 0.5, 0.125, False)
