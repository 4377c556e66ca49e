"""The screenshot path's wait (``gui.app._wait``) runs Qt's event loop for as long as a slow file needs.

It used to call ``QApplication.processEvents()`` every 10 ms; PySide6 6.12 drops a reference to ``None``
on each such call, so a wait of a few thousand polls (tens of seconds: a large file's statistics) killed
the interpreter with "deallocating None". These tests hold the wait to the event loop: ``None`` keeps its
references across hundreds of polls, events queued meanwhile are delivered, and a condition that never
holds gives up after the timeout, saying so.
"""

import sys

from PySide6.QtCore import QTimer

from gui.app import _wait


def test_a_long_wait_keeps_the_references_to_none(qapp):
    polls = []
    before = sys.getrefcount(None)
    assert _wait(lambda: polls.append(1) or len(polls) >= 300, timeout=60)
    assert len(polls) >= 300
    assert abs(sys.getrefcount(None) - before) < 50  # processEvents() in a loop lost one a poll: 300


def test_events_queued_during_the_wait_are_delivered(qapp):
    delivered = []
    QTimer.singleShot(30, lambda: delivered.append("late"))
    assert _wait(lambda: bool(delivered), timeout=60)
    assert delivered == ["late"]


def test_a_condition_that_never_holds_gives_up_after_the_timeout(qapp):
    polls = []
    assert _wait(lambda: polls.append(1) or False, timeout=0.2) is False
    assert polls  # it was asked, and asked again, before giving up
