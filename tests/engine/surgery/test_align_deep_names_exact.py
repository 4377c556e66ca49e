"""The closest names suggested for a missing one, however many segments it has, and a missing name with none
(issue 25: ``closest_names``' mutants that turn difflib's "autojunk" on, which only acts on a name of 200
segments or more; ``AlignmentReport.lines``' for a missing name without a close one).

Promises (README "--template": a missing name is listed "with the closest unused names") -> tests:
- a wanted name of 200 repeated segments still gets the spare name sharing them as its closest
  -> ``test_a_name_of_two_hundred_repeated_segments_still_gets_its_closest``
- a missing name with no spare name alike is listed alone -> ``test_a_missing_name_without_a_close_one_is_listed_alone``
"""

from __future__ import annotations

import numpy as np
from safetensors.numpy import save_file

from engine import open_store
from engine.surgery.align import align

# a Sequential nested 200 deep: difflib's autojunk would drop "block" (more than 1% of the segments) as noise,
# and with the first and last segments differing nothing would be left to match
WANTED = "x." + "block." * 200 + "weight"
SPARE = "y." + "block." * 199 + "bias"


def test_a_name_of_two_hundred_repeated_segments_still_gets_its_closest(tmp_path):
    save_file({SPARE: np.ones(2, np.float32)}, str(tmp_path / "source.safetensors"))
    save_file({WANTED: np.ones(2, np.float32)}, str(tmp_path / "template.safetensors"))
    with open_store(tmp_path / "source.safetensors") as source, open_store(tmp_path / "template.safetensors") as template:
        report = align(source, template)
    assert report.suggestions == {WANTED: [SPARE]}
    assert report.lines()[1] == f"  missing {WANTED} (closest: {SPARE})"


def test_a_missing_name_without_a_close_one_is_listed_alone(tmp_path):
    save_file({"head.bias": np.ones(2, np.float32)}, str(tmp_path / "source.safetensors"))
    save_file({"encoder.weight": np.ones(2, np.float32)}, str(tmp_path / "template.safetensors"))
    with open_store(tmp_path / "source.safetensors") as source, open_store(tmp_path / "template.safetensors") as template:
        report = align(source, template)
    assert report.lines() == ["applied 0, missing 1, unused 1, shape mismatches 0, dtype differences 0",
                              "  missing encoder.weight", "  unused head.bias"]
