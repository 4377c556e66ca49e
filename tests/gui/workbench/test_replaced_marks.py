"""A tensor a later source replaces is marked "replaced" in the earlier source's tree (README, "The workbench":
later sources override earlier ones), whatever colons its name or its file's name hold: the mark comes from
the plan's data (``Override.replaced_source``/``replaced_name``), not from splitting ``source:name`` text.
"""

import numpy as np
import pytest

from engine import ArrayStore
from engine.surgery import plan
from gui.workbench.marks import DROPPED, plan_marks


@pytest.mark.parametrize("name", ["w", "blocks:0.weight", "a:b:c"])
def test_the_earlier_sources_tensor_is_marked_replaced_by_the_later_one(name):
    first = ArrayStore({name: np.zeros(2, np.float32), "kept": np.zeros(1, np.float32)}, name="C:first.safetensors")
    second = ArrayStore({name: np.ones(2, np.float32)}, name="second.safetensors")
    result = plan([first, second])
    (override,) = result.overrides
    assert (override.replaced_source, override.replaced_name) == (str(first.path), name)

    marks = plan_marks(result, first)
    assert (marks[name].state, marks[name].word) == (DROPPED, "replaced")
    assert marks[name].reason == f"replaced by second.safetensors:{name}"
    assert "kept" not in marks
    assert name not in plan_marks(result, second)  # the kept one is no replaced tensor
