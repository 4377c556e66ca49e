"""Promise: a store lives as long as its tab. Opening freezes a store's objects out of the collector's scans
(gui/loaded_store.py); closing the tab must give them back, or every closed file stays in memory."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "sample_cnn.pt"


def test_a_closed_tab_frees_its_store(window, open_view, qtbot) -> None:
    view = open_view(SAMPLE)
    store = weakref.ref(view.store)
    window.close_tab(window.tabs.indexOf(view))
    del view
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    qtbot.waitUntil(lambda: window.work.active == 0)  # a worker still reading the tab's store holds it
    gc.collect()
    assert store() is None
