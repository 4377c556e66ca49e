"""Engine calls off the UI thread: a ``TaskRunner`` starts them in a thread pool and calls back on the UI thread.

Worker threads only run plain engine functions; results, failures and cancellations come back as queued
signals to the runner (a QObject living on the UI thread), which then calls the caller's callbacks there.

QThreadPool threads are not started by ``threading``, so a trace hook set with ``threading.settrace``
(coverage, debuggers) never reaches them; each task installs that hook itself, as ``threading.Thread`` does.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from engine import StoreStudioError

Work = Callable[[Callable[[], bool]], Any]  # receives "has this been cancelled?" and returns a result


@dataclass(frozen=True)
class Failure:
    """Why a task failed: a message a user can act on, the traceback for bug reports, and the error."""

    message: str
    details: str
    error: BaseException


class _TaskSignals(QObject):
    done = Signal(object, object)  # task, result
    failed = Signal(object, object)  # task, Failure
    cancelled = Signal(object)  # task


class Task(QRunnable):
    """One engine call; ``cancel`` asks it to stop at its next check."""

    def __init__(self, work: Work) -> None:
        super().__init__()
        self.setAutoDelete(False)  # Python owns it: the runner drops it once its result is delivered
        self.signals = _TaskSignals()
        self._work: Work | None = work
        self._cancel = threading.Event()

    def cancel(self) -> None:
        self._cancel.set()

    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    def run(self) -> None:
        hook = threading.gettrace()
        if hook is not None and sys.gettrace() is None:
            sys.settrace(hook)  # traces the frames below, not this one
        self._run()

    def _run(self) -> None:
        work, self._work = self._work, None  # the runner keeps a task until its result is delivered: not what it used
        try:
            result = work(self.is_cancelled)
        except BaseException as exc:  # a worker must never take the process down
            if self.is_cancelled():
                self._report(self.signals.cancelled, self)
            else:
                message = str(exc) if isinstance(exc, StoreStudioError) else f"{type(exc).__name__}: {exc}"
                self._report(self.signals.failed, self, Failure(message, traceback.format_exc(), exc))
            return
        if self.is_cancelled():
            self._report(self.signals.cancelled, self)
        else:
            self._report(self.signals.done, self, result)

    @staticmethod
    def _report(signal: Any, *args: Any) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the window (and our signals object) went away while we worked: nobody to tell
            pass


@dataclass
class _Callbacks:
    done: Callable[[Any], None]
    failed: Callable[[Failure], None] | None
    cancelled: Callable[[], None] | None


class TaskRunner(QObject):
    """Starts tasks and tracks them; ``busy_changed`` drives busy indicators."""

    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None, pool: QThreadPool | None = None) -> None:
        super().__init__(parent)
        self._pool = pool or QThreadPool.globalInstance()
        self._active: dict[Task, _Callbacks] = {}

    @property
    def active(self) -> int:
        return len(self._active)

    def run(self, work: Work, done: Callable[[Any], None], failed: Callable[[Failure], None] | None = None,
            cancelled: Callable[[], None] | None = None) -> Task:
        task = Task(work)
        task.signals.done.connect(self._on_done)
        task.signals.failed.connect(self._on_failed)
        task.signals.cancelled.connect(self._on_cancelled)
        self._active[task] = _Callbacks(done, failed, cancelled)
        if len(self._active) == 1:
            self.busy_changed.emit(True)
        self._pool.start(task)
        return task

    def cancel_all(self) -> None:
        for task in self._active:
            task.cancel()

    def _finish(self, task: Task) -> _Callbacks | None:
        callbacks = self._active.pop(task, None)
        if callbacks is not None and not self._active:
            self.busy_changed.emit(False)
        return callbacks

    @Slot(object, object)
    def _on_done(self, task: Task, result: Any) -> None:
        callbacks = self._finish(task)
        if callbacks is not None:
            callbacks.done(result)

    @Slot(object, object)
    def _on_failed(self, task: Task, failure: Failure) -> None:
        callbacks = self._finish(task)
        if callbacks is not None and callbacks.failed is not None:
            callbacks.failed(failure)

    @Slot(object)
    def _on_cancelled(self, task: Task) -> None:
        callbacks = self._finish(task)
        if callbacks is not None and callbacks.cancelled is not None:
            callbacks.cancelled()


PROGRESS_INTERVAL = 0.1  # seconds between progress reports a worker sends to the UI thread


class ProgressRelay(QObject):
    """Carries a worker's ``(done, total)`` to the UI thread (a queued signal), a few times a second at most."""

    changed = Signal(object, object)  # object: byte counts pass 2 GiB

    def reporter(self, cancelled: Callable[[], bool]) -> Callable[[int, int], None]:
        """A progress callback for engine calls; it also stops those that take no cancel callback (``diff``)."""
        last = 0.0

        def report(done: int, total: int) -> None:
            nonlocal last
            if cancelled():
                raise InterruptedError("cancelled")
            now = time.monotonic()
            if done < total and now - last < PROGRESS_INTERVAL:
                return
            last = now
            try:
                self.changed.emit(done, total)
            except RuntimeError:  # the panel went away while the worker ran
                pass

        return report
