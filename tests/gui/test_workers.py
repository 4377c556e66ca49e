"""Workers: a task cancelled while it runs never delivers its result, and a failure arrives as one."""

from __future__ import annotations

import threading

from PySide6.QtCore import QThreadPool

from engine.errors import FormatError
from gui.workers import TaskRunner


def test_a_task_cancelled_while_running_reports_cancelled_and_never_its_result(qapp, qtbot):
    runner = TaskRunner()
    started, release = threading.Event(), threading.Event()
    outcomes = []

    def work(cancelled):
        started.set()
        assert release.wait(60)
        return "stale result"  # this work never looks at cancelled(): the runner must

    task = runner.run(work, outcomes.append, cancelled=lambda: outcomes.append("cancelled"))
    assert started.wait(60) and runner.active == 1
    task.cancel()
    release.set()
    qtbot.waitUntil(lambda: runner.active == 0, timeout=30_000)
    assert outcomes == ["cancelled"]


def test_a_failing_task_reports_the_engine_message_and_the_busy_state_follows(qapp, qtbot):
    runner = TaskRunner()
    busy, failures = [], []
    runner.busy_changed.connect(busy.append)

    def work(cancelled):
        raise FormatError("x.pt", "the pickle is truncated")

    runner.run(work, lambda result: failures.append(("done", result)), failures.append)
    qtbot.waitUntil(lambda: runner.active == 0, timeout=30_000)
    QThreadPool.globalInstance().waitForDone(60_000)
    [failure] = failures
    assert failure.message == "x.pt: the pickle is truncated"
    assert isinstance(failure.error, FormatError) and "Traceback" in failure.details
    assert busy == [True, False]


def test_a_threading_trace_hook_reaches_the_work_on_pool_threads(qapp, qtbot):
    """Coverage (and debuggers) trace new threads through threading.settrace; Qt's pool threads get it too."""
    seen = []

    def hook(frame, event, arg):
        if frame.f_code.co_name == "traced_work":
            seen.append(threading.get_ident())
        return None

    def traced_work(cancelled):
        return threading.get_ident()

    previous = threading.gettrace()
    pool = QThreadPool()
    runner, results = TaskRunner(pool=pool), []
    threading.settrace(hook)
    try:
        runner.run(traced_work, results.append)
        qtbot.waitUntil(lambda: bool(results), timeout=30_000)
    finally:
        threading.settrace(previous)
        pool.waitForDone(60_000)
    assert results[0] != threading.get_ident() and seen == results
