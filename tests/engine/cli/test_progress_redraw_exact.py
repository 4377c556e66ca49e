"""The progress line's redraw limit at its edge (issue 25: a mutant that moved the edge survived).

Promises (README "Command line": the progress line is redrawn in place at most ten times a second) -> tests:
- a redraw a tenth of a second after the last one is drawn, one sooner is not, the last state always is
  -> ``test_a_redraw_waits_a_tenth_of_a_second_except_for_the_last_state``
"""

from __future__ import annotations

import io

from engine.cli.progress import ERASE, REDRAW_EVERY, ProgressLine


def test_a_redraw_waits_a_tenth_of_a_second_except_for_the_last_state():
    stream, now = io.StringIO(), [0.0]
    progress = ProgressLine("w", stream, clock=lambda: now[0])
    progress(1, 4)
    now[0] = 0.05
    progress(2, 4)  # sooner than a tenth: skipped
    now[0] = REDRAW_EVERY
    progress(3, 4)  # exactly a tenth after the first: drawn
    progress(4, 4)  # the last state: drawn at once
    assert [text.split("  ")[1] for text in stream.getvalue().split(ERASE)[1:]] == [
        "1 B of 4 B (25%)", "3 B of 4 B (75%)", "4 B of 4 B (100%)"]
