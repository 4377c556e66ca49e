"""Notice when an open file changes on disk (a training job saving over it) and offer to reload it.

The engine already refuses to read a changed file ("changed on disk since it was opened"); this
tells the user before they try: the tab's title says "(changed)" and a bar above the tree offers
Reload. It watches with QFileSystemWatcher and compares size, time and inode, so a touch that
changes nothing the store reads is not reported twice, and a file replaced by rename is re-watched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QFileSystemWatcher, QObject
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QTabWidget, QWidget

from engine import RemoteLocation
from gui.visual import AMBER

STALE_BAR = "staleBar"
STALE_SUFFIX = " (changed)"


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino


class StaleWatch(QObject):
    """Watches the files of each tab's store; ``reload(view)`` is called when the user asks for it."""

    def __init__(self, tabs: QTabWidget, reload: Callable[[QWidget], None]) -> None:
        super().__init__(tabs)
        self._tabs = tabs
        self._reload = reload
        self._seen: dict[QWidget, dict[Path, tuple[int, int, int] | None]] = {}
        self._watcher = QFileSystemWatcher(self)
        self._watcher.fileChanged.connect(self.check)

    def watch(self, view: QWidget) -> None:
        """Start watching ``view.store.files`` as they are now (remote files are checked on every read instead)."""
        files = [Path(f).absolute() for f in view.store.files  # type: ignore[attr-defined]
                 if not isinstance(f, RemoteLocation)]
        self._seen[view] = {f: _stamp(f) for f in files}
        if files:
            self._watcher.addPaths([str(f) for f in files])
        view.destroyed.connect(lambda *_: self._seen.pop(view, None))

    def is_stale(self, view: QWidget) -> bool:
        return view.findChild(QFrame, STALE_BAR) is not None

    def check(self, changed: str = "") -> None:
        """Mark every tab whose files differ from when they were opened (all tabs when ``changed`` is empty)."""
        for view, seen in list(self._seen.items()):
            if changed and Path(changed) not in seen:
                continue
            if any(_stamp(f) != stamp for f, stamp in seen.items()) and not self.is_stale(view):
                self._mark(view)
        if changed and Path(changed).exists() and changed not in self._watcher.files():
            self._watcher.addPath(changed)  # replaced by rename: the watch followed the old file away

    def _mark(self, view: QWidget) -> None:
        bar = QFrame(view)
        bar.setObjectName(STALE_BAR)
        amber = AMBER.getRgb()[:3]  # the theme's warning colour, faint behind the text, so both themes read it
        bar.setStyleSheet(f"QFrame#{STALE_BAR} {{ background: rgba({amber[0]}, {amber[1]}, {amber[2]}, 40); "
                          f"border-bottom: 1px solid {AMBER.name()}; }}")
        bar.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        row = QHBoxLayout(bar)
        row.setContentsMargins(8, 4, 8, 4)
        name = view.store.path.name  # type: ignore[attr-defined]
        row.addWidget(QLabel(f"{name} changed on disk since it was opened: this tab shows it as it was. "
                             "Reload to see the new contents."))
        row.addStretch(1)
        button = QPushButton("Reload")
        button.setObjectName("reloadButton")
        button.clicked.connect(lambda: self._reload(view))
        row.addWidget(button)
        view.layout().insertWidget(0, bar)
        index = self._tabs.indexOf(view)
        if index >= 0 and not self._tabs.tabText(index).endswith(STALE_SUFFIX):
            self._tabs.setTabText(index, self._tabs.tabText(index) + STALE_SUFFIX)
